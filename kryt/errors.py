"""Exit codes and the mapping from typed errors to one clear line for the user."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What ``kryt`` exits with."""

    OK = 0
    FAILED = 1
    """The command ran but found problems (a bot check failed, a replay did not verify)."""
    BAD_INPUT = 2
    """Wrong flag, malformed file, invalid bot or action: fix the input and retry."""
    UNAVAILABLE = 3
    """A service is missing or unreachable (database, Docker engine)."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (work done so far is kept; ``resume`` continues)."""


class UserError(Exception):
    """An error to show as one line, with a hint, and exit with ``code``."""

    def __init__(self, message: str, *, code: ExitCode = ExitCode.BAD_INPUT, hint: str = ""):
        super().__init__(message)
        self.code = code
        self.hint = hint


def classify(exc: BaseException) -> UserError | None:
    """The user-facing form of a known error type, or ``None`` for a bug (shown in full)."""
    from arena.db.errors import DatabaseError, DatabaseUnavailableError
    from referee.rules.errors import RulesError

    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, DatabaseUnavailableError):
        return UserError(
            str(exc),
            code=ExitCode.UNAVAILABLE,
            hint="check --database / KRYT_DATABASE_URL and that the server is running",
        )
    if isinstance(exc, DatabaseError):
        return UserError(str(exc), code=ExitCode.BAD_INPUT)
    if isinstance(exc, RulesError):
        return UserError(str(exc))
    from arena.tournament.config import ConfigError
    from arena.tournament.runner import TournamentError
    from leaderboard.ratings import RatingsError
    from sandbox.errors import SandboxError, SandboxInfrastructureError
    from sandbox.submission import SubmissionError

    if isinstance(exc, SubmissionError | ConfigError | TournamentError | RatingsError):
        return UserError(str(exc))
    from referee.series import SeriesConfigError
    from sdk.examples import UnknownBuiltinError

    if isinstance(exc, SeriesConfigError | UnknownBuiltinError):
        return UserError(str(exc))

    if isinstance(exc, SandboxInfrastructureError):
        return UserError(str(exc), code=ExitCode.UNAVAILABLE)
    if isinstance(exc, SandboxError):
        return UserError(str(exc))
    return None
