"""Recording games (atomically, idempotently) and reading them back for replay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from leaderboard.db._util import get_or_raise
from leaderboard.db.enums import SeriesStatus
from leaderboard.db.errors import ConflictError, InvalidRecordError
from leaderboard.db.models import Game, Series
from leaderboard.db.records import GameRecord, Move, clip_offending_input
from leaderboard.db.types import utcnow


@dataclass(frozen=True)
class RecordResult:
    """The stored game and whether this call wrote it (False: identical game already there)."""

    game: Game
    created: bool


def record_game(record: GameRecord, *, session: Session) -> RecordResult:
    """Store one game whole, or raise and store nothing of it.

    Recording the same game again (same series, number and attempt, same content) returns
    the stored row with ``created=False``, so a resumed tournament cannot duplicate games.
    Different content under the same key raises :class:`ConflictError`, as does a second
    counted (not voided) attempt of a game number: void the first with :func:`void_game`.
    The series is marked running if it was pending, in the same transaction.
    """
    series = get_or_raise(session, Series, record.series_id, "series")
    pair = {series.submission_a_id, series.submission_b_id}
    if set(record.seat_submission_ids) != pair:
        raise InvalidRecordError(
            f"seat submissions {record.seat_submission_ids} do not match series "
            f"{series.id}, which is between submissions {sorted(pair)}"
        )
    values = _game_values(record)
    # One query for every attempt of this game number, so the checks below see one
    # consistent state even while other writers commit (PostgreSQL: READ COMMITTED).
    attempts = _attempts(record.series_id, record.number, session=session)
    same = [g for g in attempts if g.attempt == record.attempt]
    if same:
        return RecordResult(_same_or_conflict(same[0], values), created=False)
    counted = [g for g in attempts if not g.voided]
    if counted and not record.voided:
        raise ConflictError(
            f"game {record.number} of series {record.series_id} is already recorded as "
            f"attempt {counted[0].attempt} (game id {counted[0].id}); void that one before "
            f"recording attempt {record.attempt}"
        )
    game = Game(**values)
    try:
        # A savepoint: losing a race to an identical write leaves the transaction usable.
        with session.begin_nested():
            session.add(game)
            session.flush()
    except IntegrityError:
        # Another writer got there first: the same game (fine) or a different one (conflict).
        existing = _find(record, session=session)
        if existing is None:
            raise ConflictError(
                f"game {record.number} of series {record.series_id} (attempt "
                f"{record.attempt}) collides with a game recorded concurrently; another "
                "attempt of this number already counts"
            ) from None
        return RecordResult(_same_or_conflict(existing, values), created=False)
    _mark_series_running(series, session=session)
    return RecordResult(game, created=True)


def _game_values(record: GameRecord) -> dict[str, Any]:
    forfeit = record.forfeit
    offending = None if forfeit is None else forfeit.offending_input
    return {
        "series_id": record.series_id,
        "number": record.number,
        "attempt": record.attempt,
        "dealer": record.dealer,
        "first_mover": record.first_mover,
        "deck": list(record.deck),
        "actions": [m.to_json() for m in record.moves],
        "result": None if record.result is None else record.result.value,
        "end_reason": record.end_reason,
        "forfeit_seat": None if forfeit is None else forfeit.seat,
        "forfeit_reason": None if forfeit is None else forfeit.reason,
        "forfeit_input": None if offending is None else clip_offending_input(offending),
        "voided": record.voided,
        "void_reason": record.void_reason,
        "referee_version": record.referee_version,
        "seat0_submission_id": record.seat_submission_ids[0],
        "seat1_submission_id": record.seat_submission_ids[1],
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }


def _same_or_conflict(existing: Game, values: dict[str, Any]) -> Game:
    differing = sorted(k for k, v in values.items() if getattr(existing, k) != v)
    if differing:
        raise ConflictError(
            f"game {existing.number} of series {existing.series_id} (attempt "
            f"{existing.attempt}, game id {existing.id}) is already recorded with different "
            f"{', '.join(differing)}; recorded games are never overwritten"
        )
    return existing


def _find(record: GameRecord, *, session: Session) -> Game | None:
    return session.exec(
        select(Game).where(
            Game.series_id == record.series_id,
            Game.number == record.number,
            Game.attempt == record.attempt,
        )
    ).first()


def _attempts(series_id: int, number: int, *, session: Session) -> list[Game]:
    query = select(Game).where(Game.series_id == series_id, Game.number == number)
    return list(session.exec(query.order_by(col(Game.attempt))))


def _mark_series_running(series: Series, *, session: Session) -> None:
    if series.status == SeriesStatus.PENDING.value:
        series.status = SeriesStatus.RUNNING.value
        series.started_at = series.started_at or utcnow()
        session.add(series)
        session.flush()


def void_game(game_id: int, reason: str, *, session: Session) -> Game:
    """Mark a recorded game void (it stays stored; it no longer counts).

    Its replay is recorded as a new attempt (:func:`next_attempt`). Voiding a game twice
    raises :class:`ConflictError` rather than replacing the first reason.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidRecordError(f"a void reason is required, got {reason!r}")
    game = get_game(game_id, session=session)
    if game.voided:
        raise ConflictError(f"game {game_id} is already void ({game.void_reason!r})")
    game.voided = True
    game.void_reason = reason
    session.add(game)
    session.flush()
    return game


def get_game(game_id: int, *, session: Session) -> Game:
    """The game with this id (for replay), or :class:`NotFoundError`."""
    return get_or_raise(session, Game, game_id, "game")


def game_moves(game: Game) -> list[Move]:
    """The stored actions of a game as :class:`Move` values, in order."""
    return [Move.from_json(item) for item in game.actions]


def games_of_series(
    series_id: int, *, session: Session, include_voided: bool = False
) -> list[Game]:
    """The series' games ordered by number then attempt (voided ones only if asked)."""
    get_or_raise(session, Series, series_id, "series")
    query = select(Game).where(Game.series_id == series_id)
    if not include_voided:
        query = query.where(col(Game.voided).is_(False))
    return list(session.exec(query.order_by(col(Game.number), col(Game.attempt))))


def completed_game_numbers(series_id: int, *, session: Session) -> set[int]:
    """Numbers of the series' games that are recorded and count (not voided)."""
    get_or_raise(session, Series, series_id, "series")
    rows = session.exec(
        select(Game.number).where(Game.series_id == series_id, col(Game.voided).is_(False))
    )
    return set(rows)


def next_attempt(series_id: int, number: int, *, session: Session) -> int:
    """The attempt number to use for (re)playing game ``number`` of the series."""
    attempts = session.exec(
        select(Game.attempt).where(Game.series_id == series_id, Game.number == number)
    )
    return max(attempts, default=0) + 1
