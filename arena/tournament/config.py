"""A tournament's settings: from a TOML file, flags, or both (flags win)."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from referee.protocol.messages import TimeControl
from referee.rules import RULESETS
from referee.series import SeriesFormat
from sandbox import SandboxLimits
from sandbox.limits import DEFAULT_STARTUP_SECONDS

MiB = 1024 * 1024
BACKENDS = ("auto", "docker", "bwrap", "process")


class ConfigError(ValueError):
    """A tournament setting is missing, unknown or out of range (the message says which)."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """Which sandbox backend to use and the limits of each bot."""

    backend: str = "auto"
    allow_unsafe: bool = False
    memory_mb: int = 256
    pids: int = 64
    cpus: float = 1.0
    nofile: int = 256
    tmpfs_mb: int = 16
    fsize_mb: int = 8
    startup_seconds: float = DEFAULT_STARTUP_SECONDS

    def limits(self) -> SandboxLimits:
        """The sandbox package's form of these limits."""
        return SandboxLimits(
            memory_bytes=self.memory_mb * MiB,
            pids=self.pids,
            cpus=self.cpus,
            nofile=self.nofile,
            tmpfs_bytes=self.tmpfs_mb * MiB,
            fsize_bytes=self.fsize_mb * MiB,
            startup_timeout=self.startup_seconds,
        )


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """Everything that defines a tournament (stored with it, so ``resume`` needs no flags)."""

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

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ConfigError("the tournament needs a name")
        if len(self.bots) < 2:
            raise ConfigError(f"a tournament needs at least two bots, got {len(self.bots)}")
        if len(set(self.bots)) != len(self.bots):
            raise ConfigError(f"a bot is listed twice: {sorted(self.bots)}")
        if self.games_per_pair < 1:
            raise ConfigError(f"games per pair must be >= 1, got {self.games_per_pair}")
        if self.format is SeriesFormat.DUPLICATE and self.games_per_pair % 2:
            raise ConfigError(
                f"the duplicate format needs an even number of games per pair, "
                f"got {self.games_per_pair}"
            )
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.turn_limit < 1:
            raise ConfigError(f"turn limit must be >= 1, got {self.turn_limit}")
        if self.seed is not None and (type(self.seed) is not int or not 0 <= self.seed < 2**62):
            raise ConfigError(f"seed must be an integer in [0, 2**62), got {self.seed}")
        if self.ruleset not in RULESETS:
            raise ConfigError(f"unknown ruleset {self.ruleset!r}; choose one of {list(RULESETS)}")
        if self.table_size not in RULESETS[self.ruleset]:
            raise ConfigError(
                f"the {self.ruleset} ruleset seats {list(RULESETS[self.ruleset])} players, "
                f"got a table size of {self.table_size!r}"
            )
        if self.ruleset != "default" and self.format is not SeriesFormat.STANDARD:
            raise ConfigError(f"the {self.ruleset} ruleset plays the standard format only")
        if len(self.bots) < self.table_size:
            raise ConfigError(
                f"a table of {self.table_size} needs at least {self.table_size} bots, "
                f"got {len(self.bots)}"
            )
        if self.sandbox.backend not in BACKENDS:
            raise ConfigError(
                f"unknown sandbox backend {self.sandbox.backend!r}; choose one of {BACKENDS}"
            )

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored with the tournament."""
        data = asdict(self)
        data["time_control"] = _time_control_json(self.time_control)
        data["format"] = self.format.value
        data["bots"] = list(self.bots)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TournamentConfig:
        """Inverse of :meth:`to_json` (also reads TOML tables). Keys the service adds when it
        stores a tournament (the seed commitment) are not settings and are skipped."""
        settings = {k: v for k, v in data.items() if k not in STORED_ONLY}
        return _build(settings, source="stored configuration")


STORED_ONLY = ("seed_commitment",)
"""Keys of a stored tournament config that are records, not settings."""

TIME_CONTROL_KEYS = ("move_seconds", "bank_seconds", "grace_seconds")
"""The settings of ``[time_control]``, in seconds (TOML, flags and the stored config)."""


def _time_control_json(control: TimeControl) -> dict[str, float]:
    return {
        "move_seconds": control.move_seconds,
        "bank_seconds": control.bank_seconds,
        "grace_seconds": control.grace_seconds,
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
    try:
        return TimeControl.from_seconds(
            values["move_seconds"], values["bank_seconds"], values["grace_seconds"]
        )
    except ValueError as exc:
        raise ConfigError(f"bad value in {where}: {exc}") from None


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
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad value in {where}: {exc}") from None


def _build(data: dict[str, Any], *, source: str) -> TournamentConfig:
    data = dict(data)
    try:
        if "time_control" in data:
            data["time_control"] = _time_control(data["time_control"])
        if "sandbox" in data:
            data["sandbox"] = _section(data["sandbox"], SandboxSettings, "[sandbox]")
        if "format" in data:
            data["format"] = SeriesFormat(data["format"])
        if "bots" in data:
            if not isinstance(data["bots"], list | tuple) or not all(
                isinstance(b, str) for b in data["bots"]
            ):
                raise ConfigError(f"bots must be a list of strings, got {data['bots']!r}")
            data["bots"] = tuple(data["bots"])
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    config: TournamentConfig = _section(data, TournamentConfig, source)
    return config


def load_config(path: Path | None, **overrides: Any) -> TournamentConfig:
    """Settings from the TOML file at ``path`` (if any), then ``overrides`` that are not None.

    Bot paths in the file are relative to the file's folder.
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
        if "bots" in data and isinstance(data["bots"], list):
            data["bots"] = [_relative_to(path.parent, b) for b in data["bots"]]
    sandbox = dict(data.get("sandbox", {})) if isinstance(data.get("sandbox", {}), dict) else {}
    time_control = (
        dict(data.get("time_control", {})) if isinstance(data.get("time_control"), dict) else {}
    )
    for key, value in overrides.items():
        if value is None:
            continue
        if key in {f.name for f in fields(SandboxSettings)}:
            sandbox[key] = value
        elif key in TIME_CONTROL_KEYS:
            time_control[key] = value
        else:
            data[key] = list(value) if key == "bots" else value
    if sandbox:
        data["sandbox"] = sandbox
    if time_control:
        data["time_control"] = time_control
    return _build(data, source=str(path) if path else "options")


def _relative_to(folder: Path, bot: Any) -> Any:
    """A bot path given in a config file is relative to that file's folder."""
    if not isinstance(bot, str) or Path(bot).is_absolute():
        return bot
    candidate = folder / bot
    return str(candidate.resolve()) if candidate.exists() else bot
