"""Tournaments and series: created together, statuses, what is left to play."""

from __future__ import annotations

import pytest

from arena.db import (
    Database,
    InvalidRecordError,
    NotFoundError,
    SeriesFormat,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    TournamentStatus,
    add_series,
    create_tournament,
    get_series,
    get_tournament,
    list_tournaments,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    submit,
    unfinished_series,
)
from tests.db.helpers import World, new_submission


def test_tournament_with_series(db: Database) -> None:
    with db.session() as s:
        ids = [submit(new_submission(n), session=s).submission.id for n in ("a", "b", "c")]
    a, b, c = (i for i in ids if i is not None)
    specs = [
        SeriesSpec(a, b, 10, 1),
        SeriesSpec(a, c, 10, 2, SeriesFormat.DUPLICATE),
        SeriesSpec(b, c, 10, 2**63 - 1),
    ]
    config = {"time": {"move_s": 1.0, "bank_s": 10.0}, "bots": ["a", "b", "c"]}
    with db.session() as s:
        t = create_tournament(TournamentSpec("rr", 12345, config, specs), session=s)
        assert t.id is not None
        tid = t.id
    with db.read_session() as s:
        stored = get_tournament(tid, session=s)
        assert (stored.name, stored.seed, stored.config) == ("rr", 12345, config)
        assert stored.status == "pending" and stored.finished_at is None
        series = series_of_tournament(tid, session=s)
        assert [x.position for x in series] == [0, 1, 2]
        assert [(x.submission_a_id, x.submission_b_id, x.seed) for x in series] == [
            (a, b, 1),
            (a, c, 2),
            (b, c, 2**63 - 1),
        ]
        assert series[1].format == "duplicate" and series[0].format == "standard"
        assert all(x.status == "pending" for x in series)
        assert [x.id for x in list_tournaments(session=s, name="rr")] == [tid]


def test_statuses_and_unfinished_series(db: Database, world: World) -> None:
    with db.session() as s:
        extra = add_series(
            world.tournament_id, SeriesSpec(world.sub_b, world.sub_a, 4, 5), session=s
        )
        assert extra.position == 1
        running = set_tournament_status(world.tournament_id, TournamentStatus.RUNNING, session=s)
        assert running.started_at is not None and running.finished_at is None
        done = set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
        assert done.started_at is not None and done.finished_at is not None
    with db.read_session() as s:
        assert [x.id for x in unfinished_series(world.tournament_id, session=s)] == [extra.id]
        assert get_series(world.series_id, session=s).status == "finished"
        finished = series_of_tournament(
            world.tournament_id, session=s, status=SeriesStatus.FINISHED
        )
        assert [x.id for x in finished] == [world.series_id]
    with db.session() as s:
        t = set_tournament_status(world.tournament_id, TournamentStatus.FINISHED, session=s)
        assert t.status == "finished" and t.finished_at is not None


def test_unknown_submission_creates_nothing(db: Database, world: World) -> None:
    spec = TournamentSpec("bad", 1, {}, [SeriesSpec(world.sub_a, 4242, 2, 1)])
    with pytest.raises(NotFoundError, match="4242"), db.session() as s:
        create_tournament(spec, session=s)
    with db.read_session() as s:
        assert list_tournaments(session=s, name="bad") == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((1, 1, 10, 0), "two different submissions"),
        ((1, 2, -1, 0), "games_planned"),
        ((1, 2, 3, 0, SeriesFormat.DUPLICATE), "must be even"),
        ((1, 2, 10, -5), "seed"),
        ((1, 2, 10, 2**63), "seed"),
    ],
)
def test_invalid_series(args: tuple[object, ...], fragment: str) -> None:
    with pytest.raises(InvalidRecordError, match=fragment):
        SeriesSpec(*args)  # type: ignore[arg-type]


def test_invalid_tournament() -> None:
    with pytest.raises(InvalidRecordError, match="tournament name"):
        TournamentSpec("", 1)
    with pytest.raises(InvalidRecordError, match="JSON"):
        TournamentSpec("x", 1, {"f": float("nan")})
