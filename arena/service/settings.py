"""The arena server's settings: defaults, ``KRYT_ARENA_*`` environment variables, then flags.

Every setting is documented in docs/configuration.md ("Arena server"). Values are checked
when read, with the offending value in the message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from arena.db.accounts import MAX_LIFETIME_DAYS
from arena.tournament.config import SandboxSettings
from arena.tournament.scheduler_address import scheduler_address_problem
from arena.tournament.seeds import SEED_BITS
from arena.tournament.store import EXAMPLES
from referee.protocol.messages import TimeControl
from sandbox import SubmissionLimits

ENV_PREFIX = "KRYT_ARENA_"
KiB = 1024
MiB = 1024 * KiB
MAX_UPLOAD_LIMIT = SubmissionLimits().max_total_bytes
"""The largest ``max_upload_bytes``: the submission size limit of a local ``kryt submit``."""
MIN_SECRET_BYTES = 16
"""The shortest ``secret`` (``KRYT_ARENA_SECRET``) accepted: a shorter one could be guessed
offline from one signed cookie, and whoever knows it can sign in as anyone."""


def bundled_examples() -> list[str]:
    """The names of the bundled example bots (what ``reference_bots`` may name)."""
    if not EXAMPLES.is_dir():
        return []
    return sorted(p.name for p in EXAMPLES.iterdir() if (p / "bot.toml").is_file())


class SettingsError(ValueError):
    """A server setting is malformed or out of range (the message names it)."""


@dataclass(frozen=True, slots=True)
class LadderSettings:
    """How the background ladder plays."""

    enabled: bool = True
    games_per_series: int = 4
    concurrency: int = 1
    budget_games: int = 0
    """Stop scheduling once the ladder has this many counted games (0: no limit)."""
    lease_seconds: float = 30.0
    """A claimed series is taken over by another server this long after its last heartbeat."""
    poll_seconds: float = 1.0
    seed: int = 0
    """The ladder's master seed. 0 (the default): a secret one is drawn when the ladder's
    tournament is created and kept with it, with its commitment. Anything else is used as
    given, for a reproducible test arena: public, so unsafe for a real one."""
    executor: str = "local"
    """Where series are played: ``local`` (threads of the server) or ``dask`` (a cluster)."""
    scheduler: str = ""
    """The Dask scheduler (``tcp://HOST:8786``); empty: a LocalCluster of ``dask_workers``."""
    dask_workers: int = 2


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """Everything ``kryt arena serve`` needs besides the database URL."""

    host: str = "127.0.0.1"
    port: int = 8000
    store: Path = Path(".kryt") / "submissions"
    max_upload_bytes: int = 5 * MiB
    writes_per_minute: int = 30
    """Per token: uploads, retirements (a burst of this size, refilled over a minute)."""
    auth_failures_per_minute: int = 20
    """Per client address: refused tokens and logins before further tries get 429."""
    token_days: int = 90
    session_hours: int = 12
    secure_cookies: bool = False
    """Mark cookies Secure (set it when a TLS reverse proxy serves the site)."""
    secret: str = ""
    """Signs login sessions; empty: a random one per process (logins end at restart).
    Otherwise at least :data:`MIN_SECRET_BYTES` bytes."""
    body_timeout_seconds: float = 30.0
    """How long the server waits for the next piece of a request body before it answers 408
    and closes the connection (a client stalling mid-upload must not hold a worker)."""
    header_timeout_seconds: float = 30.0
    """How long a client has, from connecting (or from the previous response on a kept-alive
    connection), to complete a request's line and headers; then the connection is closed
    (with a 408 if part of a request came). uvicorn has no such limit of its own."""
    validation_games: int = 2
    reference_bots: tuple[str, ...] = ("random",)
    log_limit_bytes: int = 16 * KiB
    turn_limit: int = 1000
    time_control: TimeControl = field(default_factory=TimeControl)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    ladder: LadderSettings = field(default_factory=LadderSettings)

    def __post_init__(self) -> None:
        positive = {
            "port": self.port,
            "max_upload_bytes": self.max_upload_bytes,
            "writes_per_minute": self.writes_per_minute,
            "auth_failures_per_minute": self.auth_failures_per_minute,
            "token_days": self.token_days,
            "session_hours": self.session_hours,
            "validation_games": self.validation_games,
            "log_limit_bytes": self.log_limit_bytes,
            "turn_limit": self.turn_limit,
            "ladder.games_per_series": self.ladder.games_per_series,
            "ladder.concurrency": self.ladder.concurrency,
        }
        if type(self.port) is int and self.port > 65535:
            raise SettingsError(f"port must be in 0..65535, got {self.port}")
        for name, value in positive.items():
            if name == "port" and value == 0:
                continue  # port 0: any free port (tests)
            if type(value) is not int or value < 1:
                raise SettingsError(f"{name} must be a positive integer, got {value!r}")
        for name in ("body_timeout_seconds", "header_timeout_seconds"):
            timeout = getattr(self, name)
            if type(timeout) not in (int, float) or not 0 < timeout <= 3600:
                raise SettingsError(
                    f"{name} must be a number of seconds in (0, 3600], got {timeout!r}"
                )
        if self.ladder.budget_games < 0:
            raise SettingsError(f"ladder.budget_games must be >= 0, got {self.ladder.budget_games}")
        if self.ladder.lease_seconds <= 0 or self.ladder.poll_seconds <= 0:
            raise SettingsError(
                "ladder.lease_seconds and ladder.poll_seconds must be positive, got "
                f"{self.ladder.lease_seconds!r} and {self.ladder.poll_seconds!r}"
            )
        if not 0 <= self.ladder.seed < 2**SEED_BITS:
            raise SettingsError(
                f"ladder.seed must be in [0, 2**{SEED_BITS}) (0: a secret one), "
                f"got {self.ladder.seed!r}"
            )
        if self.ladder.executor not in ("local", "dask"):
            raise SettingsError(
                f"ladder.executor must be 'local' or 'dask', got {self.ladder.executor!r}"
            )
        if self.ladder.scheduler and self.ladder.executor != "dask":
            raise SettingsError(
                f"ladder.scheduler {self.ladder.scheduler!r} needs ladder.executor 'dask'"
            )
        problem = self.ladder.scheduler and scheduler_address_problem(self.ladder.scheduler)
        if problem:
            raise SettingsError(
                f"ladder.scheduler {self.ladder.scheduler!r} is not a Dask scheduler address:"
                f" {problem}"
            )
        if type(self.ladder.dask_workers) is not int or self.ladder.dask_workers < 1:
            raise SettingsError(
                f"ladder.dask_workers must be a positive integer, got {self.ladder.dask_workers!r}"
            )
        if type(self.max_upload_bytes) is int and self.max_upload_bytes > MAX_UPLOAD_LIMIT:
            raise SettingsError(
                f"max_upload_bytes must be at most {MAX_UPLOAD_LIMIT} (the submission size "
                f"limit), got {self.max_upload_bytes}"
            )
        if type(self.token_days) is int and self.token_days > MAX_LIFETIME_DAYS:
            raise SettingsError(
                f"token_days must be in 1..{MAX_LIFETIME_DAYS}, got {self.token_days}"
            )
        if not self.reference_bots:
            raise SettingsError("reference_bots needs at least one bundled example bot")
        bundled = bundled_examples()
        unknown = [name for name in self.reference_bots if name not in bundled]
        if unknown:
            verb = "is not a bundled example bot" if len(unknown) == 1 else "are not bundled bots"
            raise SettingsError(
                f"reference_bots: {', '.join(repr(n) for n in unknown)} {verb} "
                f"(bundled: {', '.join(bundled) or 'none'})"
            )
        if type(self.secret) is not str:
            raise SettingsError(f"secret must be text, got {type(self.secret).__name__}")
        size = len(self.secret.encode("utf-8", "surrogateescape"))
        if self.secret and size < MIN_SECRET_BYTES:
            # Never the value itself: it is a secret, and messages end up in logs.
            raise SettingsError(
                f"secret (KRYT_ARENA_SECRET) must be at least {MIN_SECRET_BYTES} bytes, got "
                f"{size}; e.g. python -c 'import secrets; print(secrets.token_hex(32))'"
            )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> ServiceSettings:
        """Defaults, then ``KRYT_ARENA_<NAME>`` variables (``KRYT_ARENA_LADDER_<NAME>`` for the
        ladder, ``KRYT_ARENA_SANDBOX_<NAME>`` for the sandbox), then ``overrides``."""
        env = os.environ if environ is None else environ
        top = _read(cls, env, ENV_PREFIX, skip={"time_control", "sandbox", "ladder"})
        ladder = LadderSettings(**_read(LadderSettings, env, ENV_PREFIX + "LADDER_"))
        sandbox = SandboxSettings(**_read(SandboxSettings, env, ENV_PREFIX + "SANDBOX_"))
        settings = cls(**top, ladder=ladder, sandbox=sandbox)
        ladder_overrides = {k[7:]: v for k, v in overrides.items() if k.startswith("ladder_")}
        plain = {k: v for k, v in overrides.items() if not k.startswith("ladder_")}
        if ladder_overrides:
            plain["ladder"] = replace(settings.ladder, **ladder_overrides)
        return replace(settings, **plain)


def _read(
    kind: type[Any],
    env: Mapping[str, str],
    prefix: str,
    skip: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    defaults = kind()
    for f in fields(kind):
        if f.name in skip:
            continue
        raw = env.get(prefix + f.name.upper())
        if raw is None:
            continue
        values[f.name] = _convert(getattr(defaults, f.name), raw, prefix + f.name.upper())
    return values


def _convert(default: object, raw: str, name: str) -> object:
    try:
        if isinstance(default, bool):
            lowered = raw.strip().lower()
            if lowered not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                raise ValueError(raw)
            return lowered in {"1", "true", "yes", "on"}
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, Path):
            return Path(raw)
        if isinstance(default, tuple):
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        return raw
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a valid {type(default).__name__}") from None
