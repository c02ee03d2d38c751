"""Tests from a mutation review of ``kryt tournament run``'s options (kryt/commands/tournament.py,
kryt/options.py): each flag reaches the setting docs/configuration.md gives it (long and short
forms, the hidden ``--sandbox`` alias), ``--time`` for every bot or for one bot, and the refusals
of contradictory or out-of-range flags as one ``error:`` line naming the option and the value.

Each test pins a behaviour that a small change of the code (a flag passed on as None, passed to
the wrong setting, a short form or a check dropped) altered without any earlier test noticing.
The expected values come from docs/configuration.md, not from running the code.

In process and fast: the command runs through ``kryt.cli.main`` until its settings are read and
checked, where the check of ``[bot_time]`` against the entered bots (the last step before the
database is opened) is replaced by one that keeps the configuration and stops the command. No
database, sandbox or bot is touched.
"""

from __future__ import annotations

import pytest

import kryt.commands.tournament as tournament_command
from arena.tournament.config import MAX_GAMES_PER_PAIR, ConfigError, TournamentConfig
from kryt.errors import ExitCode, UserError
from kryt.options import (
    MAX_GAMES,
    backend_choice,
    refuse_contradictory_time,
    refuse_two_time_controls,
)
from referee.protocol.messages import TimeControl
from referee.series import SeriesFormat
from tests.cli.helpers import flat, kryt

STOPPED = "stopped by the test once the settings were read"


@pytest.fixture(autouse=True)
def captured(monkeypatch: pytest.MonkeyPatch) -> list[TournamentConfig]:
    """The configuration ``kryt tournament run`` built, kept as the command stops (exit 2)
    before it opens a database (in every test: a refusal that did not come stops there too,
    and no database is created in the working directory)."""
    kept: list[TournamentConfig] = []

    def keep(config: TournamentConfig) -> None:
        kept.append(config)
        raise ConfigError(STOPPED)

    monkeypatch.setattr(tournament_command, "check_bot_time_early", keep)
    return kept


def run(
    capsys: pytest.CaptureFixture[str], kept: list[TournamentConfig], *args: str
) -> TournamentConfig:
    """``kryt tournament run ARGS`` up to its checked configuration, which it returns."""
    code, _out, err = kryt(capsys, "tournament", "run", *args)
    assert code == ExitCode.BAD_INPUT and STOPPED in err, err
    assert len(kept) == 1
    return kept.pop()


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``kryt tournament run ARGS`` refused in one ``error:`` line (exit 2): that line."""
    code, out, err = kryt(capsys, "tournament", "run", *args)
    assert code == ExitCode.BAD_INPUT, (code, out, err)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and STOPPED not in err, err
    return flat(err)


# ---------------------------------------------------------------------------- each flag


def test_every_flag_reaches_its_setting(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    """The "flag" column of docs/configuration.md's settings table, each flag given a value
    that differs from its default and from every other flag's."""
    config = run(
        capsys,
        captured,
        "a",
        "b",
        "--name",
        "spring cup",
        "--games",
        "6",
        "--format",
        "duplicate",
        "--seed",
        "42",
        "--concurrency",
        "3",
        "--turn-limit",
        "500",
        "--move-seconds",
        "0.5",
        "--bank-seconds",
        "20",
        "--grace-seconds",
        "0.3",
        "--clock",
        "cpu",
        "--increment-seconds",
        "0.1",
        "--backend",
        "process",
        "--unsafe",
        "--memory-mb",
        "512",
        "--pids",
        "128",
    )
    assert config.bots == ("a", "b") and config.name == "spring cup"
    assert config.games_per_pair == 6 and config.format is SeriesFormat.DUPLICATE
    assert config.seed == 42 and config.concurrency == 3 and config.turn_limit == 500
    control = config.time_control
    assert (control.move_seconds, control.bank_seconds, control.grace_seconds) == (0.5, 20, 0.3)
    assert control.clock == "cpu" and control.increment_seconds == 0.1
    sandbox = config.sandbox
    assert sandbox.backend == "process" and sandbox.allow_unsafe is True
    assert sandbox.memory_mb == 512 and sandbox.pids == 128


def test_the_short_forms_of_games_and_concurrency(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    """``-n`` is ``--games``, ``-j`` is ``--concurrency``."""
    config = run(capsys, captured, "a", "b", "-n", "4", "-j", "7")
    assert config.games_per_pair == 4 and config.concurrency == 7


def test_a_classic_table_of_three(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    config = run(capsys, captured, "a", "b", "c", "--ruleset", "classic", "--table-size", "3")
    assert config.ruleset == "classic" and config.table_size == 3


def test_the_hidden_sandbox_alias_chooses_the_backend(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    """``--sandbox`` is a hidden alias of ``--backend``."""
    assert run(capsys, captured, "a", "b", "--sandbox", "bwrap").sandbox.backend == "bwrap"
    assert backend_choice("auto", "process") == "process"  # kryt play's and bot check's
    assert backend_choice("docker", None) == "docker"


def test_the_gauntlet_bot_joins_the_field_first(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    config = run(capsys, captured, "a", "b", "--gauntlet", "mine")
    assert config.gauntlet == "mine" and config.bots == ("mine", "a", "b")


# ---------------------------------------------------------------------------- --time


def test_time_for_every_bot_sets_move_bank_and_increment(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    """``--time 1+10+0.1``: "1 s a move, a 10 s bank per game and 0.1 s added to the bank
    after each move"; the grace stays the default 0.05 s."""
    control = run(capsys, captured, "a", "b", "--time", "2+30+0.25").time_control
    assert (control.move_seconds, control.bank_seconds, control.increment_seconds) == (2, 30, 0.25)
    assert control.grace_seconds == 0.05


def test_time_for_one_bot_is_that_bot_s_own(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    config = run(capsys, captured, "a", "b", "--time", "a=0.5+5", "--time", "b@1.0=2+20+0.2")
    assert dict(config.bot_time) == {"a": "0.5+5", "b@1.0": "2+20+0.2"}
    assert config.time_control == TimeControl()  # every other bot's: the default


def test_time_out_of_its_bounds_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    """A move of at most 3600 s wherever a control is set (a record may hold more)."""
    err = refused(capsys, "a", "b", "--time", "3601+10")
    assert "error: --time:" in err and "3601" in err and "3600" in err, err


def test_one_bot_given_two_controls_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "a", "b", "--time", "a=1+10", "--time", "a=2+20")
    assert "'a'" in err and "1+10" in err and "2+20" in err, err


def test_time_for_every_bot_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, "a", "b", "--time", "1+10", "--time", "2+20")
    assert "2 times" in err and "'1+10'" in err and "'2+20'" in err, err


@pytest.mark.parametrize("flag", ["--move-seconds", "--bank-seconds", "--increment-seconds"])
def test_time_beside_a_separate_time_flag_is_refused(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    err = refused(capsys, "a", "b", "--time", "1+10+0.1", flag, "0.5")
    assert "--time 1+10+0.1" in err and flag in err, err


def test_separate_time_flags_alone_go_together(
    capsys: pytest.CaptureFixture[str], captured: list[TournamentConfig]
) -> None:
    """Only ``--time`` for every bot conflicts with them: a per-bot ``--time`` does not."""
    config = run(
        capsys, captured, "a", "b", "--move-seconds", "2", "--increment-seconds", "0.5",
        "--time", "a=1+10",
    )  # fmt: skip
    assert config.time_control.move_seconds == 2 and config.time_control.increment_seconds == 0.5
    refuse_contradictory_time([], 1.0, 2.0, 0.5)  # kryt play's check: nothing to refuse


def test_one_bot_under_two_names_in_kryt_play() -> None:
    """kryt play: "one bot given two per-bot controls under two of its names" is refused;
    its first name alone is not."""
    refuse_two_time_controls("mybot", None, "mybot@1.0.0")
    with pytest.raises(UserError, match=r"mybot.*'mybot'.*'mybot@1\.0\.0'"):
        refuse_two_time_controls("mybot", "mybot", "mybot@1.0.0")


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--games", "0"), ("games_per_pair", "got 0")),
        (("-n", "1000001"), ("games_per_pair", "got 1000001")),
        (("-j", "1025"), ("concurrency", "got 1025")),
        (("--turn-limit", "100001"), ("turn_limit", "got 100001")),
        (("--seed", "-1"), ("seed", "got -1")),
        (("--memory-mb", "31"), ("memory_mb", "got 31")),
        (("--pids", "7"), ("pids", "got 7")),
        (("--move-seconds", "0"), ("move_seconds", "got 0")),
        (("--grace-seconds", "601"), ("grace_seconds", "got 601")),
        (("--ruleset", "checkers"), ("ruleset", "'checkers'")),
        (("--ruleset", "classic", "--table-size", "5"), ("table size", "5")),
        (("--backend", "vm"), ("backend", "'vm'")),
        (("--clock", "sundial"), ("clock", "'sundial'")),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, tuple) and x[0].startswith("-") else "",
)
def test_an_out_of_range_flag_is_one_error_line_naming_setting_and_value(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], named: tuple[str, str]
) -> None:
    """configuration.md: "A bad setting is one error: line (naming the setting and the
    value, then a hint line) and exit code 2"."""
    err = refused(capsys, "a", "b", "c", "d", "e", *args)
    assert all(part in err for part in named), err
    assert "hint: see docs/configuration.md" in err, err


def test_a_fraction_of_a_game_is_refused_naming_the_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Games per pair: a whole number."""
    err = refused(capsys, "a", "b", "--games", "2.5")
    assert "--games" in err and "'2.5'" in err, err


def test_kryt_play_and_bot_check_take_as_many_games_as_a_tournament_pair() -> None:
    """kryt.options.MAX_GAMES: "a tournament's most games per pair", 1,000,000 in
    docs/configuration.md."""
    assert MAX_GAMES == MAX_GAMES_PER_PAIR == 1_000_000
