"""Opening the results database: engine settings per backend, migrations, sessions."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DatabaseError as DriverDatabaseError
from sqlalchemy.exc import (
    DBAPIError,
    IntegrityError,
    InterfaceError,
    InternalError,
    OperationalError,
)
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Session

from arena.db.errors import (
    ConflictError,
    DatabaseError,
    DatabaseMissingError,
    DatabaseUnavailableError,
)
from arena.db.url import backend_of, mask_url, resolve_database_url

log = logging.getLogger(__name__)

T = TypeVar("T")

# How long a SQLite writer waits for another one before giving up (seconds).
SQLITE_BUSY_TIMEOUT_S = 60.0
POSTGRES_CONNECT_TIMEOUT_S = 10
READ_ONLY_OPTION = "kryt_read_only"
"""Execution option of a connection that only reads: on SQLite its transactions begin
deferred (``BEGIN``), taking no write lock."""
_READ_ONLY = READ_ONLY_OPTION

RETRY_SECONDS_ENV = "KRYT_DATABASE_RETRY_SECONDS"
"""Environment variable: how long (seconds) a tournament run's database work (its writes, and
the reads of its series and of its coordinator) that lost its database connection (a
PostgreSQL restart, connections terminated) is retried before the error is raised."""
DEFAULT_RETRY_SECONDS = 60.0
MAX_RETRY_SECONDS = 24 * 3600.0
RETRY_FIRST_DELAY_S = 0.25
"""The first pause between two tries of a write; it doubles up to RETRY_MAX_DELAY_S."""
RETRY_MAX_DELAY_S = 5.0


class Database:
    """An open results database: its engine and transactional sessions.

    Use :meth:`session` for anything that writes (commits on success, rolls back on any
    exception, so a block is all-or-nothing) and :meth:`read_session` for queries.
    Do not share one across ``fork()``: open the database again in the child process.
    """

    def __init__(
        self,
        url: str,
        engine: Engine,
        *,
        created: bool = False,
        read_only: str | None = None,
        retry: float | None = None,
    ) -> None:
        self.url = url
        self.engine = engine
        self.backend = backend_of(url)
        self.created = created
        """Whether opening it created the SQLite file (there was none at its path)."""
        self.read_only = read_only
        """Why this process cannot write the SQLite file (it was opened read-only: queries
        work, :meth:`session` is refused), or None."""
        self.path: Path | None = None
        """The SQLite file (absolute), None on PostgreSQL."""
        self._file_id: tuple[int, int] | None = None
        if self.backend == "sqlite":
            self.path = sqlite_path(url)
            self._file_id = _file_id(self.path)
        read_options: dict[str, Any] = {_READ_ONLY: True}
        if self.backend == "postgresql":
            # One snapshot per read, as SQLite's WAL gives: under READ COMMITTED each
            # statement saw newer games, so one answer (a board and its progress, an
            # export's pages) could count two different states of a running tournament.
            # (Not psycopg's read_only: setting it, and SQLAlchemy setting it back to False,
            # would make every later transaction BEGIN READ WRITE explicitly, overriding a
            # server's default_transaction_read_only.)
            read_options |= {"isolation_level": "REPEATABLE READ"}
        self._read_engine = engine.execution_options(**read_options)
        self.retry_seconds = retry_seconds() if retry is None else retry
        """How long :meth:`retrying` retries work that lost its connection (seconds;
        ``KRYT_DATABASE_RETRY_SECONDS``, default :data:`DEFAULT_RETRY_SECONDS`)."""
        self._notes = outage_notes(self.display_url)

    @property
    def display_url(self) -> str:
        """The URL with the password hidden."""
        return mask_url(self.url)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        Driver-level failures surface as :class:`DatabaseUnavailableError` and constraint
        violations as :class:`ConflictError`, so callers need only catch ``DatabaseError``.
        A SQLite file deleted, moved or replaced since it was opened
        (:meth:`file_problem`) refuses the write (``DatabaseUnavailableError``): it would
        go to a file nobody can open again; so does a file opened read-only
        (:attr:`read_only`), before anything is tried.
        """
        self.check_writable()
        if problem := self.file_problem():
            raise DatabaseUnavailableError(problem)
        with (
            _translated(self.display_url),
            Session(self.engine, expire_on_commit=False) as s,
            s.begin(),
        ):
            yield s

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A read-only unit of work (never blocks SQLite writers); nothing is committed. It
        reads one snapshot of the database on both backends (REPEATABLE READ on PostgreSQL)."""
        with (
            _translated(self.display_url),
            Session(self._read_engine, expire_on_commit=False) as s,
            s.begin(),
        ):
            try:
                yield s
            finally:
                s.rollback()

    def retrying(
        self,
        work: Callable[[Session], T],
        *,
        what: str,
        window: float | None = None,
        cancel: threading.Event | None = None,
        sleep: Callable[[float], object] = time.sleep,
        read: bool = False,
    ) -> T:
        """``work(session)`` in a write transaction (:meth:`session`; ``read``: in a
        read-only one, :meth:`read_session`), tried again in a fresh transaction while it
        fails because the connection to the database was lost (:func:`lost_connection`: a
        PostgreSQL restart, connections terminated), for up to ``window`` seconds (default
        :attr:`retry_seconds`) with a growing pause; then the last error is raised. Any
        other error is raised at once: a constraint violation, a lost lease, SQLite's
        "database is locked" or a full disk are not outages.

        ``work`` must be safe to run again after a try whose commit reached the database but
        whose acknowledgement was lost: check for what it writes, or write it under a key
        that makes the second write a no-op (a read is always safe). ``what`` names the work
        in the notes: one line (a warning) when the database is lost and one when it is
        back, once per outage for every caller of this database. Setting ``cancel`` ends
        the pauses early and raises the last error (a run that is being stopped).
        """
        opened = self.read_session if read else self.session

        def attempt() -> T:
            with opened() as session:
                return work(session)

        return self.retrying_call(attempt, what=what, window=window, cancel=cancel, sleep=sleep)

    def retrying_call(
        self,
        call: Callable[[], T],
        *,
        what: str,
        window: float | None = None,
        cancel: threading.Event | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ) -> T:
        """:meth:`retrying` for work that opens its own sessions of this database (a helper
        that takes the database, not a session): ``call()`` is called again while it fails
        with a lost connection, with the same window, pauses and notes."""
        return retry_lost_connection(
            call,
            what=what,
            window=self.retry_seconds if window is None else window,
            notes=self._notes,
            cancel=cancel,
            sleep=sleep,
        )

    def check_writable(self) -> None:
        """DatabaseUnavailableError (one line saying what to do) when the database was
        opened read-only (:attr:`read_only`): a command that will write can refuse before
        it starts anything."""
        if self.read_only is not None:
            raise DatabaseUnavailableError(
                f"database {self.display_url} is read-only here ({self.read_only}): this"
                " command writes to it, and nothing was written; reading commands (kryt"
                " leaderboard, kryt tournament status, kryt games list) work on it. Make the"
                " file, its -wal and -shm files (if any) and its folder writable, or copy the"
                " file (with its -wal, if any) somewhere writable and use --database on the copy"
            )

    def file_problem(self) -> str | None:
        """SQLite: why the file at :attr:`path` is not the file this database opened (it was
        deleted, moved or replaced: what is written goes to a file nobody can open again,
        so :meth:`session` refuses), or None. Always None on PostgreSQL. Cheap: one
        ``stat``."""
        if self.path is None:
            return None
        now = _file_id(self.path)
        if now is None:
            return (
                f"database file {self.path} is gone (deleted or moved since this process"
                " opened it): writes are refused, they would be lost; stop this process and"
                " put the file back (or restore a backup)"
            )
        if self._file_id is not None and now != self._file_id:
            return (
                f"database file {self.path} is no longer the file this process opened"
                " (replaced, or deleted and created again): writes are refused, they would"
                " be lost; stop this process and check which file holds the arena"
            )
        return None

    def close(self) -> None:
        """Release every pooled connection."""
        self.engine.dispose()

    def discard_if_unused(self) -> bool:
        """Close, and remove the SQLite file opening it created when it still holds no
        tournament and no game: a command refused before it stored one (a misspelt bot
        name, a file with no games) leaves no empty arena behind, where the next command
        would find a database instead of none. True when the file was removed; any other
        database (PostgreSQL, a file that was there before, one now in use) is only closed.
        """
        try:
            if not self.created or self.path is None or self.read_only is not None:
                return False
            if self.file_problem() is not None:  # no longer the file it created
                return False
            with self.read_session() as session:
                used = session.execute(
                    text("select exists(select 1 from tournaments) or exists(select 1 from games)")
                ).scalar()
            if used:
                return False
            self.close()
            _unlink_sqlite_files(self.path)
            return True
        except (OSError, DBAPIError, DatabaseError):  # it stays; the error at hand is reported
            log.debug("could not remove %s", self.path, exc_info=True)
            return False
        finally:
            self.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.display_url!r})"


def retry_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long a write that lost its connection is retried: ``KRYT_DATABASE_RETRY_SECONDS``
    (seconds, 0 to fail at once; empty or unset: :data:`DEFAULT_RETRY_SECONDS`).
    DatabaseError (one line naming the variable) for a value that is not such a number."""
    env = os.environ if environ is None else environ
    raw = env.get(RETRY_SECONDS_ENV, "").strip()
    if not raw:
        return DEFAULT_RETRY_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= MAX_RETRY_SECONDS:  # also refuses nan
        raise DatabaseError(
            f"{RETRY_SECONDS_ENV} must be a number of seconds from 0 to"
            f" {MAX_RETRY_SECONDS:g}, got {raw!r}"
        )
    return value


_LOST_STATES = frozenset({"57P01", "57P02", "57P03"})
"""PostgreSQL's SQLSTATEs of a server going away: admin_shutdown (a restart, or
pg_terminate_backend), crash_shutdown, cannot_connect_now (starting up, shutting down)."""
_NOT_AN_OUTAGE = (
    "authentication failed",
    "no pg_hba.conf entry",
    "does not exist",
    "permission denied",
)
"""What a failed PostgreSQL connection says when the server answered and refused us: the
configuration is wrong, waiting will not help."""


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` (a driver error, or one of this package's errors raised from one)
    says the connection to a PostgreSQL server was lost or cannot be made right now: a
    transient outage, worth retrying in a fresh transaction.

    True for an error SQLAlchemy took for a disconnect (``connection_invalidated``), and for
    psycopg's OperationalError of a connection that failed (class 08, a server shutting down
    or starting up, or the client's own connection failure, which carries no SQLSTATE)
    except refused credentials or a missing database. Never for SQLite (its "database is
    locked" and "disk is full" are not outages), a constraint violation, or any other error
    of a statement (PostgreSQL's disk_full, lock_not_available, deadlocks...).
    """
    error = _driver_error(exc)
    if error is None or isinstance(error, IntegrityError) or _is_sqlite(error):
        return False
    if error.connection_invalidated:
        return True
    import psycopg  # here: only an error pays for the import

    orig = error.orig
    if not isinstance(orig, psycopg.OperationalError):
        return False
    state = orig.sqlstate
    if state is not None:
        return state.startswith("08") or state in _LOST_STATES
    message = str(orig).lower()
    return not any(words in message for words in _NOT_AN_OUTAGE)


class OutageNotes:
    """The two notes of a database's outages: a warning when a caller first finds it lost,
    another when a caller gets through again; one pair per outage, however many callers
    (threads) wait for it meanwhile. :func:`outage_notes` gives every caller in a process
    that talks to the same database the same notes."""

    def __init__(self, display_url: str) -> None:
        self.display_url = display_url
        self._lock = threading.Lock()
        self._since: float | None = None

    def lost(self, exc: BaseException, what: str, window: float) -> None:
        """Say (once per outage) that the database cannot be reached (``window``: how long
        the caller retries; 0 when it does not)."""
        with self._lock:
            if self._since is not None:
                return
            self._since = time.monotonic()
        reason = " ".join(str(getattr(_driver_error(exc), "orig", exc)).split())
        if window > 0:
            log.warning(
                "database %s lost while %s (%s): retrying for up to %g s",
                self.display_url,
                what,
                reason,
                round(window, 1),
            )
        else:
            log.warning("database %s lost while %s (%s)", self.display_url, what, reason)

    def back(self) -> None:
        """Say (once) that the database answers again after an outage :meth:`lost` told."""
        if self._since is None:  # the usual case: no lock taken
            return
        with self._lock:
            since, self._since = self._since, None
        if since is not None:
            log.warning(
                "database %s is back after %.1f s; carrying on",
                self.display_url,
                time.monotonic() - since,
            )


_notes_by_url: weakref.WeakValueDictionary[str, OutageNotes] = weakref.WeakValueDictionary()
_notes_lock = threading.Lock()


def outage_notes(display_url: str) -> OutageNotes:
    """The outage notes of the database at ``display_url`` in this process, shared by all
    that use it (a tournament's coordinator and its series each open the database: one
    outage is told once, not once per open database)."""
    with _notes_lock:
        notes = _notes_by_url.get(display_url)
        if notes is None:
            notes = _notes_by_url[display_url] = OutageNotes(display_url)
        return notes


def retry_lost_connection(
    call: Callable[[], T],
    *,
    what: str,
    window: float,
    notes: OutageNotes,
    cancel: threading.Event | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> T:
    """``call()``, called again while it fails because the connection to the database was
    lost (:func:`lost_connection`), for up to ``window`` seconds with pauses growing from
    :data:`RETRY_FIRST_DELAY_S` to :data:`RETRY_MAX_DELAY_S`; then the last error is
    raised, and any other error at once. ``notes`` tells the outage (``what``: what was
    being done). Setting ``cancel`` ends the pauses early and raises the last error.

    The loop behind :meth:`Database.retrying`; called directly where there is no
    :class:`Database` yet (opening one, see :func:`open_database`)."""
    deadline: float | None = None
    delay = RETRY_FIRST_DELAY_S
    while True:
        try:
            result = call()
        except (DatabaseUnavailableError, DBAPIError) as exc:
            if not lost_connection(exc):
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + window
                retried = cancel is None or not cancel.is_set()
                notes.lost(exc, what, window if retried else 0.0)
            left = deadline - now
            if left <= 0 or (cancel is not None and cancel.is_set()):
                raise
            pause = min(delay, left)
            if cancel is not None:
                cancel.wait(pause)
            else:
                sleep(pause)
            delay = min(delay * 2, RETRY_MAX_DELAY_S)
            continue
        notes.back()
        return result


def _driver_error(exc: BaseException) -> DBAPIError | None:
    """The SQLAlchemy driver error ``exc`` is or was raised from (its causes), or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, DBAPIError):
            return current
        seen.add(id(current))
        # Causes only (``raise ... from``): an error merely raised while another was being
        # handled is not that error.
        current = current.__cause__
    return None


def sqlite_path(url: str) -> Path:
    """The absolute path of the file a ``sqlite:///`` URL names."""
    database = make_url(url).database
    assert database is not None  # normalize_url guarantees a file name
    return Path(database).absolute()


def _file_id(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of a file, None when there is none at ``path``."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


@contextmanager
def _translated(where: str) -> Iterator[None]:
    """Map SQLAlchemy driver errors to the typed errors of this package."""
    try:
        yield
    except DatabaseError:
        raise
    except IntegrityError as exc:
        raise ConflictError(f"write to {where} rejected by a constraint: {exc.orig}") from exc
    except (OperationalError, InterfaceError) as exc:
        if "locked" in str(exc.orig):
            hint = (
                f"another writer held the lock longer than {SQLITE_BUSY_TIMEOUT_S:.0f} s; "
                "retry, or use PostgreSQL for many concurrent writers"
            )
        elif "no such table" in str(exc.orig) or "no such column" in str(exc.orig):
            # The revision says the schema is complete: a table or column was dropped by hand.
            hint = (
                "the database's schema is damaged (a table or column of its revision is"
                " missing); restore a backup"
            )
        else:
            hint = "check that it is reachable and has free space"
        raise DatabaseUnavailableError(f"database {where} failed: {exc.orig}; {hint}") from exc
    except DriverDatabaseError as exc:
        if not _damaged(exc):
            raise  # a bug (bad SQL, a value the driver refuses): shown in full
        # The transaction is rolled back: nothing more is written to a damaged database.
        raise DatabaseUnavailableError(
            f"database {where} is damaged ({exc.orig}); nothing was written to it"
        ) from exc


_DAMAGE = ("malformed", "not a database", "corrupt")
"""What SQLite says of a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB)."""


def _is_sqlite(exc: DBAPIError) -> bool:
    return isinstance(exc.orig, sqlite3.Error)


def _damaged(exc: DBAPIError) -> bool:
    """Whether a driver error says the database itself is damaged (not that a statement is
    wrong): a SQLite file with a broken page, or PostgreSQL's data-corruption errors."""
    if _is_sqlite(exc):
        return any(word in str(exc.orig).lower() for word in _DAMAGE)
    # PostgreSQL: SQLSTATE class XX (internal error), XX001 data_corrupted, XX002
    # index_corrupted; psycopg raises them as InternalError.
    code = getattr(exc.orig, "sqlstate", None)
    return isinstance(exc, InternalError) and isinstance(code, str) and code.startswith("XX")


def open_database(
    url: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    upgrade: bool = True,
    check_schema: bool = True,
) -> Database:
    """Open (and by default create and migrate) the results database.

    ``url`` takes precedence over ``KRYT_DATABASE_URL``, then ``./kryt.db`` (see
    :func:`resolve_database_url`); a plain path means a SQLite file. With ``create=False``
    a missing SQLite file raises :class:`DatabaseMissingError` instead of being created.
    With ``upgrade=False`` a database behind the code raises ``SchemaOutdatedError``.
    A schema newer than the code raises ``SchemaTooNewError``; nothing is ever dropped.
    Another application's database, one whose revision table is damaged or one newer than
    the code is refused before anything is written to it (see
    :func:`arena.db.migrate.check_database`).

    An existing SQLite file that this process cannot write (the file, its ``-wal`` or
    ``-shm`` file or its folder is read-only: permissions, a read-only mount) is opened
    read-only (:attr:`Database.read_only`): queries work, every write transaction is
    refused with one line, and a database that would need migrating is refused.
    """
    resolved = resolve_database_url(url)
    where = mask_url(resolved)
    retry = retry_seconds()  # a malformed setting refuses before anything is opened
    created = False
    read_only: str | None = None
    if backend_of(resolved) == "sqlite":
        path = sqlite_path(resolved)
        try:
            created = not path.exists()
            special = not created and not path.is_file() and not path.is_dir()
        except OSError as exc:  # a folder on the way this user may not enter
            raise DatabaseUnavailableError(
                f"cannot open SQLite database {path}: {exc.strerror or exc}; check the"
                " permissions of the file and its folders, or choose another path"
            ) from None
        if special:
            # A device or a pipe (-d /dev/null): SQLite waited out its busy timeout on it,
            # then said another writer held the lock.
            raise DatabaseUnavailableError(
                f"cannot open SQLite database {path}: not a regular file (a device, a pipe"
                " or a socket); point KRYT_DATABASE_URL (or the -d/--database option) at a"
                " database file"
            )
        if not create and check_schema and _empty_file(path):
            # SQLite would take it as a new database, and migrating it would write the
            # schema: a truncated kryt.db (a failed copy) would read as an empty arena.
            raise DatabaseMissingError(
                f"{path} is an empty file (0 bytes), not a database; was it truncated?"
                " Restore it from a backup, or point KRYT_DATABASE_URL (or the -d/--database"
                " option) at an existing database"
            )
        read_only = _read_only_reason(path) if path.is_file() else None
        engine = _sqlite_engine(resolved, create=create, read_only=read_only)
    else:
        engine = create_engine(
            resolved,
            # A pooled connection the server dropped while it sat idle (a restart,
            # pg_terminate_backend) is found by a ping when it is taken, and replaced.
            pool_pre_ping=True,
            connect_args={"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S},
        )
    try:
        _check_connection(engine, where)
        if check_schema:
            with _translated(where):
                # Imported here: `python -m arena.db.migrate` must not find itself imported
                # by the package already (runpy warns).
                from arena.db.migrate import upgrade_engine

                upgrade_engine(engine, where=where, allow=upgrade, read_only=read_only)
            if backend_of(resolved) == "sqlite" and read_only is None:
                _use_wal(engine)
    except BaseException:
        engine.dispose()
        if created:
            _remove_if_empty(sqlite_path(resolved))
        raise
    return Database(resolved, engine, created=created, read_only=read_only, retry=retry)


def _remove_if_empty(path: Path) -> None:
    """Remove the SQLite file this process has just failed to create (a full disk leaves
    it at 0 bytes), with the files SQLite keeps beside it: left there, the next command
    would find "an empty file, not a database" instead of no database. A file with
    anything in it is left alone."""
    try:
        if not _empty_file(path):
            return
        _unlink_sqlite_files(path)
    except OSError:  # it stays; the error at hand is the one to report
        log.debug("could not remove %s", path, exc_info=True)


def _unlink_sqlite_files(path: Path) -> None:
    """Remove a SQLite file with the files SQLite keeps beside it (raises OSError)."""
    path.unlink()
    for side in (*_wal_files(path), path.with_name(path.name + "-journal")):
        side.unlink(missing_ok=True)


def _read_only_reason(path: Path) -> str | None:
    """Why this process cannot write the SQLite file at ``path``, or None when it can.

    A write needs the file, its ``-wal`` and ``-shm`` files (when they exist) and its
    folder (where SQLite creates them). ``os.access`` asks the kernel, so this holds for
    root too: root may write a file without write permission, but not on a read-only mount.
    """
    for side in (path, *(p for p in _wal_files(path) if p.exists())):
        if not os.access(side, os.W_OK):
            return f"{side} is not writable by this process"
    if not os.access(path.parent, os.W_OK):
        return f"its folder {path.parent} is not writable by this process"
    return None


def _wal_files(path: Path) -> tuple[Path, Path]:
    """The ``-wal`` and ``-shm`` files SQLite keeps beside a database in WAL mode."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def _read_only_uri(path: Path) -> str:
    """The SQLite URI that opens ``path`` read-only.

    In WAL mode even a reader needs the ``-shm`` file, and creates it when it is missing:
    in a folder it cannot write, with no write-ahead log to read (no ``-wal`` file, or an
    empty one), the file is opened ``immutable`` (SQLite then takes no lock and reads no
    log; nobody without write access to the folder can be writing it: a writer creates the
    ``-wal`` file there). A log with changes in it must be read, which needs its ``-shm``
    file: without it the file cannot be read here (DatabaseUnavailableError, saying how to
    fix it).
    """
    uri = f"file:{quote(str(path))}?mode=ro"
    wal, shm = _wal_files(path)
    if os.access(path.parent, os.W_OK) or shm.exists():
        return uri
    if not wal.exists() or wal.stat().st_size == 0:
        return uri + "&immutable=1"
    raise DatabaseUnavailableError(
        f"cannot read SQLite database {path}: its write-ahead log {wal.name} holds changes,"
        f" and SQLite needs the file {shm.name} beside it to read them, which it cannot"
        f" create in the read-only folder {path.parent}; open the database once where its"
        f" folder is writable (any kryt command folds the log into the file), or copy"
        f" {path.name} and {wal.name} together somewhere writable and use --database on the"
        " copy"
    )


def _use_wal(engine: Engine) -> None:
    """Put a Kryt SQLite file in WAL mode (persistent: once per file; a no-op after)."""
    # On the driver's connection: the mode cannot change inside a transaction, and every
    # SQLAlchemy connection of this engine begins one (_sqlite_on_begin).
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            (mode,) = cursor.execute("PRAGMA journal_mode").fetchone()
            if str(mode).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
        finally:
            cursor.close()
    finally:
        raw.close()


def _sqlite_engine(url: str, *, create: bool, read_only: str | None = None) -> Engine:
    database = make_url(url).database
    assert database is not None  # normalize_url guarantees a file name
    path = Path(database)
    # A command that only reads says the database is not there, whatever is missing on the
    # way to it (it would not create the file, nor its folder).
    if not create and not path.exists():
        raise DatabaseMissingError(
            f"no database at {path}; run a tournament first, or point KRYT_DATABASE_URL "
            "(or the -d/--database option) at an existing database"
        )
    if not path.parent.is_dir():
        # Name what is in the way: a missing folder, or a file where a folder should be.
        blocker = next((p for p in path.parents if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise DatabaseUnavailableError(
                f"cannot create SQLite database {path}: {blocker} is a file, not a directory;"
                " choose another path"
            )
        raise DatabaseUnavailableError(
            f"cannot create SQLite database {path}: directory {path.parent} does not exist; "
            "create it or choose another path"
        )
    if read_only is None:
        engine = create_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
        )
    else:
        # SQLite's own read-only open (mode=ro): it never tries to write the file, so
        # queries work where a read-write open fails (a read-only folder or mount).
        uri = _read_only_uri(path.absolute())

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(
                uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_S, check_same_thread=False
            )

        engine = create_engine(url, creator=connect)
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def _empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _sqlite_on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    # Take transaction control from pysqlite (which would BEGIN lazily, only before a
    # write) so that _sqlite_on_begin decides how each transaction starts.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # WAL (readers never block the writer) is set once the file is known to be ours
        # (_use_wal): it is a property of the file, and another application's file must
        # come out of a refused open unchanged.
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
    finally:
        cursor.close()


def _sqlite_on_begin(connection: Any) -> None:
    # Writers take the write lock up front (BEGIN IMMEDIATE): a deferred transaction that
    # reads and then writes can fail with "database is locked" at once, without waiting
    # for the busy timeout, when another writer committed in between.
    if connection.get_execution_options().get(_READ_ONLY):
        connection.exec_driver_sql("BEGIN")
    else:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _check_connection(engine: Engine, where: str) -> None:
    try:
        # In a read transaction: a writer's BEGIN IMMEDIATE would wait out the busy timeout
        # behind another process's write (WAL lets readers through at once). SQLite reads
        # its file only for a query of a table: the schema's, so a file that is not a
        # database is found here.
        probe = (
            "SELECT count(*) FROM sqlite_master" if engine.dialect.name == "sqlite" else "SELECT 1"
        )
        with engine.execution_options(**{_READ_ONLY: True}).connect() as connection:
            connection.exec_driver_sql(probe)
    except DBAPIError as exc:
        # One line: drivers break their messages over lines (psycopg: a newline and a tab).
        message = " ".join(str(exc.orig).split())
        if "does not exist" in message and "database" in message:
            raise DatabaseMissingError(
                f"database {where} does not exist on the server: {message}; create "
                "it first (e.g. `createdb -O <user> <name>`)"
            ) from exc
        if "file is not a database" in message:
            raise DatabaseUnavailableError(
                f"{where} is not a SQLite database ({message}); choose another file"
            ) from exc
        raise DatabaseUnavailableError(
            f"cannot connect to database {where}: {message}; check that the server "
            "is running and the URL (KRYT_DATABASE_URL or -d/--database) is right"
        ) from exc
