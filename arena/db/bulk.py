"""Recording many new games at once (imports, benchmarks): one statement per chunk of rows.

:func:`record_games` stores exactly what :func:`arena.db.record_game` would store for each
game (the same validation and the same row values) and applies them to live Elo and the
boards' tallies in the same transaction, but is not idempotent: it is for games that are not
stored yet.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from arena.db.elo import (
    ScoredGame,
    apply_games,
    forfeiter,
    game_boards,
    lock_boards,
    scored_pairs,
)
from arena.db.enums import SeriesStatus
from arena.db.errors import ConflictError, InvalidRecordError, NotFoundError

# The one mapping from a record to a row; bulk and single recording must never differ.
from arena.db.games import GamePlace, _game_values
from arena.db.models import Game, Series
from arena.db.types import utcnow
from referee.record import GameRecord

CHUNK = 2000
"""Rows per INSERT: well under every backend's limit on bound parameters per statement."""


def record_games(games: Sequence[tuple[GameRecord, GamePlace]], *, session: Session) -> list[int]:
    """Store new games in the caller's transaction (all or nothing); returns their ids.

    Raises :class:`InvalidRecordError` for an invalid record or seats that do not match
    the series (nothing is written), and :class:`ConflictError` when a game of the same
    place, or a second counted attempt of a game number, is already stored or repeated.
    Counted games enter live Elo in the order given.
    """
    rows = [_game_values(record, place) for record, place in games]
    series = _series(sorted({place.series_id for _, place in games}), session=session)
    for _, place in games:
        _check_seats(series[place.series_id], place)
    table = Game.__table__  # type: ignore[attr-defined]
    ids: list[int] = []
    connection = session.connection()
    # Their boards before their ids, as record_game does (arena/db/elo.py: id order).
    locked = lock_boards(
        connection,
        [
            scope
            for row in rows
            if not row["voided"]
            for scope in game_boards(
                series[row["series_id"]].tournament_id, row["ruleset"], row["players"]
            )
        ],
    )
    try:
        with session.begin_nested():
            # Asked for inside the block: the session emits the SAVEPOINT only when it next
            # hands out its connection (the one taken above would insert outside it).
            inserting = session.connection()
            for start in range(0, len(rows), CHUNK):
                chunk = rows[start : start + CHUNK]
                found = inserting.execute(
                    table.insert().returning(table.c.id, sort_by_parameter_order=True), chunk
                )
                ids.extend(int(row[0]) for row in found)
    except IntegrityError as exc:
        raise ConflictError(
            f"bulk recording of {len(rows)} games collides with stored games (or repeats a "
            f"place): {str(exc.orig).splitlines()[0]}"
        ) from None
    apply_games(
        connection,
        [
            ScoredGame(
                game_id,
                series[row["series_id"]].tournament_id,
                row["ruleset"],
                row["players"],
                scored_pairs(
                    ruleset=row["ruleset"],
                    dealer=row["dealer"],
                    first_mover=row["first_mover"],
                    result=row["result"],
                    seat0=row["seat0_submission_id"],
                    seat1=row["seat1_submission_id"],
                    seats=row["seats"],
                    pairwise=row["pairwise"],
                ),
                forfeiter(
                    row["forfeit_seat"],
                    row["seat0_submission_id"],
                    row["seat1_submission_id"],
                    row["seats"],
                ),
                None if row["forfeit_seat"] is None else str(row["end_reason"]),
            )
            for game_id, row in zip(ids, rows, strict=True)
            if not row["voided"]
        ],
        locked=locked,
    )
    pending = [s.id for s in series.values() if s.status == SeriesStatus.PENDING.value]
    if pending:
        session.execute(
            sa.update(Series)
            .where(col(Series.id).in_(pending))
            .values(status=SeriesStatus.RUNNING.value, started_at=utcnow())
        )
    session.expire_all()  # ORM rows read before (series) must not hide the updates
    return ids


def _series(ids: list[int], *, session: Session) -> dict[int, Series]:
    found: dict[int, Series] = {}
    for start in range(0, len(ids), CHUNK):
        query = sa.select(Series).where(col(Series.id).in_(ids[start : start + CHUNK]))
        for row in session.execute(query).scalars():
            assert row.id is not None
            found[row.id] = row
    missing = sorted(set(ids) - set(found))
    if missing:
        raise NotFoundError(f"no series with id {missing[0]!r}")
    return found


def _check_seats(series: Series, place: GamePlace) -> None:
    # The same rule as record_game: a table keeps its seating, two players either order.
    if series.seats is not None:
        ok = list(place.seats) == list(series.seats)
    else:
        ok = set(place.seats) == {series.submission_a_id, series.submission_b_id}
    if not ok:
        raise InvalidRecordError(
            f"seat submissions {place.seats} do not match series {series.id} "
            f"(submissions {list(series.seat_ids)})"
        )
