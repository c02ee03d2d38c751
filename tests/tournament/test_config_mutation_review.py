"""Tests from a mutation review of a tournament's configuration (``arena.tournament.config``):
the defaults, every bound of every setting (accepted at the bound, refused one step past it,
the error naming the setting and the value), the checks between settings, per-bot time
controls, paths relative to the file, flags over the file, ``kryt tournament set``'s
``KEY=VALUE`` and which settings it may change.

Each test pins a behaviour that a small change of the code (a bound off by one, a default
changed, a check dropped, a key misspelt) altered without any earlier test noticing. The
expected values come from docs/configuration.md (its settings table and "Time controls"),
docs/games-format.md ("Deal books") and examples/tournament.toml, never from running the code.
All in process, no database, no bot started: the file runs in well under a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arena.tournament.config import (
    ConfigError,
    SandboxSettings,
    TournamentConfig,
    load_config,
    parse_assignment,
    settable_keys,
    with_changes,
)
from referee.protocol.messages import TimeControl
from referee.series import SeriesFormat

MiB = 1024 * 1024
"""The unit of the ``*_mb`` settings: "memory per bot (MiB)"."""

DECK = (
    "9D TD AC KH TS KD AH JC 7C QS 6H 8S 7D QH 9C 6S JD 8C "
    "TC 9S QC 6D KC AD 8H JS 7H 8D KS AS 9H TH JH 6C QD 7S"
)
"""The first deck of docs/games-format.md's example deal book."""


def _file(tmp_path: Path, text: str, name: str = "t.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _two(**settings: Any) -> TournamentConfig:
    """A configuration of the bots ``a`` and ``b`` with ``settings`` given as flags."""
    return load_config(None, bots=["a", "b"], **settings)


# ---------------------------------------------------------------------------- defaults


def test_every_default_is_the_documented_one() -> None:
    """The "default" column of docs/configuration.md's settings table."""
    config = _two()
    assert config.name == "tournament"
    assert config.games_per_pair == 10
    assert config.format is SeriesFormat.STANDARD
    assert config.seed is None  # secret, random: drawn when the tournament is created
    assert config.concurrency == 2
    assert config.turn_limit == 1000
    assert config.ruleset == "default" and config.table_size == 2
    assert config.gauntlet is None and config.bot_time == () and config.book == ()
    control = config.time_control
    assert (control.move_seconds, control.bank_seconds) == (1.0, 10.0)
    assert (control.grace_seconds, control.clock, control.increment_seconds) == (0.05, "wall", 0)
    sandbox = config.sandbox
    assert sandbox.backend == "auto" and sandbox.allow_unsafe is False
    assert (sandbox.memory_mb, sandbox.pids, sandbox.cpus, sandbox.nofile) == (256, 64, 1.0, 256)
    assert (sandbox.tmpfs_mb, sandbox.fsize_mb, sandbox.startup_seconds) == (16, 8, 15)


def test_the_mb_settings_are_mebibytes() -> None:
    """``memory_mb``, ``tmpfs_mb`` and ``fsize_mb`` are MiB: 1024 * 1024 bytes each."""
    limits = SandboxSettings(memory_mb=300, tmpfs_mb=3, fsize_mb=5).limits()
    assert limits.memory_bytes == 300 * MiB
    assert limits.tmpfs_bytes == 3 * MiB and limits.fsize_bytes == 5 * MiB
    assert limits.pids == 64 and limits.nofile == 256 and limits.cpus == 1.0
    assert limits.startup_timeout == 15


# ---------------------------------------------------------------------------- bounds

WHOLE_BOUNDS = [
    # (file section or "", key, lowest allowed, highest allowed), from the "allowed" column
    ("", "games_per_pair", 1, 1_000_000),
    ("", "concurrency", 1, 1024),
    ("", "turn_limit", 1, 100_000),
    ("sandbox", "memory_mb", 32, 65_536),
    ("sandbox", "pids", 8, 32_768),
    ("sandbox", "nofile", 16, 1_048_576),
    ("sandbox", "tmpfs_mb", 1, 65_536),
    ("sandbox", "fsize_mb", 1, 65_536),
]
NUMBER_BOUNDS = [
    ("time_control", "move_seconds", 0.001, 3600.0),
    ("time_control", "bank_seconds", 0.0, 86_400.0),
    ("time_control", "grace_seconds", 0.0, 600.0),
    ("time_control", "increment_seconds", 0.0, 3600.0),
    ("sandbox", "cpus", 0.01, 1024.0),
    ("sandbox", "startup_seconds", 0.1, 600.0),
]


def _setting_file(tmp_path: Path, section: str, key: str, value: object) -> Path:
    text = 'bots = ["a", "b"]\n'
    text += f"[{section}]\n" if section else ""
    text += f"{key} = {value!r}\n".replace("True", "true")
    return _file(tmp_path, text)


def _value(config: TournamentConfig, section: str, key: str) -> Any:
    holder = {"": config, "sandbox": config.sandbox, "time_control": config.time_control}
    return getattr(holder[section], key)


@pytest.mark.parametrize(
    ("section", "key", "low", "high"), WHOLE_BOUNDS, ids=[b[1] for b in WHOLE_BOUNDS]
)
def test_a_whole_number_setting_takes_its_bounds_and_nothing_past_them(
    tmp_path: Path, section: str, key: str, low: int, high: int
) -> None:
    """Accepted at both ends of its documented range; one past either end, a bool or a
    fraction is one error naming the setting and the value given."""
    for good in (low, high):
        config = load_config(_setting_file(tmp_path, section, key, good))
        assert _value(config, section, key) == good
    for bad in (low - 1, high + 1, True, low + 0.5):
        with pytest.raises(ConfigError) as caught:
            load_config(_setting_file(tmp_path, section, key, bad))
        message = str(caught.value)
        assert key in message and f"got {bad!r}" in message, message


@pytest.mark.parametrize(
    ("section", "key", "low", "high"), NUMBER_BOUNDS, ids=[b[1] for b in NUMBER_BOUNDS]
)
def test_a_number_setting_takes_its_bounds_and_nothing_past_them(
    tmp_path: Path, section: str, key: str, low: float, high: float
) -> None:
    """Numbers (in seconds, or CPUs): both ends accepted; a little past either end, a bool,
    NaN or an infinity refused naming the setting."""
    for good in (low, high):
        config = load_config(_setting_file(tmp_path, section, key, good))
        assert _value(config, section, key) == good
    for bad in (low - 0.001 if low else -0.001, high + 1, "nan", "inf", True):
        path = _setting_file(tmp_path, section, key, bad)
        if isinstance(bad, str):  # TOML's own spelling of NaN and infinity, unquoted
            path.write_text(path.read_text().replace(f"'{bad}'", bad))
        with pytest.raises(ConfigError, match=key):
            load_config(path)


def test_a_name_of_200_characters_is_accepted_and_201_refused() -> None:
    assert _two(name="n" * 200).name == "n" * 200
    with pytest.raises(ConfigError, match="200 characters"):
        _two(name="n" * 201)


def test_a_name_with_a_control_character_is_refused() -> None:
    """Shown on the leaderboard and in every line: "printable text (no control characters)"."""
    with pytest.raises(ConfigError, match="printable"):
        _two(name="spring\x1b[31mcup")


def test_from_2_to_1000_bots() -> None:
    many = [f"bot{i}" for i in range(1001)]
    assert len(load_config(None, bots=many[:1000]).bots) == 1000
    with pytest.raises(ConfigError, match="at most 1000 bots, got 1001"):
        load_config(None, bots=many)
    with pytest.raises(ConfigError, match="at least two bots, got 1"):
        load_config(None, bots=many[:1])


def test_a_seed_is_a_whole_number_from_0_to_2_62_minus_1() -> None:
    assert _two(seed=0).seed == 0
    assert _two(seed=2**62 - 1).seed == 2**62 - 1
    for bad in (2**62, -1):
        with pytest.raises(ConfigError, match=f"seed .*got {bad}"):
            _two(seed=bad)


def test_an_out_of_range_value_is_named_in_its_error() -> None:
    """configuration.md: "A bad setting is one error: line (naming the setting and the
    value ...)"."""
    with pytest.raises(ConfigError, match=r"concurrency.*got 1025"):
        _two(concurrency=1025)
    with pytest.raises(ConfigError, match=r"unknown ruleset 'checkers'"):
        _two(ruleset="checkers")
    with pytest.raises(ConfigError, match=r"\[time_control\] must be a table, got 5"):
        TournamentConfig.from_json({"bots": ["a", "b"], "time_control": 5})


def test_only_the_four_backends_are_accepted() -> None:
    for backend in ("auto", "docker", "bwrap", "process"):
        assert _two(backend=backend).sandbox.backend == backend
    with pytest.raises(ConfigError, match="'vm'"):
        _two(backend="vm")


# ---------------------------------------------------------------------------- between settings


def test_the_classic_ruleset_plays_the_standard_format_only() -> None:
    assert _two(ruleset="classic", format="standard").ruleset == "classic"
    with pytest.raises(ConfigError, match="standard format only"):
        _two(ruleset="classic", format="duplicate")


def test_a_deal_book_at_a_classic_table_is_refused_as_such(tmp_path: Path) -> None:
    """configuration.md: "two-player game only: a book with ruleset = "classic" is refused
    as such"."""
    book = _file(tmp_path, DECK + "\n", "book.txt")
    with pytest.raises(ConfigError, match="two-player game"):
        _two(ruleset="classic", book=str(book))


def test_a_deal_book_implies_the_duplicate_format_and_refuses_standard(tmp_path: Path) -> None:
    book = _file(tmp_path, DECK + "\n", "book.txt")
    config = _two(book=str(book))
    assert config.format is SeriesFormat.DUPLICATE and config.book == (tuple(DECK.split()),)
    with pytest.raises(ConfigError, match="duplicate"):
        _two(book=str(book), format="standard")


def test_a_table_as_large_as_the_field_is_enough() -> None:
    """A table of 3 needs at least 3 bots: exactly 3 will do."""
    config = load_config(None, bots=["a", "b", "c"], ruleset="classic", table_size=3)
    assert config.table_size == 3
    with pytest.raises(ConfigError, match="at least 4 bots, got 3"):
        load_config(None, bots=["a", "b", "c"], ruleset="classic", table_size=4)


def test_the_gauntlet_bot_joins_the_bots_listed_first() -> None:
    """configuration.md: "It joins bots (listed first) if it is not there"."""
    assert _two(gauntlet="mine").bots == ("mine", "a", "b")
    assert _two(gauntlet="b").bots == ("a", "b")


# ---------------------------------------------------------------------------- time controls


def test_an_unknown_time_control_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting.*\[time_control\].*move_ms"):
        TournamentConfig.from_json({"bots": ["a", "b"], "time_control": {"move_ms": 5}})


def test_a_clock_is_wall_or_cpu(tmp_path: Path) -> None:
    path = _file(tmp_path, 'bots = ["a", "b"]\n[time_control]\nclock = "cpu"\n')
    assert load_config(path).time_control.clock == "cpu"
    with pytest.raises(ConfigError, match=r"time_control\.clock.*'sundial'"):
        _two(clock="sundial")


def test_a_bot_time_entry_must_name_a_bot_and_be_a_valid_control() -> None:
    with pytest.raises(ConfigError, match="bot_time"):
        _two(bot_time={"": "1+10"})
    with pytest.raises(ConfigError, match=r"\[bot_time\] b: .*bank"):
        _two(bot_time={"b": "1+86401"})


def test_a_bot_time_entry_takes_grace_and_clock_from_the_time_control() -> None:
    """configuration.md: "that bot's own control (grace and clock from [time_control])"."""
    config = _two(grace_seconds=0.4, clock="cpu", move_seconds=3, bot_time={"a": "0.5+5+0.05"})
    own = config.control_of("a", "1.0")
    assert own == TimeControl(move_ms=500, bank_ms=5000, grace_ms=400, clock="cpu", increment_ms=50)
    assert config.control_of("b", "1.0") == config.time_control


def test_a_name_at_version_entry_wins_over_the_name_entry() -> None:
    """A ``name@version`` entry is that version's; ``name`` sets the bot's other versions."""
    config = _two(bot_time={"a": "2+20", "a@2.0": "0.5+5"})
    assert config.control_of("a", "2.0").move_seconds == 0.5
    assert config.control_of("a", "1.0").move_seconds == 2.0


def test_a_bot_time_naming_no_entered_bot_is_refused_with_the_known_names() -> None:
    config = _two(bot_time={"alfa": "1+10"})
    with pytest.raises(ConfigError, match=r"'alfa'.*not an entered bot.*known: alpha, alpha@1"):
        config.check_bot_time([("alpha", "1")])
    _two(bot_time={"alpha@1": "1+10"}).check_bot_time([("alpha", "1")])  # either form


def test_one_bot_given_two_controls_under_its_two_names_is_refused() -> None:
    """Refused as ``name`` and ``name@version``, "unless another version of that bot is
    entered, which name then sets"."""
    config = _two(bot_time={"a": "2+20", "a@1": "1+10"})
    with pytest.raises(ConfigError, match="names the bot a@1 twice"):
        config.check_bot_time([("a", "1"), ("b", "1")])
    config.check_bot_time([("a", "1"), ("a", "2")])  # `a` sets a@2
    _two(bot_time={"a": "2+20"}).check_bot_time([("a", "1"), ("b", "1")])  # one name only


def test_bot_time_naming_one_bot_twice_as_given_is_refused() -> None:
    with pytest.raises(ConfigError, match="twice"):
        TournamentConfig(bots=("a", "b"), bot_time=(("a", "1+10"), ("a", "2+20")))


# ---------------------------------------------------------------------------- files and flags


def test_bots_gauntlet_and_book_in_a_file_are_relative_to_its_folder(tmp_path: Path) -> None:
    here = tmp_path.resolve() / "cup"
    for folder in ("a", "b", "g"):
        (here / folder).mkdir(parents=True)
    _file(here, DECK + "\n", "book.txt")
    path = _file(
        here,
        'bots = ["a", "b", "stored@1.0"]\ngauntlet = "g"\nbook = "book.txt"\n',
    )
    config = load_config(path)
    assert config.bots == (str(here / "g"), str(here / "a"), str(here / "b"), "stored@1.0")
    assert config.gauntlet == str(here / "g")
    assert config.book == (tuple(DECK.split()),)


def test_a_flag_wins_over_the_file_bot_by_bot_in_bot_time(tmp_path: Path) -> None:
    path = _file(tmp_path, 'bots = ["a", "b"]\n[bot_time]\na = "2+20"\nb = "3+30"\n')
    config = load_config(path, bot_time={"a": "0.5+5"})
    assert dict(config.bot_time) == {"a": "0.5+5", "b": "3+30"}


def test_an_error_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, 'bots = ["a", "b"]\nconcurrency = 0\n')
    with pytest.raises(ConfigError, match=f"^{path}: concurrency"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"^options: concurrency"):
        _two(concurrency=0)


def test_unknown_sandbox_and_runtime_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown setting.*\[sandbox\].*memory"):
        _two(sandbox={"memory": 5})
    with pytest.raises(ConfigError, match=r"sandbox\.runtimes\.python.*memory"):
        SandboxSettings(runtimes={"python": {"memory": 5}})
    with pytest.raises(ConfigError, match="memory_mb"):  # the same bounds as the others
        SandboxSettings(runtimes={"python": {"memory_mb": 31}})


def test_a_runtime_s_own_limits_apply_to_its_bots_only() -> None:
    settings = SandboxSettings(runtimes={"python": {"memory_mb": 128, "pids": 32}})
    assert settings.limits("python").memory_bytes == 128 * MiB
    assert settings.limits("python").pids == 32
    assert settings.limits("node").memory_bytes == 256 * MiB and settings.limits().pids == 64


# ---------------------------------------------------------------------------- stored, set


def test_records_stored_with_a_tournament_are_not_settings() -> None:
    """The seed commitment and ``extensions`` are records kept with the configuration."""
    stored = _two(seed=3).to_json() | {"seed_commitment": "ab", "extensions": [{"round": 1}]}
    assert TournamentConfig.from_json(stored) == _two(seed=3)


@pytest.mark.parametrize(
    "assignment",
    [
        "bots=['x', 'y']",
        "games_per_pair=4",
        'format="duplicate"',
        "seed=3",
        'ruleset="classic"',
        "table_size=3",
        'gauntlet="a"',
        'book="b.txt"',
    ],
)
def test_a_setting_that_made_the_series_cannot_change(assignment: str) -> None:
    """`bots`, `games_per_pair`, `format`, `seed`, `ruleset`, `table_size`, `gauntlet` and
    `book` made the series and cannot change."""
    with pytest.raises(ConfigError, match="cannot change"):
        with_changes(_two().to_json(), [parse_assignment(assignment)])


def test_set_reads_key_and_value_around_spaces() -> None:
    assert parse_assignment(" concurrency = 4 ") == ("concurrency", 4)
    assert parse_assignment("name= spring") == ("name", "spring")
    assert parse_assignment('name="spring cup"') == ("name", "spring cup")
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_assignment("=4")


def test_set_refuses_a_malformed_list_instead_of_taking_it_as_text() -> None:
    with pytest.raises(ConfigError, match="not a valid TOML value"):
        parse_assignment("bot_time=[1,")


def test_set_refuses_a_key_given_twice_and_a_sub_key_of_a_plain_setting() -> None:
    stored = _two().to_json()
    with pytest.raises(ConfigError, match="more than once"):
        with_changes(stored, [("concurrency", 3), ("concurrency", 4)])
    with pytest.raises(ConfigError, match=r"unknown setting 'name\.x'"):
        with_changes(stored, [("name.x", "y")])


def test_every_sandbox_and_time_control_setting_is_settable() -> None:
    keys = settable_keys()
    for key in ("memory_mb", "pids", "cpus", "nofile", "tmpfs_mb", "fsize_mb", "backend"):
        assert f"sandbox.{key}" in keys
    for key in ("move_seconds", "bank_seconds", "grace_seconds", "clock", "increment_seconds"):
        assert f"time_control.{key}" in keys
    changed = with_changes(_two().to_json(), [parse_assignment("sandbox.nofile=512")])
    assert changed.sandbox.nofile == 512
