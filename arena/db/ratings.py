"""Rating snapshots: each fit is stored whole, never updated, so history is kept."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from arena.db._util import get_or_raise
from arena.db.models import RatingEntry, RatingSnapshot, Submission, Tournament
from arena.db.records import NewRatingSnapshot


@dataclass(frozen=True)
class StoredSnapshot:
    """A snapshot with its lines, best rank first."""

    snapshot: RatingSnapshot
    entries: list[RatingEntry]


def save_rating_snapshot(new: NewRatingSnapshot, *, session: Session) -> StoredSnapshot:
    """Store a ratings fit with all its lines (one transaction with the caller's)."""
    if new.tournament_id is not None:
        get_or_raise(session, Tournament, new.tournament_id, "tournament")
    for line in new.entries:
        get_or_raise(session, Submission, line.submission_id, "submission")
    snapshot = RatingSnapshot(
        tournament_id=new.tournament_id, model=new.model, parameters=dict(new.parameters)
    )
    session.add(snapshot)
    session.flush()
    assert snapshot.id is not None
    entries = [
        RatingEntry(
            snapshot_id=snapshot.id,
            submission_id=line.submission_id,
            rank=line.rank,
            rating=line.rating,
            error=line.error,
            ci_low=line.ci_low,
            ci_high=line.ci_high,
            games=line.games,
            wins=line.wins,
            draws=line.draws,
            losses=line.losses,
            score=line.score,
            extra=dict(line.extra),
        )
        for line in new.entries
    ]
    session.add_all(entries)
    session.flush()
    return StoredSnapshot(snapshot, sorted(entries, key=lambda e: (e.rank, e.submission_id)))


def load_rating_snapshot(snapshot_id: int, *, session: Session) -> StoredSnapshot:
    """A stored snapshot by id, or :class:`NotFoundError`."""
    snapshot = get_or_raise(session, RatingSnapshot, snapshot_id, "rating snapshot")
    return StoredSnapshot(snapshot, _entries(snapshot_id, session=session))


def latest_rating_snapshot(
    *, session: Session, model: str, tournament_id: int | None = None
) -> StoredSnapshot | None:
    """The newest snapshot of ``model`` (global when ``tournament_id`` is None), or None."""
    query = select(RatingSnapshot).where(RatingSnapshot.model == model)
    if tournament_id is None:
        query = query.where(col(RatingSnapshot.tournament_id).is_(None))
    else:
        query = query.where(RatingSnapshot.tournament_id == tournament_id)
    query = query.order_by(col(RatingSnapshot.created_at).desc(), col(RatingSnapshot.id).desc())
    snapshot = session.exec(query).first()
    if snapshot is None:
        return None
    assert snapshot.id is not None
    return StoredSnapshot(snapshot, _entries(snapshot.id, session=session))


def rating_history(
    submission_id: int, *, session: Session, model: str, tournament_id: int | None = None
) -> list[tuple[datetime, RatingEntry]]:
    """A submission's rating in every snapshot of ``model``, oldest first (for plots)."""
    query = (
        select(RatingSnapshot.created_at, RatingEntry)
        .join(RatingSnapshot, col(RatingSnapshot.id) == col(RatingEntry.snapshot_id))
        .where(RatingEntry.submission_id == submission_id, RatingSnapshot.model == model)
    )
    if tournament_id is None:
        query = query.where(col(RatingSnapshot.tournament_id).is_(None))
    else:
        query = query.where(RatingSnapshot.tournament_id == tournament_id)
    query = query.order_by(col(RatingSnapshot.created_at), col(RatingSnapshot.id))
    return [(at, entry) for at, entry in session.exec(query)]


def _entries(snapshot_id: int, *, session: Session) -> list[RatingEntry]:
    query = (
        select(RatingEntry)
        .where(RatingEntry.snapshot_id == snapshot_id)
        .order_by(col(RatingEntry.rank), col(RatingEntry.submission_id))
    )
    return list(session.exec(query))
