"""A tournament's settings: from a TOML file, flags, or both (flags win)."""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from arena.tournament.origin import IMPORTED_ORIGINS_KEY
from referee.book import BookError, format_book, load_book, parse_book
from referee.files import read_regular_file
from referee.protocol.messages import CLOCKS, TimeControl
from referee.rules import RULESETS
from referee.series import SeriesFormat
from referee.timecontrol import BANK_SECONDS as BANK_SECONDS
from referee.timecontrol import GRACE_SECONDS as GRACE_SECONDS
from referee.timecontrol import INCREMENT_SECONDS as INCREMENT_SECONDS
from referee.timecontrol import MOVE_SECONDS as MOVE_SECONDS
from referee.timecontrol import parse_time_spec
from sandbox import SandboxLimits
from sandbox.limits import DEFAULT_STARTUP_SECONDS

MiB = 1024 * 1024
BACKENDS = ("auto", "docker", "bwrap", "process")


class ConfigError(ValueError):
    """A tournament setting is missing, unknown or out of range (the message says which)."""


# Bounds of every setting: what a tournament and its bots can sensibly use. Each is checked
# before anything is stored, so a setting the series would choke on never reaches it.
MAX_NAME = 200
MAX_BOTS = 1000
MAX_GAMES_PER_PAIR = 1_000_000
MAX_CONCURRENCY = 1024
MAX_TURN_LIMIT = 100_000
MAX_SEED = 2**62
# MOVE_SECONDS, BANK_SECONDS, GRACE_SECONDS, INCREMENT_SECONDS: referee.timecontrol's, the
# same wherever a user sets a time control (kryt play too).
MEMORY_MB = (32, 65_536)
PIDS = (8, 32_768)
CPUS = (0.01, 1024.0)
NOFILE = (16, 1_048_576)
TMPFS_MB = (1, 65_536)
FSIZE_MB = (1, 65_536)
STARTUP_SECONDS = (0.1, 600.0)


def _integer(name: str, value: object, low: int, high: int) -> int:
    """``value`` as a whole number in [low, high], or ConfigError (a bool is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be a whole number in [{low}, {high}], got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be in [{low}, {high}], got {value!r}")
    return value


def _number(name: str, value: object, low: float, high: float) -> float:
    """``value`` as a finite number in [low, high], or ConfigError (a bool is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise ConfigError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")
    return value


RUNTIME_SETTINGS = (
    "memory_mb",
    "pids",
    "cpus",
    "nofile",
    "tmpfs_mb",
    "fsize_mb",
    "startup_seconds",
)
"""The sandbox settings a runtime may set for its own bots (``[sandbox.runtimes.NAME]``)."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """Which sandbox backend to use and the limits of each bot (checked when built)."""

    backend: str = "auto"
    allow_unsafe: bool = False
    memory_mb: int = 256
    pids: int = 64
    cpus: float = 1.0
    nofile: int = 256
    tmpfs_mb: int = 16
    fsize_mb: int = 8
    startup_seconds: float = DEFAULT_STARTUP_SECONDS
    runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Limits that differ for bots of one runtime (``[sandbox.runtimes.java] memory_mb =
    1024``): any of the settings above but the backend; the runtime's own floors (a JVM
    needs at least 512 MiB) still apply."""

    def __post_init__(self) -> None:
        self._check_runtimes()
        if not isinstance(self.backend, str) or self.backend not in BACKENDS:
            raise ConfigError(f"unknown sandbox backend {self.backend!r}; choose one of {BACKENDS}")
        _flag("sandbox.allow_unsafe", self.allow_unsafe)
        _integer("sandbox.memory_mb", self.memory_mb, *MEMORY_MB)
        _integer("sandbox.pids", self.pids, *PIDS)
        _number("sandbox.cpus", self.cpus, *CPUS)
        _integer("sandbox.nofile", self.nofile, *NOFILE)
        _integer("sandbox.tmpfs_mb", self.tmpfs_mb, *TMPFS_MB)
        _integer("sandbox.fsize_mb", self.fsize_mb, *FSIZE_MB)
        _number("sandbox.startup_seconds", self.startup_seconds, *STARTUP_SECONDS)
        try:
            self.limits()
        except ValueError as exc:  # a bound of the sandbox package we do not know of
            raise ConfigError(f"sandbox limits: {exc}") from None

    def _check_runtimes(self) -> None:
        from sandbox.runtimes import get_runtime

        if not isinstance(self.runtimes, dict):
            raise ConfigError(f"sandbox.runtimes must be a table, got {self.runtimes!r}")
        for name, values in self.runtimes.items():
            try:
                get_runtime(name)
            except ValueError as exc:
                raise ConfigError(f"sandbox.runtimes: {exc}") from None
            if not isinstance(values, dict):
                raise ConfigError(f"sandbox.runtimes.{name} must be a table, got {values!r}")
            unknown = sorted(set(values) - set(RUNTIME_SETTINGS))
            if unknown:
                raise ConfigError(
                    f"unknown setting(s) in sandbox.runtimes.{name}: {', '.join(unknown)}"
                    f" (known: {list(RUNTIME_SETTINGS)})"
                )
            SandboxSettings(**{k: getattr(self, k) for k in RUNTIME_SETTINGS} | values)

    def limits(self, runtime: str | None = None) -> SandboxLimits:
        """The sandbox package's form of these limits, for bots of ``runtime`` (its own
        settings from :attr:`runtimes` applied) or for every bot."""
        own = self.runtimes.get(runtime, {}) if runtime is not None else {}
        values = {k: getattr(self, k) for k in RUNTIME_SETTINGS} | own
        return SandboxLimits(
            memory_bytes=values["memory_mb"] * MiB,
            pids=values["pids"],
            cpus=values["cpus"],
            nofile=values["nofile"],
            tmpfs_bytes=values["tmpfs_mb"] * MiB,
            fsize_bytes=values["fsize_mb"] * MiB,
            startup_timeout=values["startup_seconds"],
        )


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """Everything that defines a tournament (stored with it, so ``resume`` needs no flags).

    Every field is checked when the object is built (type, range and upper bound), so a
    config that exists is one the series can run.
    """

    name: str = "tournament"
    bots: tuple[str, ...] = ()
    """Bot folders or archives (paths), or stored submissions as ``name`` / ``name@version``."""
    games_per_pair: int = 10
    format: SeriesFormat = SeriesFormat.STANDARD
    seed: int | None = None
    """None (the default): a secret seed drawn when the tournament is created."""
    concurrency: int = 2
    turn_limit: int = 1000
    time_control: TimeControl = field(default_factory=TimeControl)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    ruleset: str = "default"
    """``default`` (round robin of pairs) or ``classic`` (round robin of tables)."""
    table_size: int = 2
    """Seats at each table (classic: 2-4); ``games_per_pair`` games per seating."""
    gauntlet: str | None = None
    """None: a round robin. Else one of :attr:`bots`, which plays every other entrant (at a
    classic table: every table includes it) while the others never meet."""
    bot_time: tuple[tuple[str, str], ...] = ()
    """Per-bot time controls (``[bot_time]``): ``(bot, "MOVE+BANK[+INCREMENT]")`` pairs, the
    bot named ``name`` or ``name@version``; grace and clock come from ``[time_control]``."""
    book: tuple[tuple[str, ...], ...] = ()
    """A deal book's decks (``book = "path"`` reads the file; the decks are stored with the
    tournament, so resuming needs no file). Each pair plays them in order, each twice with the
    hands swapped (the duplicate format)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"the tournament needs a name (a non-empty text), got {self.name!r}")
        if len(self.name) > MAX_NAME:
            raise ConfigError(f"name is longer than {MAX_NAME} characters: {self.name[:40]!r}...")
        if not self.name.isprintable():  # shown everywhere; a NUL cannot even be stored
            raise ConfigError(
                f"name must be printable text (no control characters), got {self.name!r}"
            )
        if not isinstance(self.bots, tuple) or not all(isinstance(b, str) and b for b in self.bots):
            raise ConfigError(f"bots must be a list of non-empty strings, got {self.bots!r}")
        if len(self.bots) < 2:
            raise ConfigError(f"a tournament needs at least two bots, got {len(self.bots)}")
        if len(self.bots) > MAX_BOTS:
            raise ConfigError(f"a tournament takes at most {MAX_BOTS} bots, got {len(self.bots)}")
        if len(set(self.bots)) != len(self.bots):
            raise ConfigError(f"a bot is listed twice: {sorted(self.bots)}")
        if not isinstance(self.format, SeriesFormat):
            raise ConfigError(f"format must be standard or duplicate, got {self.format!r}")
        _integer("games per pair (games_per_pair)", self.games_per_pair, 1, MAX_GAMES_PER_PAIR)
        if self.format is SeriesFormat.DUPLICATE and self.games_per_pair % 2:
            raise ConfigError(
                f"the duplicate format needs an even number of games per pair, "
                f"got {self.games_per_pair}"
            )
        _integer("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        _integer("turn limit (turn_limit)", self.turn_limit, 1, MAX_TURN_LIMIT)
        if self.seed is not None:  # None: a secret seed is drawn when the tournament is made
            if isinstance(self.seed, bool) or not isinstance(self.seed, int):
                raise ConfigError(f"seed must be an integer in [0, 2**62), got {self.seed!r}")
            if not 0 <= self.seed < MAX_SEED:
                raise ConfigError(f"seed must be an integer in [0, 2**62), got {self.seed}")
        if not isinstance(self.time_control, TimeControl):
            raise ConfigError(f"time_control must be a table, got {self.time_control!r}")
        if not isinstance(self.sandbox, SandboxSettings):
            raise ConfigError(f"sandbox must be a table, got {self.sandbox!r}")
        if not isinstance(self.ruleset, str) or self.ruleset not in RULESETS:
            raise ConfigError(f"unknown ruleset {self.ruleset!r}; choose one of {list(RULESETS)}")
        if type(self.table_size) is not int or self.table_size not in RULESETS[self.ruleset]:
            raise ConfigError(
                f"the {self.ruleset} ruleset seats {list(RULESETS[self.ruleset])} players, "
                f"got a table size of {self.table_size!r}"
            )
        if self.ruleset != "default" and self.book:  # before the format a book implies
            raise ConfigError(
                f"a deal book is for the two-player game (ruleset default); the {self.ruleset}"
                " table plays decks drawn from the seed"
            )
        if self.ruleset != "default" and self.format is not SeriesFormat.STANDARD:
            raise ConfigError(f"the {self.ruleset} ruleset plays the standard format only")
        if len(self.bots) < self.table_size:
            raise ConfigError(
                f"a table of {self.table_size} needs at least {self.table_size} bots, "
                f"got {len(self.bots)}"
            )
        _check_gauntlet(self.gauntlet, self.bots)
        self._check_bot_time_and_book()

    def _check_bot_time_and_book(self) -> None:
        if not isinstance(self.bot_time, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 for p in self.bot_time
        ):
            raise ConfigError(
                f'bot_time must be a table of bot = "1+10+0.1", got {self.bot_time!r}'
            )
        for bot, spec in self.bot_time:
            try:
                parse_time_spec(spec, self.time_control, setting=True)
            except ValueError as exc:
                raise ConfigError(f"[bot_time] {bot}: {exc}") from None
        if len({bot for bot, _ in self.bot_time}) != len(self.bot_time):
            raise ConfigError(f"[bot_time] names a bot twice: {self.bot_time!r}")
        if not self.book:
            return
        if self.format is not SeriesFormat.DUPLICATE:
            raise ConfigError(
                'a deal book plays each deck twice with the hands swapped: set format = "duplicate"'
            )
        try:  # a stored book is checked as strictly as a file
            parse_book(format_book(self.book), "book")
        except (BookError, TypeError) as exc:
            raise ConfigError(f"book: {exc}") from None

    def control_of(self, name: str, version: str) -> TimeControl:
        """The time control of the bot ``name`` at ``version``: its ``[bot_time]`` entry
        (``name@version`` first, then ``name``), else ``[time_control]``."""
        given = dict(self.bot_time)
        spec = given.get(f"{name}@{version}", given.get(name))
        if spec is None:
            return self.time_control
        return parse_time_spec(spec, self.time_control, setting=True)

    def check_bot_time(self, bots: list[tuple[str, str]]) -> None:
        """ConfigError when a ``[bot_time]`` entry names none of ``bots`` (``(name, version)``
        of the entered bots): a misspelt name would silently leave the bot on the default; or
        when two entries name the same bot, as ``name`` and as ``name@version`` (unless other
        versions of that bot are entered, which the ``name`` entry then sets)."""
        known = {n for name, version in bots for n in (name, f"{name}@{version}")}
        for bot, _ in self.bot_time:
            if bot not in known:
                raise ConfigError(
                    f"[bot_time] names {bot!r}, which is not an entered bot"
                    f" (known: {', '.join(sorted(known))})"
                )
        given = dict(self.bot_time)
        for name, version in bots:
            pinned = f"{name}@{version}"
            if name not in given or pinned not in given:
                continue
            if sum(1 for other, _ in bots if other == name) > 1:
                continue  # `name` sets the other entered versions: pinned is an exception
            raise ConfigError(
                f"[bot_time] (or --time BOT=...) names the bot {pinned} twice, as {name} ="
                f" {given[name]!r} and as {pinned} = {given[pinned]!r}: give each bot one"
                " control"
            )

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored with the tournament."""
        data = asdict(self)
        data["time_control"] = _time_control_json(self.time_control)
        data["format"] = self.format.value
        data["bots"] = list(self.bots)
        data["bot_time"] = dict(self.bot_time)
        data["book"] = [" ".join(deck) for deck in self.book]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TournamentConfig:
        """Inverse of :meth:`to_json` (also reads TOML tables). Keys the service adds when it
        stores a tournament (the seed commitment) are not settings and are skipped."""
        settings = {k: v for k, v in data.items() if k not in STORED_ONLY}
        return _build(settings, source="stored configuration")


IMPORTED_KEY = "imported"
"""The key of the stored config of a tournament created by ``kryt games import``
(``{"imported": true}``, with the origins of its series): a place for games read from a file,
with no settings to run it."""


def is_imported(stored: Mapping[str, Any]) -> bool:
    """Whether a stored tournament config is that of an imported tournament."""
    return stored.get(IMPORTED_KEY) is True


STORED_ONLY = ("seed_commitment", "extensions", IMPORTED_ORIGINS_KEY)
"""Keys of a stored tournament config that are records, not settings (the seed commitment;
the rounds ``kryt tournament extend`` added, see :mod:`arena.tournament.extend`; where an
imported tournament's series came from, see :mod:`arena.tournament.origin`)."""


def _check_gauntlet(gauntlet: object, bots: tuple[str, ...]) -> None:
    """A gauntlet bot is None or one of the entrants (``_build`` adds it when missing)."""
    if gauntlet is None:
        return
    if not isinstance(gauntlet, str) or not gauntlet:
        raise ConfigError(f"gauntlet must name a bot (a non-empty text), got {gauntlet!r}")
    if gauntlet not in bots:
        raise ConfigError(f"the gauntlet bot {gauntlet!r} is not among the bots {list(bots)}")


def _with_gauntlet(data: dict[str, Any]) -> dict[str, Any]:
    """The gauntlet bot is an entrant: listed first among ``bots`` when it is not there yet
    (``kryt tournament run --gauntlet mine other1 other2``)."""
    gauntlet = data.get("gauntlet")
    bots = data.get("bots", ())
    if isinstance(gauntlet, str) and gauntlet and isinstance(bots, tuple) and gauntlet not in bots:
        data["bots"] = (gauntlet, *bots)
    return data


TIME_CONTROL_KEYS = ("move_seconds", "bank_seconds", "grace_seconds", "clock", "increment_seconds")
"""The settings of ``[time_control]``: times in seconds (TOML, flags and the stored config),
and the clock moves are charged on (``wall`` or ``cpu``)."""


def _time_control_json(control: TimeControl) -> dict[str, float | str]:
    return {
        "move_seconds": control.move_seconds,
        "bank_seconds": control.bank_seconds,
        "grace_seconds": control.grace_seconds,
        "clock": control.clock,
        "increment_seconds": control.increment_seconds,
    }


def _time_control(data: Any) -> TimeControl:
    where = "[time_control]"
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table, got {data!r}")
    unknown = sorted(set(data) - set(TIME_CONTROL_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) in {where}: {', '.join(unknown)} "
            f"(known: {list(TIME_CONTROL_KEYS)})"
        )
    defaults = _time_control_json(TimeControl())
    values = defaults | data
    _number("time_control.move_seconds", values["move_seconds"], *MOVE_SECONDS)
    _number("time_control.bank_seconds", values["bank_seconds"], *BANK_SECONDS)
    _number("time_control.grace_seconds", values["grace_seconds"], *GRACE_SECONDS)
    _number("time_control.increment_seconds", values["increment_seconds"], *INCREMENT_SECONDS)
    if values["clock"] not in CLOCKS:
        raise ConfigError(
            f"time_control.clock must be one of {list(CLOCKS)}, got {values['clock']!r}"
        )
    try:
        return TimeControl.from_seconds(
            float(values["move_seconds"]),
            float(values["bank_seconds"]),
            float(values["grace_seconds"]),
            str(values["clock"]),
            float(values["increment_seconds"]),
        )
    except ValueError as exc:
        raise ConfigError(f"bad value in {where}: {exc}") from None


def _bot_time(data: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigError(
            f'[bot_time] must be a table of bot = "MOVE+BANK[+INCREMENT]", got {data!r}'
        )
    return tuple(sorted(data.items()))


def _book(data: Any) -> tuple[tuple[str, ...], ...]:
    """A book given as a file path (read now) or as stored decks (a list of deck texts)."""
    try:
        if isinstance(data, str):
            return load_book(Path(data))
        if isinstance(data, list | tuple) and all(isinstance(d, str) for d in data):
            return parse_book("\n".join(data), "stored book") if data else ()
    except BookError as exc:
        raise ConfigError(str(exc)) from None
    raise ConfigError(f"book must be the path of a deal book file, got {data!r}")


def _section(data: Any, cls: type[Any], where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table, got {data!r}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) in {where}: {', '.join(unknown)} (known: {sorted(known)})"
        )
    try:
        return cls(**data)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad value in {where}: {exc}") from None


def _build(data: dict[str, Any], *, source: str) -> TournamentConfig:
    data = dict(data)
    try:
        if "time_control" in data:
            data["time_control"] = _time_control(data["time_control"])
        if "bot_time" in data:
            data["bot_time"] = _bot_time(data["bot_time"])
        if "book" in data:
            data["book"] = _book(data["book"])
            data.setdefault("format", "duplicate")  # what a book plays
        if "sandbox" in data:
            data["sandbox"] = _section(data["sandbox"], SandboxSettings, "[sandbox]")
        if "format" in data:
            if not isinstance(data["format"], str):
                raise ConfigError(f"format must be standard or duplicate, got {data['format']!r}")
            data["format"] = SeriesFormat(data["format"])
        if "bots" in data:
            if not isinstance(data["bots"], list | tuple) or not all(
                isinstance(b, str) for b in data["bots"]
            ):
                raise ConfigError(f"bots must be a list of strings, got {data['bots']!r}")
            data["bots"] = tuple(data["bots"])
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    config: TournamentConfig = _section(_with_gauntlet(data), TournamentConfig, source)
    return config


def load_config(path: Path | None, **overrides: Any) -> TournamentConfig:
    """Settings from the TOML file at ``path`` (if any), then ``overrides`` that are not None.

    Bot paths in the file are relative to the file's folder.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(read_regular_file(path).decode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
        if "bots" in data and isinstance(data["bots"], list):
            data["bots"] = [_relative_to(path.parent, b) for b in data["bots"]]
        if isinstance(data.get("gauntlet"), str) and data["gauntlet"]:
            data["gauntlet"] = _relative_to(path.parent, data["gauntlet"])
        if isinstance(data.get("book"), str):
            data["book"] = str(path.parent / data["book"])
    where = str(path) if path else "options"
    for table in ("sandbox", "time_control"):
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{where}: [{table}] must be a table, got {data[table]!r}")
    sandbox = dict(data.get("sandbox", {}))
    time_control = dict(data.get("time_control", {}))
    for key, value in overrides.items():
        if value is None:
            continue
        if key in {f.name for f in fields(SandboxSettings)}:
            sandbox[key] = value
        elif key in TIME_CONTROL_KEYS:
            time_control[key] = value
        elif key == "bot_time" and isinstance(data.get(key), dict):
            data[key] = data[key] | value  # flags win over the file, bot by bot
        else:
            data[key] = list(value) if key == "bots" else value
    if sandbox:
        data["sandbox"] = sandbox
    if time_control:
        data["time_control"] = time_control
    return _build(data, source=where)


FIXED_SETTINGS = (
    "bots",
    "games_per_pair",
    "format",
    "seed",
    "ruleset",
    "table_size",
    "gauntlet",
    "book",
)
"""Settings that made the tournament's series: they cannot change once it exists."""


def parse_assignment(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``kryt tournament set``: the key (``sandbox.memory_mb``) and the
    value read as TOML (``512``, ``0.5``, ``true``, ``"text"``); an unquoted word that is
    not TOML is taken as text (``name=spring``)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"expected KEY=VALUE (e.g. sandbox.memory_mb=512), got {text!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError as exc:
        if raw[:1] in ("'", '"', "[", "{"):  # meant as TOML (quoted, a list, a table): not text
            raise ConfigError(f"{key}: {raw!r} is not a valid TOML value ({exc})") from None
        value = raw
    return key, value


def with_changes(stored: dict[str, Any], changes: list[tuple[str, Any]]) -> TournamentConfig:
    """The stored configuration with ``changes`` (``(dotted key, value)``) applied, checked
    as a whole exactly as a new tournament's configuration is (ConfigError otherwise; also
    for a key given twice). The ``[bot_time]`` entries are checked against the entered bots
    by the caller, which knows them (:meth:`TournamentConfig.check_bot_time`)."""
    data = json.loads(json.dumps(stored))  # a deep copy of plain JSON
    tables = {"sandbox", "time_control"}
    top = {f.name for f in fields(TournamentConfig)} - set(tables)
    given = [key for key, _ in changes]
    twice = sorted({key for key in given if given.count(key) > 1})
    if twice:  # which one would win is a guess: say so instead
        raise ConfigError(f"{', '.join(twice)} is given more than once: give each setting once")
    for key, value in changes:
        head, _, tail = key.partition(".")
        if head in FIXED_SETTINGS:
            raise ConfigError(
                f"{key} cannot change: the tournament's series were made from it "
                f"(settings that can change: {', '.join(settable_keys())})"
            )
        if (tail and head not in tables) or (not tail and head not in top):
            raise ConfigError(f"unknown setting {key!r} (known: {', '.join(settable_keys())})")
        if tail:
            section = data.setdefault(head, {})
            if not isinstance(section, dict):
                section = data[head] = {}
            section[tail] = value
        else:
            data[head] = value
    return _build(data, source="new setting")


def settable_keys() -> list[str]:
    """Every key ``with_changes`` accepts, dotted for the tables."""
    keys = [
        f.name
        for f in fields(TournamentConfig)
        if f.name not in FIXED_SETTINGS and f.name not in {"sandbox", "time_control"}
    ]
    keys += [f"time_control.{k}" for k in TIME_CONTROL_KEYS]
    keys += [f"sandbox.{f.name}" for f in fields(SandboxSettings)]
    return keys


def _relative_to(folder: Path, bot: Any) -> Any:
    """A bot path given in a config file is relative to that file's folder."""
    if not isinstance(bot, str) or Path(bot).is_absolute():
        return bot
    candidate = folder / bot
    return str(candidate.resolve()) if candidate.exists() else bot
