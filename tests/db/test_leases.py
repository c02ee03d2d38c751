"""Tournament leases (migration 0003): one runner at a time, expiry, take-over, cancel,
and the check that keeps a runner without the lease from recording anything."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect

from arena.db import (
    ConflictError,
    Database,
    LeaseHeldError,
    LeaseHolder,
    LeaseLostError,
    SeriesStatus,
    TournamentStatus,
    acquire_lease,
    all_leases,
    cancel_tournament,
    get_lease,
    get_tournament,
    hold_lease,
    open_database,
    record_game,
    release_lease,
    renew_lease,
    series_of_tournament,
    set_tournament_status,
    update_tournament_config,
)
from arena.db.migrate import alembic_config, current_revision, head_revision, upgrade_engine
from tests.db.helpers import World, build_world, game

MINUTE = timedelta(minutes=1)
ONE = LeaseHolder("run-one", "host-a", 1234, None)
TWO = LeaseHolder("run-two", "host-b", 5678, None)


def test_a_second_runner_is_refused_with_the_holder_named(db: Database, world: World) -> None:
    tid = world.tournament_id
    with db.session() as session:
        first = acquire_lease(tid, ONE, ttl=MINUTE, session=session)
    assert first.runner_id == "run-one" and not first.expired()
    with pytest.raises(LeaseHeldError) as caught, db.session() as session:
        acquire_lease(tid, TWO, ttl=MINUTE, session=session)
    assert caught.value.lease.pid == 1234 and caught.value.lease.host == "host-a"
    assert "pid 1234 on host host-a since" in str(caught.value)
    with db.read_session() as session:
        lease = get_lease(tid, session=session)
        assert lease is not None and lease.runner_id == "run-one"
        assert set(all_leases(session=session)) == {tid}
    # Taking one's own lease again renews it.
    with db.session() as session:
        again = acquire_lease(tid, ONE, ttl=MINUTE, session=session)
    assert again.expires_at >= first.expires_at


def test_an_expired_lease_is_free_and_its_old_holder_can_record_nothing(
    db: Database, world: World
) -> None:
    tid = world.tournament_id
    with db.session() as session:
        acquire_lease(tid, ONE, ttl=timedelta(0), session=session)  # its heartbeat stopped
    with db.session() as session:
        taken = acquire_lease(tid, TWO, ttl=MINUTE, session=session)
    assert taken.runner_id == "run-two"
    with pytest.raises(LeaseLostError, match="no longer holds"), db.session() as session:
        renew_lease(tid, "run-one", ttl=MINUTE, session=session)
    record, place = game(world, 1)
    with pytest.raises(LeaseLostError), db.session() as session:
        hold_lease(tid, "run-one", session=session)
        record_game(record, place, session=session)
    with db.session() as session:  # the holder records
        hold_lease(tid, "run-two", session=session)
        record_game(record, place, session=session)
    with db.session() as session:
        assert not release_lease(tid, "run-one", session=session)
        assert release_lease(tid, "run-two", session=session)
    with db.read_session() as session:
        assert get_lease(tid, session=session) is None


def test_take_over_and_a_holder_known_gone(db: Database, world: World) -> None:
    tid = world.tournament_id
    with db.session() as session:
        acquire_lease(tid, ONE, ttl=MINUTE, session=session)
    with db.session() as session:
        acquire_lease(tid, TWO, ttl=MINUTE, session=session, take_over=True)
    with pytest.raises(LeaseLostError), db.session() as session:
        hold_lease(tid, "run-one", session=session)
    seen = []

    def gone(lease: object) -> bool:
        seen.append(lease)
        return True

    with db.session() as session:
        acquire_lease(tid, ONE, ttl=MINUTE, session=session, holder_gone=gone)
    assert len(seen) == 1
    with pytest.raises(LeaseHeldError), db.session() as session:
        acquire_lease(tid, TWO, ttl=MINUTE, session=session, holder_gone=lambda _lease: False)


def test_runners_asking_at_once_get_one_lease(db: Database, world: World) -> None:
    tid = world.tournament_id
    barrier = threading.Barrier(6)
    won: list[str] = []
    refused: list[str] = []

    def ask(n: int) -> None:
        holder = LeaseHolder(f"run-{n}", "host", n, None)
        barrier.wait(timeout=60)
        try:
            with db.session() as session:
                acquire_lease(tid, holder, ttl=MINUTE, session=session)
            won.append(holder.runner_id)
        except LeaseHeldError:
            refused.append(holder.runner_id)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(won) == 1 and len(refused) == 5, (won, refused)
    with db.read_session() as session:
        lease = get_lease(tid, session=session)
    assert lease is not None and lease.runner_id == won[0]


def test_cancel_stops_the_holder_and_the_series(db: Database, world: World) -> None:
    tid = world.tournament_id
    with db.session() as session:
        acquire_lease(tid, ONE, ttl=MINUTE, session=session)
        set_tournament_status(tid, TournamentStatus.RUNNING, session=session)
    with db.session() as session:
        assert cancel_tournament(tid, session=session) == 1
    with pytest.raises(LeaseLostError, match="cancelled"), db.session() as session:
        renew_lease(tid, "run-one", ttl=MINUTE, session=session)
    with db.read_session() as session:
        assert get_tournament(tid, session=session).status == "cancelled"
        statuses = {s.status for s in series_of_tournament(tid, session=session)}
    assert statuses == {SeriesStatus.ABORTED.value}
    with pytest.raises(ConflictError, match="already cancelled"), db.session() as session:
        cancel_tournament(tid, session=session)
    with pytest.raises(ConflictError, match="cannot change"), db.session() as session:
        update_tournament_config(tid, {}, name="x", session=session)


def test_a_finished_tournament_cannot_be_cancelled(db: Database, world: World) -> None:
    tid = world.tournament_id
    with db.session() as session:
        update_tournament_config(tid, {"games": 3}, name="renamed", session=session)
        set_tournament_status(tid, TournamentStatus.FINISHED, session=session)
    with pytest.raises(ConflictError, match="finished"), db.session() as session:
        cancel_tournament(tid, session=session)
    with db.read_session() as session:
        stored = get_tournament(tid, session=session)
        assert (stored.name, stored.config) == ("renamed", {"games": 3})


def test_migration_0003_adds_and_drops_the_lease_table(database_url: str) -> None:
    db = open_database(database_url)
    try:
        with db.engine.connect() as connection:
            assert current_revision(connection) == head_revision()
            assert "tournament_leases" in inspect(connection).get_table_names()
        with db.engine.begin() as connection:
            command.downgrade(alembic_config(connection), "0002")
        with db.engine.connect() as connection:
            assert current_revision(connection) == "0002"
            assert "tournament_leases" not in inspect(connection).get_table_names()
        assert upgrade_engine(db.engine, where="the test database") == head_revision()
        with db.engine.connect() as connection:
            assert "tournament_leases" in inspect(connection).get_table_names()
    finally:
        db.close()


def test_a_holder_whose_lease_lapsed_records_nothing_even_if_nobody_took_it(
    db: Database, world: World
) -> None:
    """A stopped (or cut-off) holder comes back after its lease expired: in the meantime the
    tournament counted as free (settings could change, another run could start it), so it
    may neither renew nor record; it learns so in one line."""
    tid = world.tournament_id
    with db.session() as session:
        acquire_lease(tid, ONE, ttl=timedelta(0), session=session)  # its heartbeat stopped
    with pytest.raises(LeaseLostError, match="expired at"), db.session() as session:
        renew_lease(tid, "run-one", ttl=MINUTE, session=session)
    record, place = game(world, 1)
    with pytest.raises(LeaseLostError, match="expired at"), db.session() as session:
        hold_lease(tid, "run-one", session=session)
        record_game(record, place, session=session)
    with db.read_session() as session:
        assert get_lease(tid, session=session) is not None  # still its row: nobody took it
    with db.session() as session:  # and the next run takes it as usual
        assert acquire_lease(tid, TWO, ttl=MINUTE, session=session).runner_id == "run-two"


def test_a_take_over_waits_a_bounded_time_for_a_holder_stuck_in_a_write(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: a holder stopped inside its write transaction keeps the lease row locked;
    a take-over ends with a one-line LeaseBusyError instead of waiting for ever, and takes
    the lease once that transaction is gone. (SQLite has one writer at a time: its busy
    timeout bounds the wait.)"""
    from arena.db import LeaseBusyError, leases

    monkeypatch.setattr(leases, "LOCK_WAIT_SECONDS", 1.0)
    db = open_database(postgres_url)
    try:
        _stuck_writer_case(db, build_world(db).tournament_id, LeaseBusyError)
    finally:
        db.close()


@contextmanager
def _holder_stuck_in_a_write(db: Database, tid: int) -> Iterator[None]:
    """Runner ONE holds the lease and is inside its write transaction (lease checked, game
    not committed) for as long as the block runs: a stopped process keeps it open."""
    with db.session() as session:
        acquire_lease(tid, ONE, ttl=MINUTE, session=session)
    writing, done = threading.Event(), threading.Event()

    def stuck_writer() -> None:
        with db.session() as session:
            hold_lease(tid, "run-one", session=session)
            writing.set()
            done.wait(120)

    writer = threading.Thread(target=stuck_writer)
    writer.start()
    try:
        assert writing.wait(60)
        yield
    finally:
        done.set()
        writer.join(60)


def _stuck_writer_case(db: Database, tid: int, busy: type[Exception]) -> None:
    with _holder_stuck_in_a_write(db, tid):
        with pytest.raises(busy, match="writing a game") as refused, db.session() as session:
            acquire_lease(tid, TWO, ttl=MINUTE, session=session, take_over=True)
        assert "\n" not in str(refused.value)
    with db.session() as session:
        taken = acquire_lease(tid, TWO, ttl=MINUTE, session=session, take_over=True)
    assert taken.runner_id == "run-two"


def test_the_cli_shows_a_busy_lease_in_one_line_with_exit_3() -> None:
    from arena.db import LeaseBusyError
    from kryt.errors import ExitCode, classify

    shown = classify(LeaseBusyError("tournament 1: the run holding it has been writing"))
    assert shown is not None and shown.code == ExitCode.UNAVAILABLE


def test_a_cancel_never_reports_success_before_a_write_in_flight_ends(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: a holder stopped inside its write (lease checked, game not committed) and
    a cancel meanwhile: the cancel said it was done, then the game was committed. Now the
    cancel waits for the write (a bounded time: LeaseBusyError, nothing cancelled), and a
    write that starts while a cancel is open waits for it and then records nothing."""
    from arena.db import LeaseBusyError, leases

    monkeypatch.setattr(leases, "LOCK_WAIT_SECONDS", 1.0)
    db = open_database(postgres_url)
    try:
        tid = build_world(db).tournament_id
        with _holder_stuck_in_a_write(db, tid):
            with pytest.raises(LeaseBusyError, match="writing a game"), db.session() as session:
                cancel_tournament(tid, session=session)
            with db.read_session() as session:
                assert get_tournament(tid, session=session).status != "cancelled"
        # The other order: a cancel holds the tournament; a write starting then waits and
        # finds the tournament cancelled.
        cancelling, release = threading.Event(), threading.Event()

        def slow_cancel() -> None:
            with db.session() as session:
                cancel_tournament(tid, session=session)
                cancelling.set()
                release.wait(120)

        canceller = threading.Thread(target=slow_cancel)
        canceller.start()
        try:
            assert cancelling.wait(60)
            threading.Timer(0.5, release.set).start()
            with pytest.raises(LeaseLostError, match="cancelled"), db.session() as session:
                hold_lease(tid, "run-one", session=session)
        finally:
            release.set()
            canceller.join(60)
    finally:
        db.close()


def test_a_settings_change_waits_a_bounded_time_for_a_locked_tournament(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """PostgreSQL: another database session (psql, a stopped process) keeps the tournament's
    row locked; ``tournament set`` waited for it without end. Now it gives up after a bounded
    time (LeaseBusyError: one line, exit 3), changes nothing, and works once the row is free."""
    from sqlalchemy import text

    from arena.db import LeaseBusyError, leases
    from arena.tournament.config import SandboxSettings, TournamentConfig
    from arena.tournament.runner import create
    from arena.tournament.service import change_settings

    monkeypatch.setattr(leases, "LOCK_WAIT_SECONDS", 1.0)
    examples = Path(__file__).resolve().parents[2] / "sdk" / "examples"
    db = open_database(postgres_url)
    try:
        config = TournamentConfig(
            bots=(str(examples / "greedy"), str(examples / "random")),
            games_per_pair=2,
            sandbox=SandboxSettings(backend="process"),
        )
        tid = create(config, db=db, store=tmp_path / "store")
        with db.engine.connect() as other:
            other.execute(text("SELECT id FROM tournaments WHERE id = :t FOR UPDATE"), {"t": tid})
            with pytest.raises(LeaseBusyError) as refused:
                change_settings(tid, ["sandbox.memory_mb=512"], db)
            assert "\n" not in str(refused.value)
            other.rollback()
        with db.read_session() as session:
            assert get_tournament(tid, session=session).config["sandbox"]["memory_mb"] != 512
            assert get_lease(tid, session=session) is None
        change_settings(tid, ["sandbox.memory_mb=512"], db)
        with db.read_session() as session:
            assert get_tournament(tid, session=session).config["sandbox"]["memory_mb"] == 512
    finally:
        db.close()
