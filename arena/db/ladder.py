"""The arena service's own records: validation checks, ladder leases, captured game logs.

A ladder series is *claimed* by one server with a lease (``lease_until``) that the server
renews while it plays; a server killed with ``kill -9`` stops renewing, and once the lease
has run out any server may claim the series and play what is missing of it (the games
table's unique keys make a game recorded twice impossible).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, or_, select

from arena.db._util import storable
from arena.db.enums import SeriesStatus
from arena.db.errors import NotFoundError
from arena.db.models import Game, GameLog, LadderSeries, Series, SubmissionCheck
from arena.db.types import utcnow


class CheckStatus(StrEnum):
    """Where the validation of an uploaded version stands."""

    PENDING = "pending"
    PASSED = "passed"
    FAILED = "failed"


# ---------------------------------------------------------------------------- checks


def start_check(submission_id: int, author_id: int | None, *, session: Session) -> SubmissionCheck:
    """A pending check for a submission (the existing one when it is already there)."""
    row = session.get(SubmissionCheck, submission_id)
    if row is not None:
        return row
    row = SubmissionCheck(
        submission_id=submission_id, author_id=author_id, status=CheckStatus.PENDING.value
    )
    session.add(row)
    session.flush()
    return row


def finish_check(
    submission_id: int,
    status: CheckStatus,
    message: str,
    games: list[dict[str, Any]],
    *,
    session: Session,
) -> SubmissionCheck:
    """Record how the validation ended."""
    row = session.get(SubmissionCheck, submission_id)
    if row is None:
        raise NotFoundError(f"no check for submission {submission_id!r}")
    row.status = status.value
    row.message = storable(message[:4000])
    row.games = games
    row.finished_at = utcnow()
    session.add(row)
    session.flush()
    return row


def get_check(submission_id: int, *, session: Session) -> SubmissionCheck | None:
    """The check of a submission, or None (stored locally, never checked by the server)."""
    return session.get(SubmissionCheck, submission_id)


def pending_checks(*, session: Session) -> list[SubmissionCheck]:
    """Checks not finished (a restarted server runs them again), oldest first."""
    query = (
        select(SubmissionCheck)
        .where(SubmissionCheck.status == CheckStatus.PENDING.value)
        .order_by(col(SubmissionCheck.submission_id))
    )
    return list(session.exec(query).all())


def checks_of_author(
    author_id: int, *, session: Session, limit: int = 100
) -> list[SubmissionCheck]:
    """The author's checks, newest first."""
    query = (
        select(SubmissionCheck)
        .where(SubmissionCheck.author_id == author_id)
        .order_by(col(SubmissionCheck.submission_id).desc())
        .limit(limit)
    )
    return list(session.exec(query).all())


# ---------------------------------------------------------------------------- ladder leases


def add_ladder_series(
    series_id: int, *, session: Session, claimed_by: str, lease: timedelta
) -> LadderSeries:
    """Mark a new series as the ladder's, already claimed by ``claimed_by``."""
    row = LadderSeries(series_id=series_id, claimed_by=claimed_by, lease_until=utcnow() + lease)
    session.add(row)
    session.flush()
    return row


def claim_orphan(
    *, session: Session, claimed_by: str, lease: timedelta, playing: Collection[int] = ()
) -> int | None:
    """Claim one unfinished ladder series whose lease ran out; its id, or None. The series
    in ``playing`` (the caller's own, late to renew) are never claimed.

    The claim is a conditional update (the lease must still be the expired one read), so two
    servers never both win the same series.
    """
    now = utcnow()
    query = (
        select(LadderSeries.series_id, LadderSeries.lease_until)
        .join(Series, col(Series.id) == col(LadderSeries.series_id))
        .where(
            col(Series.status).in_([SeriesStatus.PENDING.value, SeriesStatus.RUNNING.value]),
            or_(col(LadderSeries.lease_until).is_(None), col(LadderSeries.lease_until) < now),
        )
        .order_by(col(LadderSeries.series_id))
    )
    if playing:
        query = query.where(col(LadderSeries.series_id).not_in(list(playing)))
    for series_id, old_lease in session.exec(query).all():
        condition = (
            col(LadderSeries.lease_until).is_(None)
            if old_lease is None
            else col(LadderSeries.lease_until) == old_lease
        )
        result = session.execute(
            update(LadderSeries)
            .where(col(LadderSeries.series_id) == series_id, condition)
            .values(claimed_by=claimed_by, lease_until=now + lease)
        )
        if result.rowcount == 1:  # type: ignore[attr-defined]
            return series_id
    return None


def renew_leases(
    series_ids: list[int], *, session: Session, claimed_by: str, lease: timedelta
) -> int:
    """Extend the leases this server holds; returns how many it still held."""
    if not series_ids:
        return 0
    result = session.execute(
        update(LadderSeries)
        .where(
            col(LadderSeries.series_id).in_(series_ids),
            col(LadderSeries.claimed_by) == claimed_by,
        )
        .values(lease_until=utcnow() + lease)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def release(series_id: int, *, session: Session, claimed_by: str) -> None:
    """Give up the lease on a series (finished, or stopped cleanly)."""
    session.execute(
        update(LadderSeries)
        .where(col(LadderSeries.series_id) == series_id, col(LadderSeries.claimed_by) == claimed_by)
        .values(claimed_by=None, lease_until=None)
    )


def ladder_series_ids(*, session: Session, unfinished_only: bool = False) -> list[int]:
    """Ids of the ladder's series, oldest first."""
    query = select(LadderSeries.series_id).join(
        Series, col(Series.id) == col(LadderSeries.series_id)
    )
    if unfinished_only:
        query = query.where(
            col(Series.status).in_([SeriesStatus.PENDING.value, SeriesStatus.RUNNING.value])
        )
    return list(session.exec(query.order_by(col(LadderSeries.series_id))).all())


def ladder_games_counted(*, session: Session) -> int:
    """Counted (not voided) games of ladder series: what the budget is spent on."""
    query = (
        select(Game.id)
        .join(LadderSeries, col(LadderSeries.series_id) == col(Game.series_id))
        .where(col(Game.voided).is_(False))
    )
    return len(session.exec(query).all())


# ---------------------------------------------------------------------------- logs


def store_game_log(
    game_id: int, seat: int, submission_id: int, text: str, *, session: Session, limit: int
) -> GameLog:
    """Keep the last ``limit`` characters of a bot's output after a game (idempotent)."""
    existing = session.exec(
        select(GameLog).where(GameLog.game_id == game_id, GameLog.seat == seat)
    ).first()
    if existing is not None:
        return existing
    truncated = len(text) > limit
    row = GameLog(
        game_id=game_id,
        seat=seat,
        submission_id=submission_id,
        text=storable(text[-limit:] if truncated else text),
        truncated=truncated,
    )
    session.add(row)
    session.flush()
    return row


def logs_of_submissions(
    submission_ids: list[int], *, session: Session, limit: int = 100
) -> list[tuple[GameLog, Game]]:
    """The newest captured logs of these submissions with their games."""
    if not submission_ids:
        return []
    query = (
        select(GameLog, Game)
        .join(Game, col(Game.id) == col(GameLog.game_id))
        .where(col(GameLog.submission_id).in_(submission_ids))
        .order_by(col(GameLog.game_id).desc(), col(GameLog.seat))
        .limit(limit)
    )
    return [(log, game) for log, game in session.exec(query).all()]


def log_of_game(game_id: int, seat: int, *, session: Session) -> GameLog | None:
    """One seat's captured log of one game, or None."""
    return session.exec(
        select(GameLog).where(GameLog.game_id == game_id, GameLog.seat == seat)
    ).first()
