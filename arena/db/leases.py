"""Tournament leases: at most one runner plays a tournament at a time.

A runner takes the lease (:func:`acquire_lease`) before it plays anything, renews it with a
heartbeat (:func:`renew_lease`) and releases it when it ends (:func:`release_lease`). Every
game is recorded in a transaction that first checks, under a row lock, that its runner
still holds the lease (:func:`hold_lease`), so a runner that lost its lease (taken over, or
the tournament cancelled) can never record a game, and a taker never races a recording.

Expiry uses the clock of the machine that asks (``expires_at`` is written by the holder
from its own clock): keep the runners' clocks in sync (NTP) and the time-to-live well above
any skew.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from arena.db.enums import SeriesStatus, TournamentStatus
from arena.db.errors import ConflictError, NotFoundError
from arena.db.models import Series, Tournament, TournamentLease
from arena.db.tournaments import set_series_status, set_tournament_status
from arena.db.types import utcnow


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who asks for a lease: a run's id, and its host, pid and process token."""

    runner_id: str
    host: str
    pid: int
    process_token: str | None = None


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    """A stored lease, detached from the session."""

    tournament_id: int
    runner_id: str
    host: str
    pid: int
    process_token: str | None
    acquired_at: datetime
    heartbeat_at: datetime
    expires_at: datetime

    def expired(self, now: datetime | None = None) -> bool:
        """True once the holder's heartbeat has stopped for longer than its time-to-live."""
        return self.expires_at <= (now or utcnow())

    def describe(self) -> str:
        """``pid 1234 on host X since 12:01`` (local time of the reader)."""
        since = self.acquired_at.astimezone().strftime("%H:%M")
        return f"pid {self.pid} on host {self.host} since {since}"


class LeaseHeldError(ConflictError):
    """Another live runner holds the tournament's lease (``lease`` says which)."""

    def __init__(self, lease: LeaseInfo) -> None:
        super().__init__(
            f"tournament {lease.tournament_id} is being run by {lease.describe()} "
            f"(runner {lease.runner_id}, heartbeat until "
            f"{lease.expires_at.astimezone():%H:%M:%S})"
        )
        self.lease = lease


class LeaseBusyError(ConflictError):
    """The lease could not be checked in time: its holder is in the middle of a write."""


LOCK_WAIT_SECONDS = 10.0
"""How long :func:`acquire_lease` waits for a holder's write to end (PostgreSQL)."""
LOCK_NOT_AVAILABLE = "55P03"
"""PostgreSQL's SQLSTATE for a lock wait that ran out (``lock_not_available``)."""


class LeaseLostError(ConflictError):
    """This runner no longer holds the tournament's lease (taken over, or cancelled)."""


def _info(row: TournamentLease) -> LeaseInfo:
    return LeaseInfo(
        tournament_id=row.tournament_id,
        runner_id=row.runner_id,
        host=row.host,
        pid=row.pid,
        process_token=row.process_token,
        acquired_at=row.acquired_at,
        heartbeat_at=row.heartbeat_at,
        expires_at=row.expires_at,
    )


T = TypeVar("T")


def _bounded(tournament_id: int, session: Session, lock: Callable[[], T]) -> T:
    """``lock()`` (row locks of the tournament), waiting at most :data:`LOCK_WAIT_SECONDS`
    on PostgreSQL for a holder in the middle of a write (a stopped process keeps its
    transaction open), then :class:`LeaseBusyError`; SQLite's writers are serialised."""
    bounded = session.get_bind().dialect.name == "postgresql"
    if bounded:
        session.execute(text(f"SET LOCAL lock_timeout = '{int(LOCK_WAIT_SECONDS * 1000)}ms'"))
    try:
        result = lock()
    except OperationalError as exc:
        if not bounded or getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
            raise
        raise LeaseBusyError(
            f"tournament {tournament_id}: the run holding it has been writing a game for"
            f" more than {LOCK_WAIT_SECONDS:g} s (a stopped or unreachable process keeps its"
            f" transaction open); it records nothing more once it ends: stop that process"
            f" or end its database session, then try again"
        ) from None
    if bounded:
        session.execute(text("SET LOCAL lock_timeout = 0"))
    return result


def _locked_tournament(tournament_id: int, *, session: Session) -> Tournament:
    # FOR UPDATE on PostgreSQL serialises two runners asking at once; SQLite's writers are
    # serialised already (BEGIN IMMEDIATE).
    row = session.exec(
        select(Tournament).where(Tournament.id == tournament_id).with_for_update()
    ).first()
    if row is None:
        raise NotFoundError(f"no tournament with id {tournament_id!r}")
    return row


def get_lease(tournament_id: int, *, session: Session) -> LeaseInfo | None:
    """The tournament's lease (expired or not), or None when nobody ever took it or the
    last holder released it."""
    row = session.get(TournamentLease, tournament_id)
    return None if row is None else _info(row)


def all_leases(*, session: Session) -> dict[int, LeaseInfo]:
    """Every stored lease by tournament id."""
    return {row.tournament_id: _info(row) for row in session.exec(select(TournamentLease))}


def acquire_lease(
    tournament_id: int,
    holder: LeaseHolder,
    *,
    ttl: timedelta,
    session: Session,
    take_over: bool = False,
    holder_gone: Callable[[LeaseInfo], bool] | None = None,
) -> LeaseInfo:
    """Take the tournament's lease for ``ttl``, or raise :class:`LeaseHeldError`.

    The lease is free when nobody holds it, when its holder's heartbeat expired, or when
    ``holder_gone(lease)`` says its process is known dead (a runner on this host). With
    ``take_over`` a live-looking lease is taken too (the organiser knows that run is dead;
    if it is not, it loses the lease and records nothing more). Taking one's own lease
    again just renews it.

    A holder in the middle of recording a game keeps the lease row locked until its
    transaction ends; on PostgreSQL, where that holder may be a stopped process (or one cut
    off from the network) whose transaction stays open, the wait is bounded by
    :data:`LOCK_WAIT_SECONDS` and ends in :class:`LeaseBusyError`.
    """

    def locked() -> TournamentLease | None:
        _locked_tournament(tournament_id, session=session)
        return session.exec(
            select(TournamentLease)
            .where(TournamentLease.tournament_id == tournament_id)
            .with_for_update()
        ).first()

    row = _bounded(tournament_id, session, locked)
    now = utcnow()
    if row is not None and row.runner_id != holder.runner_id and not take_over:
        current = _info(row)
        if not current.expired(now) and not (holder_gone is not None and holder_gone(current)):
            raise LeaseHeldError(current)
    if row is None:
        row = TournamentLease(
            tournament_id=tournament_id,
            runner_id=holder.runner_id,
            host=holder.host,
            pid=holder.pid,
            process_token=holder.process_token,
            acquired_at=now,
            heartbeat_at=now,
            expires_at=now + ttl,
        )
    else:
        row.runner_id = holder.runner_id
        row.host = holder.host
        row.pid = holder.pid
        row.process_token = holder.process_token
        row.acquired_at = now
        row.heartbeat_at = now
        row.expires_at = now + ttl
    session.add(row)
    session.flush()
    return _info(row)


def _held(tournament_id: int, runner_id: str, *, session: Session, share: bool) -> TournamentLease:
    # A shared lock on the tournament's row: a cancel (which locks it for update) waits for
    # this write to end, or this write waits for the cancel and then sees it; without it a
    # game could be committed on PostgreSQL after the cancel had reported success.
    tournament = session.exec(
        select(Tournament).where(Tournament.id == tournament_id).with_for_update(read=True)
    ).first()
    if tournament is None:
        raise NotFoundError(f"no tournament with id {tournament_id!r}")
    if tournament.status == TournamentStatus.CANCELLED.value:
        raise LeaseLostError(f"tournament {tournament_id} was cancelled")
    row = session.exec(
        select(TournamentLease)
        .where(TournamentLease.tournament_id == tournament_id)
        .with_for_update(read=share)
    ).first()
    if row is None or row.runner_id != runner_id:
        holder = "nobody" if row is None else f"{_info(row).describe()} (runner {row.runner_id})"
        raise LeaseLostError(
            f"runner {runner_id} no longer holds tournament {tournament_id}: now held by {holder}"
        )
    lease = _info(row)
    if lease.expired():
        # Its heartbeat stopped (a stopped or cut-off process): from then on the tournament
        # counted as free, its settings may have changed and another run may have started
        # it; a holder coming back must not record under the lease it let lapse.
        raise LeaseLostError(
            f"runner {runner_id}'s lease of tournament {tournament_id} expired at"
            f" {lease.expires_at.astimezone():%H:%M:%S} (no heartbeat since"
            f" {lease.heartbeat_at.astimezone():%H:%M:%S})"
        )
    return row


def renew_lease(
    tournament_id: int, runner_id: str, *, ttl: timedelta, session: Session
) -> LeaseInfo:
    """The heartbeat: extend the lease held by ``runner_id`` by ``ttl`` from now, or raise
    :class:`LeaseLostError` when it was taken over, released or the tournament cancelled."""
    row = _held(tournament_id, runner_id, session=session, share=False)
    now = utcnow()
    row.heartbeat_at = now
    row.expires_at = now + ttl
    session.add(row)
    session.flush()
    return _info(row)


def hold_lease(tournament_id: int, runner_id: str, *, session: Session) -> None:
    """Check, inside the caller's write transaction, that ``runner_id`` still holds the
    lease, and keep it from being taken until that transaction ends (a shared row lock on
    PostgreSQL; SQLite's one writer at a time does the same); else LeaseLostError."""
    _held(tournament_id, runner_id, session=session, share=True)


def release_lease(tournament_id: int, runner_id: str, *, session: Session) -> bool:
    """Give the lease up (only the holder can); True when it was held by ``runner_id``."""
    row = session.get(TournamentLease, tournament_id)
    if row is None or row.runner_id != runner_id:
        return False
    session.delete(row)
    session.flush()
    return True


def cancel_tournament(tournament_id: int, *, session: Session) -> int:
    """Mark the tournament cancelled and its unfinished series aborted; returns how many
    series were stopped. A runner still playing it loses its lease at its next heartbeat or
    game (nothing more is recorded). Finished tournaments cannot be cancelled."""
    tournament = _bounded(
        tournament_id, session, lambda: _locked_tournament(tournament_id, session=session)
    )
    if tournament.status == TournamentStatus.FINISHED.value:
        raise ConflictError(f"tournament {tournament_id} is finished; it cannot be cancelled")
    if tournament.status == TournamentStatus.CANCELLED.value:
        raise ConflictError(f"tournament {tournament_id} is already cancelled")
    stopped = 0
    done = [SeriesStatus.FINISHED.value, SeriesStatus.ABORTED.value]
    for series in session.exec(
        select(Series).where(Series.tournament_id == tournament_id, col(Series.status).not_in(done))
    ):
        assert series.id is not None
        set_series_status(series.id, SeriesStatus.ABORTED, session=session)
        stopped += 1
    set_tournament_status(tournament_id, TournamentStatus.CANCELLED, session=session)
    return stopped


def update_tournament_config(
    tournament_id: int, config: dict[str, object], *, name: str, session: Session
) -> None:
    """Store a new (already validated) configuration of an unfinished tournament."""
    tournament = _locked_tournament(tournament_id, session=session)
    if tournament.status in {TournamentStatus.FINISHED.value, TournamentStatus.CANCELLED.value}:
        raise ConflictError(
            f"tournament {tournament_id} is {tournament.status}; its settings cannot change"
        )
    tournament.config = dict(config)
    tournament.name = name
    session.add(tournament)
    session.flush()
