"""Tournaments and their series."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from arena.db._util import get_or_raise
from arena.db.enums import SeriesStatus, TournamentStatus
from arena.db.errors import ConflictError
from arena.db.models import Series, Submission, Tournament
from arena.db.records import SeriesSpec, TournamentSpec
from arena.db.types import utcnow

_TOURNAMENT_DONE = {TournamentStatus.FINISHED, TournamentStatus.CANCELLED, TournamentStatus.FAILED}
_SERIES_DONE = {SeriesStatus.FINISHED, SeriesStatus.ABORTED}


def create_tournament(
    spec: TournamentSpec,
    *,
    session: Session,
    status: TournamentStatus = TournamentStatus.PENDING,
) -> Tournament:
    """Create a tournament and all its series (positions 0, 1, ... in ``spec.series`` order)."""
    for series_spec in spec.series:
        _require_submissions(series_spec, session=session)
    tournament = Tournament(
        name=spec.name, config=dict(spec.config), seed=spec.seed, status=status.value
    )
    session.add(tournament)
    session.flush()
    assert tournament.id is not None
    for position, series_spec in enumerate(spec.series):
        session.add(_series_row(tournament.id, position, series_spec))
    session.flush()
    return tournament


def add_series(tournament_id: int, spec: SeriesSpec, *, session: Session) -> Series:
    """Append one series to an existing tournament (next free position)."""
    get_tournament(tournament_id, session=session)
    _require_submissions(spec, session=session)
    last = session.exec(
        select(func.max(Series.position)).where(Series.tournament_id == tournament_id)
    ).one()
    row = _series_row(tournament_id, 0 if last is None else last + 1, spec)
    session.add(row)
    session.flush()
    return row


def _series_row(tournament_id: int, position: int, spec: SeriesSpec) -> Series:
    return Series(
        tournament_id=tournament_id,
        position=position,
        submission_a_id=spec.submission_a_id,
        submission_b_id=spec.submission_b_id,
        format=spec.format.value,
        games_planned=spec.games_planned,
        seed=spec.seed,
        status=SeriesStatus.PENDING.value,
        ruleset=spec.ruleset,
        seats=list(spec.seats) if spec.seats else None,
    )


def _require_submissions(spec: SeriesSpec, *, session: Session) -> None:
    for submission_id in {spec.submission_a_id, spec.submission_b_id, *spec.seats}:
        get_or_raise(session, Submission, submission_id, "submission")


def get_tournament(tournament_id: int, *, session: Session) -> Tournament:
    """The tournament with this id, or :class:`NotFoundError`."""
    return get_or_raise(session, Tournament, tournament_id, "tournament")


def list_tournaments(*, session: Session, name: str | None = None) -> list[Tournament]:
    """Tournaments, newest first, optionally only those called ``name``."""
    query = select(Tournament)
    if name is not None:
        query = query.where(Tournament.name == name)
    return list(
        session.exec(query.order_by(col(Tournament.created_at).desc(), col(Tournament.id).desc()))
    )


def set_tournament_status(
    tournament_id: int, status: TournamentStatus, *, session: Session
) -> Tournament:
    """Change a tournament's status, stamping when it started and when it ended."""
    tournament = get_tournament(tournament_id, session=session)
    status = TournamentStatus(status)
    tournament.status = status.value
    if status is TournamentStatus.RUNNING and tournament.started_at is None:
        tournament.started_at = utcnow()
    tournament.finished_at = utcnow() if status in _TOURNAMENT_DONE else None
    session.add(tournament)
    session.flush()
    return tournament


def get_series(series_id: int, *, session: Session) -> Series:
    """The series with this id, or :class:`NotFoundError`."""
    return get_or_raise(session, Series, series_id, "series")


def series_of_tournament(
    tournament_id: int, *, session: Session, status: SeriesStatus | None = None
) -> list[Series]:
    """The tournament's series in position order, optionally only those in ``status``."""
    get_tournament(tournament_id, session=session)
    query = select(Series).where(Series.tournament_id == tournament_id)
    if status is not None:
        query = query.where(Series.status == SeriesStatus(status).value)
    return list(session.exec(query.order_by(col(Series.position))))


def unfinished_series(tournament_id: int, *, session: Session) -> list[Series]:
    """Series still to play (pending or running), in position order: what ``resume`` runs."""
    done = [s.value for s in _SERIES_DONE]
    get_tournament(tournament_id, session=session)
    query = select(Series).where(
        Series.tournament_id == tournament_id, col(Series.status).not_in(done)
    )
    return list(session.exec(query.order_by(col(Series.position))))


def set_series_status(series_id: int, status: SeriesStatus, *, session: Session) -> Series:
    """Change a series' status, stamping when it started and when it ended."""
    series = get_series(series_id, session=session)
    status = SeriesStatus(status)
    series.status = status.value
    if status is not SeriesStatus.PENDING and series.started_at is None:
        series.started_at = utcnow()
    series.finished_at = utcnow() if status in _SERIES_DONE else None
    session.add(series)
    session.flush()
    return series


def find_or_create_tournament(
    name: str, seed: int, *, session: Session, config: dict[str, Any] | None = None
) -> tuple[Tournament, bool]:
    """The oldest tournament called ``name`` with ``seed``, or a new one (pending, no series)
    with ``config``; the flag says whether it was created. Imports use it so that importing
    the same games twice adds nothing."""
    found = session.exec(
        select(Tournament)
        .where(Tournament.name == name, Tournament.seed == seed)
        .order_by(col(Tournament.id))
    ).first()
    if found is not None:
        return found, False
    spec = TournamentSpec(name=name, seed=seed, config=config or {})
    return create_tournament(spec, session=session), True


def store_tournament_config(
    tournament_id: int, config: dict[str, Any], *, session: Session
) -> Tournament:
    """Replace a tournament's stored configuration with ``config`` (already validated), in
    any status: for records kept in it (an import's series origins), not for settings."""
    tournament = get_tournament(tournament_id, session=session)
    tournament.config = dict(config)
    session.add(tournament)
    session.flush()
    return tournament


def ensure_series(
    tournament_id: int, position: int, spec: SeriesSpec, *, session: Session
) -> Series:
    """The tournament's series at ``position``, created from ``spec`` if there is none; an
    existing one must be the same series (pair, format, games, seed, ruleset and a table's
    seats) or ConflictError."""
    get_tournament(tournament_id, session=session)
    existing = session.exec(
        select(Series).where(Series.tournament_id == tournament_id, Series.position == position)
    ).first()
    if existing is None:
        _require_submissions(spec, session=session)
        row = _series_row(tournament_id, position, spec)
        session.add(row)
        session.flush()
        return row
    same = (
        existing.submission_a_id == spec.submission_a_id
        and existing.submission_b_id == spec.submission_b_id
        and existing.format == spec.format.value
        and existing.games_planned == spec.games_planned
        and existing.seed == spec.seed
        and existing.ruleset == spec.ruleset
        and list(existing.seats or ()) == list(spec.seats)
    )
    if not same:
        raise ConflictError(
            f"tournament {tournament_id} already has a different series at position {position}"
            f" (series {existing.id})"
        )
    return existing


def extend_tournament(
    tournament_id: int,
    specs: list[SeriesSpec],
    *,
    config: dict[str, Any],
    session: Session,
) -> list[Series]:
    """Append ``specs`` as new series (next free positions) to a tournament that was not
    cancelled, store its new ``config`` (which records the extension) and mark it pending
    again, so that a run plays the new series. ConflictError for a cancelled tournament."""
    tournament = get_tournament(tournament_id, session=session)
    if tournament.status == TournamentStatus.CANCELLED.value:
        raise ConflictError(f"tournament {tournament_id} was cancelled; it cannot be extended")
    added = [add_series(tournament_id, spec, session=session) for spec in specs]
    tournament.config = dict(config)
    tournament.status = TournamentStatus.PENDING.value
    tournament.finished_at = None
    session.add(tournament)
    session.flush()
    return added
