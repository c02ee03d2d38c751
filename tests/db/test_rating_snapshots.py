"""Rating snapshots: stored whole, latest per model and scope, history per submission."""

from __future__ import annotations

import pytest

from arena.db import (
    Database,
    InvalidRecordError,
    NewRatingSnapshot,
    NotFoundError,
    RatingLine,
    latest_rating_snapshot,
    load_rating_snapshot,
    rating_history,
    save_rating_snapshot,
)
from tests.db.helpers import World


def _line(sub: int, rank: int, rating: float) -> RatingLine:
    return RatingLine(
        submission_id=sub,
        rank=rank,
        rating=rating,
        games=10,
        wins=6,
        draws=1,
        losses=3,
        score=0.65,
        error=25.5,
        ci_low=rating - 50,
        ci_high=rating + 50,
        extra={"los": 0.97},
    )


def test_save_load_latest_and_history(db: Database, world: World) -> None:
    params = {"drawelo": 97.3, "advantage": 32.8, "prior": 2.0}
    with db.session() as s:
        first = save_rating_snapshot(
            NewRatingSnapshot(
                "bayeselo", [_line(world.sub_b, 2, -10.0), _line(world.sub_a, 1, 10.0)], params
            ),
            session=s,
        )
        save_rating_snapshot(
            NewRatingSnapshot(
                "bayeselo",
                [_line(world.sub_a, 1, 30.0), _line(world.sub_b, 2, -30.0)],
                params,
                tournament_id=world.tournament_id,
            ),
            session=s,
        )
        second = save_rating_snapshot(
            NewRatingSnapshot("bayeselo", [_line(world.sub_a, 1, 20.0)], params), session=s
        )
        save_rating_snapshot(NewRatingSnapshot("elo", [_line(world.sub_a, 1, 1500.0)]), session=s)
    assert first.snapshot.id is not None
    with db.read_session() as s:
        loaded = load_rating_snapshot(first.snapshot.id, session=s)
        assert loaded.snapshot.parameters == params
        assert [(e.rank, e.submission_id, e.rating) for e in loaded.entries] == [
            (1, world.sub_a, 10.0),
            (2, world.sub_b, -10.0),
        ]
        entry = loaded.entries[0]
        assert (entry.games, entry.wins, entry.draws, entry.losses) == (10, 6, 1, 3)
        assert (entry.error, entry.ci_low, entry.ci_high, entry.extra) == (
            25.5,
            -40.0,
            60.0,
            {"los": 0.97},
        )
        latest = latest_rating_snapshot(session=s, model="bayeselo")
        assert latest is not None and latest.snapshot.id == second.snapshot.id
        scoped = latest_rating_snapshot(
            session=s, model="bayeselo", tournament_id=world.tournament_id
        )
        assert scoped is not None and scoped.entries[0].rating == 30.0
        assert latest_rating_snapshot(session=s, model="trueskill") is None
        history = rating_history(world.sub_a, session=s, model="bayeselo")
        assert [e.rating for _, e in history] == [10.0, 20.0]
        with pytest.raises(NotFoundError, match="rating snapshot"):
            load_rating_snapshot(9999, session=s)


def test_snapshot_for_unknown_submission_is_refused(db: Database, world: World) -> None:
    with pytest.raises(NotFoundError, match="submission with id 4040"), db.session() as s:
        save_rating_snapshot(NewRatingSnapshot("elo", [_line(4040, 1, 0.0)]), session=s)
    with db.read_session() as s:
        assert latest_rating_snapshot(session=s, model="elo") is None


def test_invalid_rating_lines() -> None:
    with pytest.raises(InvalidRecordError, match="wins \\+ draws \\+ losses"):
        RatingLine(1, 1, 0.0, games=5, wins=1, draws=1, losses=1, score=0.5)
    with pytest.raises(InvalidRecordError, match="rating must be finite"):
        RatingLine(1, 1, float("nan"), games=0, wins=0, draws=0, losses=0, score=0.0)
    with pytest.raises(InvalidRecordError, match="appears twice"):
        NewRatingSnapshot("elo", [_line(1, 1, 0.0), _line(1, 2, 0.0)])
