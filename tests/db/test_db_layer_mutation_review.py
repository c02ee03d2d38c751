"""Tests from a mutation review of the database layer (engine, leases, accounts, URLs,
migrations): each one kills mutants the suite let live, and each checks behaviour the docs
promise (docs/database.md, docs/scaling.md#one-run-per-tournament-the-lease,
docs/arena.md).

- Leases: a take-over records the new holder (runner, host, pid, process token, since when),
  so the next refusal names the run that really holds the tournament; a heartbeat moves the
  expiry and the heartbeat time; a lease is expired from its ``expires_at`` on; a cancel
  aborts only unfinished series; a finished tournament's settings cannot change; on
  PostgreSQL a take-over waits (boundedly) for a holder's write to end rather than giving up
  at once.
- Accounts: token and invite lifetimes of 1 to 36500 days, author names of up to 40
  characters, a revoke that is idempotent, the last use of a token noted, a bot claimed twice
  by its owner, each author's own tokens and bots, the audit log newest first and per author,
  and an invite code that registers one author even when two people use it at once
  (PostgreSQL).
- URLs: credentials in query parameters masked (any case), an unparseable URL masked up to
  the last ``@``, port 65535 accepted, a blank ``KRYT_DATABASE_URL`` counting as absent.
- Engine: the retry setting's upper bound, the pauses' cap and their bound by the window,
  PostgreSQL's data-corruption errors named as damage.

Everything runs on SQLite in temporary files except the two concurrency cases that only
PostgreSQL can show (row locks held across statements).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from arena.db import (
    ConflictError,
    Database,
    DatabaseUnavailableError,
    LeaseHeldError,
    LeaseHolder,
    SeriesStatus,
    TournamentStatus,
    accounts,
    acquire_lease,
    cancel_tournament,
    get_lease,
    get_tournament,
    hold_lease,
    mask_url,
    normalize_url,
    open_database,
    renew_lease,
    resolve_database_url,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    update_tournament_config,
)
from arena.db.accounts import (
    InviteError,
    audit,
    audit_entries,
    authenticate_token,
    bots_of_author,
    claim_bot,
    create_author,
    create_invite,
    create_token,
    list_tokens,
    redeem_invite,
    revoke_token,
    storable_text,
)
from arena.db.engine import (
    MAX_RETRY_SECONDS,
    RETRY_SECONDS_ENV,
    retry_seconds,
)
from arena.db.errors import InvalidRecordError
from arena.db.leases import LeaseInfo
from arena.db.models import ApiToken, Bot, Submission
from arena.db.types import utcnow
from tests.db.helpers import World, build_world

MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)
ONE = LeaseHolder("run-one", "host-a", 1234, "token-one")
TWO = LeaseHolder("run-two", "host-b", 5678, "token-two")


# ---------------------------------------------------------------------------- leases


def test_a_take_over_records_the_new_holder_and_the_next_refusal_names_it(
    sqlite_db: Database, sqlite_world: World
) -> None:
    """`kryt tournament status` shows who holds each tournament and a second run is refused
    naming the holder (`pid 5678 on host host-b since ...`): after a take-over that is the
    new run, with its own process token (the dead-holder check of a resume on the same host
    reads it) and the time it took the lease."""
    tid = sqlite_world.tournament_id
    with sqlite_db.session() as session:
        first = acquire_lease(tid, ONE, ttl=MINUTE, session=session)
    time.sleep(0.01)  # the take-over happens strictly later
    with sqlite_db.session() as session:
        taken = acquire_lease(tid, TWO, ttl=MINUTE, session=session, take_over=True)
    with sqlite_db.read_session() as session:
        stored = get_lease(tid, session=session)
    for lease in (taken, stored):
        assert lease is not None
        assert (lease.runner_id, lease.host, lease.pid, lease.process_token) == (
            "run-two",
            "host-b",
            5678,
            "token-two",
        )
        assert lease.acquired_at > first.acquired_at
        assert lease.heartbeat_at == lease.acquired_at
    third = LeaseHolder("run-three", "host-c", 9, None)
    with pytest.raises(LeaseHeldError) as refused, sqlite_db.session() as session:
        acquire_lease(tid, third, ttl=MINUTE, session=session)
    assert refused.value.lease.pid == 5678 and refused.value.lease.host == "host-b"
    assert "pid 5678 on host host-b" in str(refused.value) and "run-two" in str(refused.value)


def test_a_lease_taken_after_it_expired_records_the_new_holder(
    sqlite_db: Database, sqlite_world: World
) -> None:
    """The same for a lease taken because its holder's heartbeat stopped (no take-over)."""
    tid = sqlite_world.tournament_id
    with sqlite_db.session() as session:
        acquire_lease(tid, ONE, ttl=timedelta(0), session=session)
    with sqlite_db.session() as session:
        acquire_lease(tid, TWO, ttl=MINUTE, session=session)
    with sqlite_db.read_session() as session:
        lease = get_lease(tid, session=session)
    assert lease is not None
    assert (lease.host, lease.pid, lease.process_token) == ("host-b", 5678, "token-two")
    assert not lease.expired()


def test_a_lease_is_expired_from_its_expiry_on() -> None:
    """`expires_at` is when the lease stops counting: it expires 30 s after the last renewal,
    so at that instant it is expired, and a microsecond before it is not."""
    now = utcnow()
    lease = LeaseInfo(1, "run-one", "host-a", 1, None, now, now, now + MINUTE)
    assert lease.expired(now + MINUTE)
    assert lease.expired(now + MINUTE + timedelta(microseconds=1))
    assert not lease.expired(now + MINUTE - timedelta(microseconds=1))
    assert not lease.expired(now)


def test_a_heartbeat_moves_the_expiry_and_the_heartbeat_time(
    sqlite_db: Database, sqlite_world: World
) -> None:
    """`renew_lease` extends the lease by its time-to-live from now: a lease taken for a
    moment and renewed for an hour is held for that hour (its holder may record), and its
    heartbeat time is the renewal's."""
    tid = sqlite_world.tournament_id
    with sqlite_db.session() as session:
        first = acquire_lease(tid, ONE, ttl=timedelta(seconds=5), session=session)
    time.sleep(0.01)
    with sqlite_db.session() as session:
        renewed = renew_lease(tid, "run-one", ttl=timedelta(hours=1), session=session)
    assert renewed.heartbeat_at > first.heartbeat_at
    assert renewed.acquired_at == first.acquired_at
    assert renewed.expires_at - renewed.heartbeat_at == timedelta(hours=1)
    with sqlite_db.read_session() as session:
        stored = get_lease(tid, session=session)
    assert stored is not None and stored.expires_at == renewed.expires_at
    assert stored.expires_at > utcnow() + timedelta(minutes=59)
    with sqlite_db.session() as session:  # still held
        hold_lease(tid, "run-one", session=session)


def test_a_cancel_aborts_only_the_unfinished_series(sqlite_db: Database) -> None:
    """A cancel marks the tournament cancelled and its unfinished series aborted, and says
    how many it stopped: a finished series stays finished, with its games counted."""
    world = build_world(sqlite_db)
    from arena.db import SeriesSpec, TournamentSpec, create_tournament

    with sqlite_db.session() as session:
        tournament = create_tournament(
            TournamentSpec(
                name="two series",
                seed=3,
                config={},
                series=[
                    SeriesSpec(world.sub_a, world.sub_b, 2, 1),
                    SeriesSpec(world.sub_b, world.sub_a, 2, 2),
                ],
            ),
            session=session,
        )
        assert tournament.id is not None
        tid = tournament.id
        done, open_ = series_of_tournament(tid, session=session)
        assert done.id is not None and open_.id is not None
        set_series_status(done.id, SeriesStatus.RUNNING, session=session)
        set_series_status(done.id, SeriesStatus.FINISHED, session=session)
        set_tournament_status(tid, TournamentStatus.RUNNING, session=session)
    with sqlite_db.session() as session:
        assert cancel_tournament(tid, session=session) == 1
    with sqlite_db.read_session() as session:
        statuses = {s.id: s.status for s in series_of_tournament(tid, session=session)}
        assert get_tournament(tid, session=session).status == TournamentStatus.CANCELLED.value
    assert statuses == {done.id: "finished", open_.id: "aborted"}


def test_a_finished_tournaments_settings_cannot_change(
    sqlite_db: Database, sqlite_world: World
) -> None:
    tid = sqlite_world.tournament_id
    with sqlite_db.session() as session:
        set_tournament_status(tid, TournamentStatus.FINISHED, session=session)
    with (
        pytest.raises(ConflictError, match="is finished; its settings cannot change"),
        sqlite_db.session() as session,
    ):
        update_tournament_config(tid, {"games": 99}, name="changed", session=session)
    with sqlite_db.read_session() as session:
        stored = get_tournament(tid, session=session)
        assert (stored.name, stored.config) == ("cup", {"games": 10})


@pytest.mark.postgres
def test_a_take_over_waits_for_a_holders_write_that_ends_in_time(postgres_url: str) -> None:
    """PostgreSQL: `resume --take-over` waits 10 s for a holder in the middle of recording a
    game (docs/scaling.md): a write that ends after a moment does not make it give up; it
    takes the lease once that write is committed."""
    db = open_database(postgres_url)
    try:
        tid = build_world(db).tournament_id
        with db.session() as session:
            acquire_lease(tid, ONE, ttl=MINUTE, session=session)
        writing = threading.Event()

        def short_write() -> None:
            with db.session() as session:
                hold_lease(tid, "run-one", session=session)
                writing.set()
                time.sleep(1.0)

        writer = threading.Thread(target=short_write)
        writer.start()
        try:
            assert writing.wait(60)
            with db.session() as session:
                taken = acquire_lease(tid, TWO, ttl=MINUTE, session=session, take_over=True)
        finally:
            writer.join(60)
        assert taken.runner_id == "run-two"
    finally:
        db.close()


# ---------------------------------------------------------------------------- accounts


def _author_with_token(db: Database, name: str) -> str:
    with db.session() as session:
        create_author(name, session=session)
        return create_token(name, session=session, lifetime=DAY).secret


def test_token_and_invite_lifetimes_are_1_to_36500_days(sqlite_db: Database) -> None:
    """docs/arena.md: a token lives 1 to 36500 days (100 years); outside, it is refused."""
    with sqlite_db.session() as session:
        create_author("ann", session=session)
        longest = create_token("ann", session=session, lifetime=timedelta(days=36500))
        assert longest.expires_at - utcnow() > timedelta(days=36499)
        create_invite(session=session, lifetime=timedelta(days=36500))
    for lifetime in (timedelta(0), timedelta(days=36500, seconds=1), -DAY):
        with pytest.raises(InvalidRecordError, match="lifetime"), sqlite_db.session() as session:
            create_token("ann", session=session, lifetime=lifetime)
        with pytest.raises(InvalidRecordError, match="lifetime"), sqlite_db.session() as session:
            create_invite(session=session, lifetime=lifetime)


def test_author_names_are_at_most_40_characters(sqlite_db: Database) -> None:
    """Names match `[a-z0-9][a-z0-9_-]{0,39}`: 40 characters at most."""
    with sqlite_db.session() as session:
        assert create_author("a" * 40, session=session).name == "a" * 40
    with pytest.raises(InvalidRecordError), sqlite_db.session() as session:
        create_author("b" * 41, session=session)


def test_a_token_is_long_random_and_its_last_use_is_noted(sqlite_db: Database) -> None:
    """`kryt arena token list` says when each token was last used: authenticating notes it."""
    secret = _author_with_token(sqlite_db, "ann")
    assert secret.startswith("kryt_") and len(secret) >= 40
    with sqlite_db.read_session() as session:
        (row,) = list_tokens("ann", session=session)
        assert row.last_used_at is None
    before = utcnow()
    with sqlite_db.session() as session:
        principal = authenticate_token(secret, session=session)
    assert principal is not None and principal.author_name == "ann"
    with sqlite_db.read_session() as session:
        (row,) = list_tokens("ann", session=session)
        assert row.last_used_at is not None and row.last_used_at >= before


def test_revoking_twice_keeps_the_first_revocation(sqlite_db: Database) -> None:
    """Revoking is idempotent: the token stays revoked as of the first revoke."""
    secret = _author_with_token(sqlite_db, "ann")
    with sqlite_db.read_session() as session:
        (row,) = list_tokens("ann", session=session)
        assert row.id is not None
        token_id = row.id
    with sqlite_db.session() as session:
        first = revoke_token(token_id, session=session).revoked_at
    time.sleep(0.01)
    with sqlite_db.session() as session:
        again = revoke_token(token_id, session=session).revoked_at
        assert authenticate_token(secret, session=session) is None
    assert first is not None and again == first


def test_each_author_sees_only_their_own_tokens_bots_and_audit_entries(
    sqlite_db: Database, sqlite_world: World
) -> None:
    """`token list ann` lists ann's tokens, `/me` ann's bots, the audit log of ann her
    entries, newest first; claiming one's own bot again is a no-op, another's is refused."""
    _author_with_token(sqlite_db, "ann")
    _author_with_token(sqlite_db, "bob")
    with sqlite_db.session() as session:
        ann = accounts.get_author("ann", session=session)
        bob = accounts.get_author("bob", session=session)
        assert ann.id is not None and bob.id is not None
        alpha = _bot_of(session, sqlite_world.sub_a)
        bravo = _bot_of(session, sqlite_world.sub_b)
        claim_bot(alpha, ann.id, session=session)
        claim_bot(alpha, ann.id, session=session)  # the owner again: nothing changes
        claim_bot(bravo, bob.id, session=session)
        audit("login", "ok", session=session, author_id=ann.id, target="first")
        audit("login", "ok", session=session, author_id=bob.id, target="bob's")
        audit("upload", "ok", session=session, author_id=ann.id, target="second")
    with (
        pytest.raises(ConflictError, match="belongs to another author"),
        sqlite_db.session() as session,
    ):
        claim_bot(_bot_of(session, sqlite_world.sub_b), ann.id, session=session)
    with sqlite_db.read_session() as session:
        assert [t.author_id for t in list_tokens("ann", session=session)] == [ann.id]
        assert [b.name for b in bots_of_author(ann.id, session=session)] == ["alpha"]
        assert [b.name for b in bots_of_author(bob.id, session=session)] == ["bravo"]
        mine = audit_entries(session=session, author_id=ann.id)
        assert [e.target for e in mine] == ["second", "first"]
        everyone = audit_entries(session=session)
        assert [e.target for e in everyone] == ["second", "bob's", "first"]
        assert [e.target for e in audit_entries(session=session, limit=1)] == ["second"]


def _bot_of(session: Session, submission_id: int) -> Bot:
    submission = session.get(Submission, submission_id)
    assert submission is not None
    bot = session.get(Bot, submission.bot_id)
    assert bot is not None
    return bot


def test_an_audit_text_of_exactly_its_limit_is_kept_whole() -> None:
    assert storable_text("x" * 40, 40) == "x" * 40
    assert storable_text("x" * 41, 40) == "x" * 40
    assert storable_text("ab\x00", 5) == "ab"  # the escape \x00 would not fit: left out
    assert storable_text("ab\x00", 6) == "ab\\x00"


@pytest.mark.postgres
def test_one_invite_used_twice_at_once_registers_one_author(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: two people use one code at the same moment, both past the first check of
    the code: it is spent by a conditional update, so one registers and the other is told
    the code is used (docs/arena.md: a code works once)."""
    db = open_database(postgres_url)
    try:
        with db.session() as session:
            invite = create_invite(session=session, lifetime=DAY)
        both_checked = threading.Barrier(2)
        real_create_author = accounts.create_author

        def create_author_together(name: str, **kw: Any) -> Any:
            author = real_create_author(name, **kw)
            both_checked.wait(timeout=60)  # both have read the code as unused
            return author

        monkeypatch.setattr(accounts, "create_author", create_author_together)
        outcomes: dict[str, str] = {}

        def register(name: str) -> None:
            try:
                with db.session() as session:
                    redeem_invite(
                        invite.code,
                        name,
                        session=session,
                        password_hash=None,
                        token_lifetime=DAY,
                    )
                outcomes[name] = "registered"
            except InviteError:
                outcomes[name] = "refused"

        threads = [threading.Thread(target=register, args=(name,)) for name in ("eve", "fay")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert sorted(outcomes.values()) == ["refused", "registered"], outcomes
        with db.read_session() as session:
            names = [a.name for a in accounts.list_authors(session=session)]
            # A name no author can have names nobody, also one PostgreSQL cannot compare.
            assert accounts.find_author(names[0] + "\x00", session=session) is None
            tokens = session.exec(select(ApiToken)).all()
        assert len(names) == 1 and len(tokens) == 1, names
    finally:
        db.close()


# ---------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    "raw",
    [
        "postgresql+psycopg://kryt@dbhost/kryt?password=s3cret",
        "postgresql+psycopg://kryt@dbhost/kryt?sslpassword=s3cret&sslmode=require",
        "postgresql+psycopg://kryt@dbhost/kryt?PASSWORD=s3cret",
        "postgresql+psycopg://kryt@dbhost/kryt?sslmode=require&SslPassword=s3cret",
        "postgresql+psycopg://kryt@dbhost/kryt?auth_token=s3cret",
        "postgresql+psycopg://kryt@dbhost/kryt?client_secret=s3cret",
        # Unparseable (the port): masked as text, the same parameters.
        "postgresql://kryt@dbhost:5432x/kryt?sslpassword=s3cret",
        "postgresql://kryt@dbhost:5432x/kryt?sslmode=require&PASSWORD=s3cret",
    ],
)
def test_a_password_given_as_a_query_parameter_is_masked(raw: str) -> None:
    shown = mask_url(raw)
    assert "s3cret" not in shown and "***" in shown, shown
    assert "dbhost" in shown  # the rest is still there to read


def test_an_unparseable_url_is_masked_up_to_the_last_at_sign() -> None:
    """A password may hold `@`: everything between `user:` and the last `@` is hidden."""
    assert mask_url("postgresql://kryt:s3c@r@et@dbhost:5432x/kryt") == (
        "postgresql://kryt:***@dbhost:5432x/kryt"
    )


def test_a_url_shows_a_nul_byte_as_percent_00() -> None:
    """Masked URLs are fit for messages and logs: a NUL byte is shown as `%00`."""
    assert "\x00" not in mask_url("postgresql+psycopg://kryt:pw@dbhost/kr\x00yt")
    shown = mask_url("postgresql+psycopg://kryt:pw@db\x00host/kryt")  # a host is not quoted
    assert shown == "postgresql+psycopg://kryt:***@db%00host/kryt"
    assert "\x00" not in mask_url("postgresql://kryt:pw@dbhost:54x/kr\x00yt")


@pytest.mark.parametrize("port", [1, 5432, 65535])
def test_every_port_from_1_to_65535_is_accepted(port: int) -> None:
    url = normalize_url(f"postgresql://kryt:s3cret@dbhost:{port}/kryt")
    assert url == f"postgresql+psycopg://kryt:s3cret@dbhost:{port}/kryt"


def test_a_blank_environment_variable_counts_as_absent(tmp_path: Path) -> None:
    url = resolve_database_url(None, environ={"KRYT_DATABASE_URL": "  \t "}, cwd=tmp_path)
    assert url == f"sqlite:///{tmp_path / 'kryt.db'}"


# ---------------------------------------------------------------------------- engine


def test_foreign_keys_are_on_when_an_up_to_date_file_is_opened_again(tmp_path: Path) -> None:
    """SQLite is opened with foreign keys on (docs/database.md), not only on the connection
    that migrated a new file: opened again (no migration), a series pointing to no
    tournament is still refused."""
    url = f"sqlite:///{tmp_path}/kryt.db"
    open_database(url).close()
    with open_database(url) as db:
        with db.engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        with pytest.raises(ConflictError), db.session() as session:
            session.execute(
                text(
                    "INSERT INTO series (tournament_id, position, submission_a_id,"
                    " submission_b_id, format, games_planned, seed, status, ruleset)"
                    " VALUES (4242, 1, 4242, 4243, 'standard', 2, 1, 'pending', 'default')"
                )
            )


def test_a_read_session_takes_no_write_lock_and_a_write_session_takes_it_up_front(
    sqlite_db: Database,
) -> None:
    """SQLite: a read session never blocks writers (it begins deferred); a write session
    begins with BEGIN IMMEDIATE, so another writer queues for the lock from its start
    (docs/database.md). Seen from another connection that does not wait (timeout 0)."""
    assert sqlite_db.path is not None
    other = sqlite3.connect(sqlite_db.path, timeout=0, isolation_level=None)
    try:
        with sqlite_db.read_session() as session:
            session.execute(text("SELECT count(*) FROM tournaments")).scalar()
            other.execute("BEGIN IMMEDIATE")  # a writer gets the lock at once
            other.execute("ROLLBACK")
        with sqlite_db.session() as session:
            session.execute(text("SELECT 1")).scalar()  # nothing written yet
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
    finally:
        other.close()


def test_the_retry_setting_goes_up_to_a_day() -> None:
    """`KRYT_DATABASE_RETRY_SECONDS` takes 0 to 86,400 seconds (docs/database.md)."""
    assert MAX_RETRY_SECONDS == 86400
    assert retry_seconds({RETRY_SECONDS_ENV: "86400"}) == 86400.0
    assert retry_seconds({RETRY_SECONDS_ENV: "0"}) == 0.0


def _terminated() -> OperationalError:
    import psycopg.errors

    return OperationalError(
        "SELECT 1",
        {},
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        connection_invalidated=True,
    )


class _Flaky:
    """Work that fails with a lost connection ``times`` times, then returns 42."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.calls = 0

    def __call__(self, session: Session) -> int:
        self.calls += 1
        session.execute(text("SELECT 1"))
        if self.calls <= self.times:
            raise _terminated()
        return 42


def test_the_pauses_between_tries_stop_growing_at_5_seconds(sqlite_db: Database) -> None:
    """Pauses grow from 0.25 s to 5 s (docs/database.md), then stay at 5 s."""
    pauses: list[float] = []
    work = _Flaky(8)
    assert sqlite_db.retrying(work, what="testing", window=600, sleep=pauses.append) == 42
    assert pauses == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


def test_no_pause_outlasts_the_window(sqlite_db: Database) -> None:
    """A pause never goes past the end of the window: in a window of 0.2 s the next try
    comes after at most 0.2 s, not after the 0.25 s, 0.5 s... the backoff would give."""
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(0.01)

    with pytest.raises(DatabaseUnavailableError):
        sqlite_db.retrying(_Flaky(10**6), what="testing", window=0.2, sleep=sleep)
    assert pauses and max(pauses) < 0.2 + 1e-6, pauses


def test_a_connection_sqlalchemy_took_for_a_disconnect_is_lost() -> None:
    """`lost_connection` is true for any error SQLAlchemy took for a disconnect
    (`connection_invalidated`), also one that is not psycopg's OperationalError, such as its
    InterfaceError for a connection already closed (docs/database.md); never for a
    constraint violation."""
    import psycopg
    from sqlalchemy.exc import IntegrityError, InterfaceError

    from arena.db.engine import lost_connection

    closed = psycopg.InterfaceError("the connection is closed")
    assert lost_connection(InterfaceError("SELECT 1", {}, closed, connection_invalidated=True))
    assert not lost_connection(InterfaceError("SELECT 1", {}, closed))
    # Never a constraint violation, however the driver flagged its connection.
    duplicate = psycopg.errors.UniqueViolation("duplicate key")
    assert not lost_connection(IntegrityError("INSERT", {}, duplicate, connection_invalidated=True))


def test_repr_and_messages_of_a_database_hide_its_password() -> None:
    """Passwords are masked in every message and in `repr(db)` (docs/database.md); the
    engine is not connected here, so no server is needed."""
    from sqlalchemy import create_engine

    url = "postgresql+psycopg://kryt:s3cret@127.0.0.1:1/kryt"
    engine = create_engine(url)
    try:
        database = Database(url, engine, retry=0)
        assert "s3cret" not in repr(database) and "kryt:***@" in repr(database)
        assert "s3cret" not in database.display_url
        database.read_only = "a test"
        with pytest.raises(DatabaseUnavailableError) as refused:
            database.check_writable()
        assert "s3cret" not in str(refused.value)
    finally:
        engine.dispose()


def test_a_locked_sqlite_database_says_another_writer_held_the_lock() -> None:
    """Each error says what to do: "database is locked" names the other writer and the wait."""
    from arena.db.engine import _translated

    locked = OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked"))
    hint = "another writer held the lock longer than 60 s"
    with pytest.raises(DatabaseUnavailableError, match=hint), _translated("db"):
        raise locked


def test_postgresql_data_corruption_is_named_as_damage() -> None:
    """PostgreSQL's data-corruption errors (SQLSTATE class XX) are a damaged database, one
    typed error (the transaction rolled back), not a traceback."""
    import psycopg.errors
    from sqlalchemy.exc import InternalError

    from arena.db.engine import _translated

    corrupted = InternalError("SELECT 1", {}, psycopg.errors.DataCorrupted("invalid page"))
    with pytest.raises(DatabaseUnavailableError, match="is damaged"), _translated("db"):
        raise corrupted
