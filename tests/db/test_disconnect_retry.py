"""Riding out a lost database connection: which errors are retried (a lost PostgreSQL
connection, nothing else), how long, and that a retried game write stores the game once."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

import psycopg
import psycopg.errors
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlmodel import Session, select

from arena.db import (
    ConflictError,
    Database,
    DatabaseError,
    DatabaseUnavailableError,
    open_database,
)
from arena.db.engine import (
    DEFAULT_RETRY_SECONDS,
    RETRY_SECONDS_ENV,
    _translated,
    lost_connection,
    retry_seconds,
)
from arena.db.models import Game
from arena.tournament.runner import GameWrite
from tests.db.conftest import postgres_admin_url
from tests.db.helpers import World, build_world, game, void
from tests.db.postgres_admin import allow_connections, terminate_connections


def _operational(orig: Exception, *, invalidated: bool = False) -> OperationalError:
    return OperationalError("SELECT 1", {}, orig, connection_invalidated=invalidated)


def _translated_error(exc: Exception) -> DatabaseUnavailableError:
    """``exc`` as Database.session() raises it."""
    with pytest.raises(DatabaseUnavailableError) as raised, _translated("db"):
        raise exc
    return raised.value


TERMINATED = _operational(
    psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
    invalidated=True,
)
"""What a connection ended by pg_terminate_backend raises (SQLAlchemy saw a disconnect)."""

LOST = [
    pytest.param(TERMINATED, id="terminated-invalidated"),
    pytest.param(
        _operational(psycopg.errors.AdminShutdown("terminating connection")),
        id="admin-shutdown",
    ),
    pytest.param(
        _operational(psycopg.errors.CannotConnectNow("the database system is starting up")),
        id="starting-up",
    ),
    pytest.param(
        _operational(psycopg.errors.ConnectionFailure("connection failure")), id="class-08"
    ),
    pytest.param(
        _operational(
            psycopg.OperationalError(
                'connection failed: connection to server at "127.0.0.1", port 5432 failed:'
                " Connection refused\n\tIs the server running on that host?"
            )
        ),
        id="refused",
    ),
    pytest.param(
        _operational(
            psycopg.OperationalError(
                'connection failed: FATAL:  database "x" is not currently accepting connections'
            )
        ),
        id="not-accepting",
    ),
    pytest.param(
        _operational(
            psycopg.OperationalError(
                "consuming input failed: server closed the connection unexpectedly"
            )
        ),
        id="closed",
    ),
]

NOT_LOST = [
    pytest.param(
        IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key")),
        id="unique-violation",
    ),
    pytest.param(
        IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")),
        id="sqlite-unique",
    ),
    pytest.param(_operational(sqlite3.OperationalError("database is locked")), id="sqlite-locked"),
    pytest.param(
        _operational(sqlite3.OperationalError("database or disk is full")), id="sqlite-full"
    ),
    pytest.param(
        _operational(sqlite3.OperationalError("disk I/O error"), invalidated=True),
        id="sqlite-invalidated",
    ),
    pytest.param(
        _operational(psycopg.errors.DiskFull("could not extend file")), id="postgres-disk-full"
    ),
    pytest.param(
        _operational(psycopg.errors.LockNotAvailable("lock timeout")), id="lock-not-available"
    ),
    pytest.param(_operational(psycopg.errors.DeadlockDetected("deadlock detected")), id="deadlock"),
    pytest.param(
        _operational(psycopg.errors.QueryCanceled("canceling statement")), id="query-canceled"
    ),
    pytest.param(
        _operational(
            psycopg.OperationalError(
                "connection failed: FATAL:  password authentication failed for user 'kryt'"
            )
        ),
        id="bad-password",
    ),
    pytest.param(
        _operational(
            psycopg.OperationalError('connection failed: FATAL:  database "x" does not exist')
        ),
        id="no-database",
    ),
    pytest.param(
        DBAPIError("SELECT", {}, psycopg.errors.SyntaxError("syntax error")), id="bad-sql"
    ),
    pytest.param(ConflictError("game 1 is already recorded"), id="conflict"),
    pytest.param(DatabaseUnavailableError("database file gone"), id="file-gone"),
    pytest.param(RuntimeError("boom"), id="not-a-database-error"),
]


@pytest.mark.parametrize("error", LOST)
def test_a_lost_connection_is_retried(error: OperationalError) -> None:
    assert lost_connection(error)
    # As the database layer raises it (DatabaseUnavailableError from the driver's error).
    assert lost_connection(_translated_error(error))


@pytest.mark.parametrize("error", NOT_LOST)
def test_anything_else_is_never_retried(error: Exception) -> None:
    assert not lost_connection(error)
    if isinstance(error, OperationalError):
        assert not lost_connection(_translated_error(error))


def test_only_a_cause_counts_not_an_error_being_handled() -> None:
    try:
        try:
            raise TERMINATED
        except OperationalError:
            raise DatabaseUnavailableError("something else") from None
    except DatabaseUnavailableError as exc:
        assert not lost_connection(exc)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", DEFAULT_RETRY_SECONDS), ("  ", DEFAULT_RETRY_SECONDS), ("0", 0.0), ("2.5", 2.5)],
)
def test_retry_seconds_setting(raw: str, expected: float) -> None:
    assert retry_seconds({RETRY_SECONDS_ENV: raw}) == expected
    assert retry_seconds({}) == DEFAULT_RETRY_SECONDS


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "inf", "1e9"])
def test_a_bad_retry_setting_is_refused_in_one_line(raw: str) -> None:
    with pytest.raises(DatabaseError, match=RETRY_SECONDS_ENV) as raised:
        retry_seconds({RETRY_SECONDS_ENV: raw})
    assert repr(raw) in str(raised.value) and "\n" not in str(raised.value)


# ---------------------------------------------------------------------------- retrying


class Flaky:
    """Work that fails with ``error`` ``times`` times, then returns 42."""

    def __init__(self, error: Exception, times: int) -> None:
        self.error = error
        self.times = times
        self.calls = 0

    def __call__(self, session: Session) -> int:
        self.calls += 1
        session.execute(text("SELECT 1"))
        if self.calls <= self.times:
            raise self.error
        return 42


def test_a_lost_connection_is_retried_until_it_works_with_one_note_each_way(
    sqlite_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    pauses: list[float] = []
    work = Flaky(TERMINATED, 4)
    with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
        assert sqlite_db.retrying(work, what="testing", window=600, sleep=pauses.append) == 42
    assert work.calls == 5
    assert pauses == [0.25, 0.5, 1.0, 2.0]  # backing off
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 2, notes
    assert "lost while testing" in notes[0] and "retrying for up to 600 s" in notes[0]
    assert "administrator command" in notes[0]
    assert "is back after" in notes[1]


def test_the_retries_end_with_the_window(sqlite_db: Database) -> None:
    work = Flaky(TERMINATED, 10**6)
    with pytest.raises(DatabaseUnavailableError) as raised:
        sqlite_db.retrying(work, what="testing", window=0.3)
    assert lost_connection(raised.value)
    assert 2 <= work.calls < 100


def test_a_window_of_zero_tries_once(sqlite_db: Database) -> None:
    work = Flaky(TERMINATED, 10**6)
    with pytest.raises(DatabaseUnavailableError):
        sqlite_db.retrying(work, what="testing", window=0)
    assert work.calls == 1


def test_a_cancelled_retry_ends_at_once(sqlite_db: Database) -> None:
    cancel = threading.Event()
    cancel.set()
    work = Flaky(TERMINATED, 10**6)
    with pytest.raises(DatabaseUnavailableError):
        sqlite_db.retrying(work, what="testing", window=600, cancel=cancel)
    assert work.calls == 1


def test_a_try_that_is_not_retried_says_so_in_its_note(
    sqlite_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    cancel = threading.Event()
    cancel.set()
    with (
        caplog.at_level(logging.WARNING, logger="arena.db.engine"),
        pytest.raises(DatabaseUnavailableError),
    ):
        sqlite_db.retrying(Flaky(TERMINATED, 1), what="polling", window=600, cancel=cancel)
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "lost while polling (" in notes[0], notes
    assert "retrying" not in notes[0], notes


class Outage:
    """Work on any database that fails while the outage lasts (``down``), then returns 42."""

    def __init__(self) -> None:
        self.down = True
        self.calls = 0

    def __call__(self, session: Session) -> int:
        self.calls += 1
        session.execute(text("SELECT 1"))
        if self.down:
            raise TERMINATED
        return 42


def test_one_outage_is_told_once_by_all_the_open_databases_of_a_url(
    sqlite_db: Database, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """A tournament's coordinator and its series each open the database: the outage both
    meet is one note when it is lost and one when it is back, not a pair per database."""
    outage = Outage()
    series_db = open_database(sqlite_db.url)
    elsewhere = open_database(f"sqlite:///{tmp_path}/other.db")

    def coordinator_pause(seconds: float) -> None:
        # While the coordinator waits, a series meets the same outage, which then ends.
        def series_pause(seconds: float) -> None:
            outage.down = False

        assert series_db.retrying(outage, what="reading series", sleep=series_pause) == 42

    try:
        with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
            got = sqlite_db.retrying(outage, what="reading settings", sleep=coordinator_pause)
            assert got == 42
            outage.down = True
            with pytest.raises(DatabaseUnavailableError):
                elsewhere.retrying(outage, what="reading elsewhere", window=0)
    finally:
        series_db.close()
        elsewhere.close()
    assert outage.calls == 5
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 3, notes
    assert "lost while reading settings" in notes[0] and "is back after" in notes[1], notes
    assert "other.db lost while reading elsewhere" in notes[2], notes  # another database


@pytest.mark.parametrize("error", NOT_LOST[:4])
def test_other_errors_are_raised_at_once(sqlite_db: Database, error: Exception) -> None:
    work = Flaky(error, 1)
    with pytest.raises((DatabaseError, DBAPIError)):
        sqlite_db.retrying(work, what="testing", window=600)
    assert work.calls == 1


def test_the_retry_window_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RETRY_SECONDS_ENV, "7")
    with open_database(f"sqlite:///{tmp_path}/k.db") as database:
        assert database.retry_seconds == 7.0
    monkeypatch.setenv(RETRY_SECONDS_ENV, "never")
    with pytest.raises(DatabaseError, match=RETRY_SECONDS_ENV):
        open_database(f"sqlite:///{tmp_path}/k.db")


# ---------------------------------------------------------------------------- one game, once


@pytest.mark.parametrize("voided", [False, True], ids=["counted", "voided"])
def test_a_game_whose_commit_was_not_acknowledged_is_stored_once(
    db: Database, world: World, voided: bool
) -> None:
    record, place = (void if voided else game)(world, 1)
    write = GameWrite(db, world.series_id, 1, place.seats, record)
    # The first try committed, and its answer was lost on the way back...
    with db.session() as session:
        write._write(session)
    # ...so the write is tried again: it finds the game it stored, and stores nothing more.
    write.commit()
    write.commit()
    with db.read_session() as session:
        query = select(Game.number, Game.attempt, Game.voided)
        stored = [
            tuple(row) for row in session.exec(query.where(Game.series_id == world.series_id))
        ]
    assert stored == [(1, 1, voided)]
    # A later game of the same number (a replay of a voided one) is a new attempt.
    if voided:
        again, _ = game(world, 1)
        GameWrite(db, world.series_id, 1, place.seats, again).commit()
        with db.read_session() as session:
            attempts = sorted(session.exec(select(Game.attempt).where(Game.number == 1)))
        assert attempts == [1, 2]


@pytest.mark.postgres
def test_a_write_rides_out_terminated_connections(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Real PostgreSQL: every connection of the database terminated while a write is in its
    transaction, then connections refused for a moment; the write goes through once."""
    admin_url = postgres_admin_url()
    assert admin_url is not None
    name = make_url(postgres_url).database
    assert name is not None
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    database = open_database(postgres_url)
    try:
        world = build_world(database)
        record, place = game(world, 1)
        write = GameWrite(database, world.series_id, 1, place.seats, record)
        tries = 0
        inner = write._write

        def cut_off(session: Session) -> None:
            nonlocal tries
            tries += 1
            session.execute(text("SELECT 1"))  # the transaction has its connection
            if tries == 1:
                allow_connections(admin, name, False)
                terminate_connections(admin, name)
                threading.Timer(1.5, allow_connections, (admin, name, True)).start()
            inner(session)

        write._write = cut_off  # type: ignore[method-assign]
        with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
            write.commit()
        assert tries >= 2
        with database.read_session() as session:
            stored = [tuple(row) for row in session.exec(select(Game.number, Game.attempt))]
        assert stored == [(1, 1)]
        notes = [r.getMessage() for r in caplog.records]
        assert any("lost while recording game 1" in n for n in notes), notes
        assert any("is back after" in n for n in notes), notes
    finally:
        database.close()
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        admin.dispose()
