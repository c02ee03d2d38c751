"""Exit codes and the mapping from typed errors to one clear line for the user."""

from __future__ import annotations

import errno
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from types import FrameType


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
    """Stopped by Ctrl-C or SIGTERM (work done so far is kept; ``resume`` continues)."""


def echo_error(line: str) -> None:
    """One line on stderr (an ``error:``, ``hint:`` or ``warning:``), every control character
    of it escaped: an error names inputs (paths, hosts, URLs) as given, and click's echo
    would strip an ESC sequence from them (naming another path than the one given) while
    passing BEL or a bidi override raw."""
    from sandbox.death import printable

    sys.stderr.write(printable(line) + "\n")
    sys.stderr.flush()


class Interrupted(Exception):
    """A command stopped by Ctrl-C (or a signal handled like it) that has said so itself,
    with what was kept: ``kryt`` exits 130 without a line of its own."""


RECEIVED_SIGNALS: list[int] = []
"""Every signal :func:`signals_stop_like_ctrl_c` turned into a stop in this process, in
order (to name it: ``interrupted by SIGTERM``)."""

_held: list[int] = []
"""Signals received inside :func:`signals_held` blocks, raised when the outermost ends."""
_holding = [0]
"""How deep :func:`signals_held` blocks are nested."""
_depth = [0]
"""How deep :func:`signals_stop_like_ctrl_c` blocks are nested (the outermost starts afresh:
``kryt``'s tests run many commands in one process)."""


@contextmanager
def signals_stop_like_ctrl_c(received: list[int] | None = None) -> Iterator[None]:
    """While the block runs, SIGTERM (``kill``, ``docker stop``, systemd) and SIGHUP (the
    terminal closed, an SSH session dropped) stop the command the way Ctrl-C does: they
    raise KeyboardInterrupt in the main thread (inside a :func:`signals_held` block: when it
    ends). A SIGHUP ignored on purpose (``nohup``) stays ignored. Each signal received is
    appended to ``received`` and :data:`RECEIVED_SIGNALS`. The previous handlers come back
    when the block ends; blocks may nest. Outside the main thread (where no handler can be
    set) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        RECEIVED_SIGNALS.append(signum)
        if received is not None:
            received.append(signum)
        if _holding[0]:
            _held.append(signum)
            return
        raise KeyboardInterrupt

    if not _depth[0]:
        RECEIVED_SIGNALS.clear()
        _held.clear()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, interrupt)}
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, interrupt)
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """A block that a stop signal (of :func:`signals_stop_like_ctrl_c`) does not cut short:
    a signal received meanwhile raises KeyboardInterrupt when the block ends, so that what
    the block stores (a tournament, a lease) is either stored and known, or not at all."""
    _holding[0] += 1
    try:
        yield
    except BaseException:
        if _holding[0] == 1:
            _held.clear()  # the block failed: its own error ends the command
        raise
    finally:
        _holding[0] -= 1
    if not _holding[0] and _held:
        _held.clear()
        raise KeyboardInterrupt


def interrupted_by() -> str:
    """`` by SIGTERM`` when a stop signal was received, else "" (Ctrl-C)."""
    if not RECEIVED_SIGNALS:
        return ""
    return f" by {signal.Signals(RECEIVED_SIGNALS[0]).name}"


def stops_on_signals(args: list[str]) -> bool:
    """Whether the command line ``args`` runs a ``kryt tournament`` command: those stop on
    SIGTERM and SIGHUP as on Ctrl-C from the moment ``kryt`` starts (importing the command
    takes a second), see :func:`signals_stop_like_ctrl_c`."""
    group = next((arg for arg in args if not arg.startswith("-")), None)
    return group == "tournament"


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
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        # pathlib's exists() and is_dir() raise it instead of answering False: wherever a
        # path from the command line is looked at, a name no file system takes is one line.
        name = exc.filename if isinstance(exc.filename, str) else str(exc.filename or "")
        shown = repr(name) if len(name) <= 120 else f"{name[:120]!r}... ({len(name)} characters)"
        return UserError(f"file name too long: {shown}")
    if isinstance(exc, DatabaseUnavailableError):
        sqlite = _sqlite_problem(exc)
        if sqlite is not None:
            return sqlite
        server = "postgresql" in str(exc)  # every message names the (masked) database URL
        hint = "check --database / KRYT_DATABASE_URL" + (
            " and that the server is running" if server else ""
        )
        # The driver's message may run over lines (psycopg: "...refused\n\tIs the server
        # running..."): one line, as every error here is.
        message = re.sub(r"\s*\n\s*", " ", str(exc))
        # A message that already says where to point (a missing file) needs no hint.
        return UserError(
            message, code=ExitCode.UNAVAILABLE, hint="" if "--database" in message else hint
        )
    from arena.db.leases import LeaseBusyError

    if isinstance(exc, LeaseBusyError):  # the holder is stuck in a write: try again later
        return UserError(str(exc), code=ExitCode.UNAVAILABLE)
    from arena.db.errors import DamagedSchemaError, ForeignDatabaseError, SchemaTooNewError

    if isinstance(exc, ForeignDatabaseError | DamagedSchemaError | SchemaTooNewError):
        # Not a database this kryt can use, as a file that is not SQLite at all (exit 3
        # too); the message says where to point instead, or what to upgrade.
        return UserError(str(exc), code=ExitCode.UNAVAILABLE)
    if isinstance(exc, DatabaseError):
        return UserError(str(exc), code=ExitCode.BAD_INPUT)
    if isinstance(exc, RulesError):
        return UserError(str(exc))
    from arena.tournament.config import ConfigError
    from arena.tournament.lease import TournamentBusyError
    from arena.tournament.runner import TournamentError

    if isinstance(exc, TournamentBusyError):  # another live run holds the tournament
        return UserError(str(exc), code=ExitCode.UNAVAILABLE)
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
    return _dask_problem(exc)


def _dask_problem(exc: BaseException) -> UserError | None:
    """The user-facing form of a Dask executor set up wrongly (``kryt arena serve`` with
    ``--scheduler garbage``: exit 2) or a scheduler that does not answer (exit 3); None
    otherwise. The module is looked up, not imported: without it (Dask is slow to import)
    no such error can have been raised."""
    dask_executor = sys.modules.get("arena.tournament.dask_executor")
    if dask_executor is None:
        return None
    hint = "check --scheduler (or KRYT_ARENA_LADDER_SCHEDULER); see docs/scaling.md"
    if isinstance(exc, dask_executor.SchedulerUnavailableError):
        return UserError(str(exc).splitlines()[0], code=ExitCode.UNAVAILABLE, hint=hint)
    if isinstance(exc, dask_executor.DaskExecutorError):
        return UserError(str(exc).splitlines()[0], hint=hint)
    return None


_SERVER_ADVICE = "; check that the server is running"
"""How the database layer ends a failed connection's message: advice for PostgreSQL only."""


def _sqlite_problem(exc: BaseException) -> UserError | None:
    """The user-facing form of a SQLite file that cannot be used (read-only, not a database,
    damaged), with a hint about the file instead of a server; None when ``exc`` did not come
    from SQLite."""
    import sqlite3

    cause = exc.__cause__
    reason = getattr(cause, "orig", cause)
    if not isinstance(reason, sqlite3.Error):
        return None
    message = str(exc)
    # The connection's message may end with the server advice: it does not apply to a file.
    message = message.split(_SERVER_ADVICE, 1)[0]
    text = str(reason).lower()
    named = re.search(r"sqlite:///(/[^:]*|[^/:][^:]*)(?=: )", message)
    if named is not None and "unable to open" in text and Path(named.group(1)).is_dir():
        hint = (
            f"{named.group(1)} is a directory: --database / KRYT_DATABASE_URL names the"
            f" database file (e.g. {Path(named.group(1)) / 'kryt.db'})"
        )
    elif "readonly" in text or "read-only" in text or "unable to open" in text:
        hint = (
            "the SQLite file (or its folder, where SQLite keeps the -wal and -shm files beside"
            " it) is not writable by you: fix the permissions, or copy the file somewhere"
            " writable and use --database on the copy"
        )
    elif "not a database" in text or "malformed" in text or "corrupt" in text:
        hint = (
            "the file is not a Kryt database (or it is damaged; Kryt does not write to it):"
            " point --database / KRYT_DATABASE_URL at a Kryt database (restore a damaged one"
            " from a backup), or at a new file to start one"
        )
    else:
        hint = "check the SQLite file named by --database / KRYT_DATABASE_URL"
    return UserError(message, code=ExitCode.UNAVAILABLE, hint=hint)
