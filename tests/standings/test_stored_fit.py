"""A board reuses a stored rating snapshot only when that snapshot was fitted from exactly the
board's inputs, and then shows what a new fit would show."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import col, select

from arena.db import (
    Database,
    NewRatingSnapshot,
    RatingEntry,
    RatingLine,
    SeriesFormat,
    save_rating_snapshot,
)
from leaderboard.standings import Leaderboard, refit_and_store, standings
from tests.standings.test_standings import play, setup

MARK = 12345.0
"""A rating no fit of these games gives: written into a stored snapshot to see it reused."""


def board(db: Database, *, reuse: bool = True, tournament_id: int | None = None) -> Leaderboard:
    with db.read_session() as session:
        return standings(session=session, reuse=reuse, tournament_id=tournament_id)


def mark_snapshot(db: Database, snapshot_id: int) -> None:
    """Overwrite the best rating of a stored snapshot with :data:`MARK`."""
    with db.session() as session:
        entry = session.exec(
            select(RatingEntry)
            .where(RatingEntry.snapshot_id == snapshot_id)
            .order_by(col(RatingEntry.rank))
        ).first()
        assert entry is not None
        entry.rating = MARK
        session.add(entry)


FIRST = ["seat0", "seat0", "seat0", "seat1", "draw", "seat0"]
"""The first series' games."""


def played(tmp_path: Path, fmt: SeriesFormat) -> tuple[Database, list[int], list[int]]:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"], fmt)
    play(db, series[0], (ids[0], ids[1]), FIRST)
    play(db, series[1], (ids[0], ids[2]), ["seat0", "seat1", "draw", "seat0", "seat1", "seat0"])
    play(db, series[2], (ids[1], ids[2]), ["seat1", "seat0", "seat0", "forfeit1", "draw", "seat1"])
    return db, ids, series


@pytest.mark.parametrize("fmt", [SeriesFormat.STANDARD, SeriesFormat.DUPLICATE])
def test_a_fresh_snapshot_gives_the_board_a_fit_gives(tmp_path: Path, fmt: SeriesFormat) -> None:
    db, _, _ = played(tmp_path, fmt)
    fitted = board(db, reuse=False)
    assert fitted.fit is not None and fitted.inputs
    assert fitted.paired == (fmt is SeriesFormat.DUPLICATE)
    stored = refit_and_store(db)
    assert stored is not None
    assert stored.snapshot.parameters["inputs"] == fitted.inputs
    reused = board(db)
    # Every field: rows (ratings, intervals, LOS, order), model parameters, note, pentanomials.
    assert reused == fitted
    assert reused.to_dict() == fitted.to_dict()


def test_only_a_snapshot_of_the_same_inputs_is_reused(tmp_path: Path) -> None:
    db, ids, series = played(tmp_path, SeriesFormat.STANDARD)
    stored = refit_and_store(db)
    assert stored is not None and stored.snapshot.id is not None
    mark_snapshot(db, stored.snapshot.id)
    assert board(db).rows[0].rating == MARK  # the stored numbers are shown: no new fit
    assert board(db, reuse=False).rows[0].rating != MARK
    # One more game changes the inputs: the snapshot is stale and the board fits again.
    play(db, series[0], (ids[0], ids[1]), [*FIRST, "seat0"])  # the same six, then a 7th
    after = board(db)
    assert all(row.rating != MARK for row in after.rows)
    assert after == board(db, reuse=False)


def test_a_tournament_snapshot_serves_the_global_board_of_the_same_games(tmp_path: Path) -> None:
    db, _, _ = played(tmp_path, SeriesFormat.STANDARD)
    stored = refit_and_store(db, tournament_id=1)
    assert stored is not None and stored.snapshot.id is not None
    mark_snapshot(db, stored.snapshot.id)
    assert board(db, tournament_id=1).rows[0].rating == MARK
    assert board(db).rows[0].rating == MARK  # the one tournament holds every game


def test_a_snapshot_without_inputs_is_never_reused(tmp_path: Path) -> None:
    # Snapshots stored before inputs were recorded (or by other code) say nothing about
    # which games they fitted.
    db, ids, _ = played(tmp_path, SeriesFormat.STANDARD)
    fitted = board(db, reuse=False)
    assert fitted.fit is not None
    lines = [
        RatingLine(
            submission_id=row.submission_id,
            rank=row.rank,
            rating=MARK,
            games=row.games,
            wins=row.wins,
            draws=row.draws,
            losses=row.losses,
            score=row.score,
            error=row.interval,
            extra={"los_next": row.los_next},
        )
        for row in fitted.rows
    ]
    with db.session() as session:
        save_rating_snapshot(
            NewRatingSnapshot(model="bayeselo", parameters=fitted.fit.to_dict(), entries=lines),
            session=session,
        )
    assert board(db) == fitted
    assert len(ids) == len(fitted.rows)
