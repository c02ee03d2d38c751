"""Aggregates for the ratings: ordered-pair W/D/L, outcomes in order, forfeits by reason."""

from __future__ import annotations

from arena.db import (
    Database,
    PairCounts,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    forfeit_counts,
    game_outcomes,
    games_of_series,
    pair_counts,
    record_game,
    series_of_tournament,
    void_game,
)
from referee.protocol.messages import GameEndReason
from tests.db.helpers import World, forfeit_game, game, void


def test_pair_counts_from_the_first_movers_side(db: Database, world: World) -> None:
    a, b = world.sub_a, world.sub_b
    records = [
        # dealer 0 -> seat 1 moves first. Seats (a, b) unless swapped.
        game(world, 0, dealer=0, winner=0),  # b first, a wins: b loses
        game(world, 1, dealer=1, winner=0),  # a first, a wins
        game(world, 2, dealer=1, winner=None),  # a first, draw
        # seats (b, a), b deals: a first, a wins
        game(world, 3, dealer=0, winner=1, swap=True),
        game(world, 4, dealer=0, winner=1),  # b first, b wins
        # seats (b, a), b deals: a first, draw
        game(world, 5, dealer=0, winner=None, swap=True),
        void(world, 6, dealer=0),
    ]
    with db.session() as s:
        for record in records:
            record_game(*record, session=s)
        assert pair_counts(session=s) == [
            PairCounts(a, b, wins=2, draws=2, losses=0),
            PairCounts(b, a, wins=1, draws=0, losses=1),
        ]
        assert pair_counts(session=s, tournament_id=world.tournament_id) == pair_counts(session=s)
        assert pair_counts(session=s, tournament_id=world.tournament_id + 1000) == []
        outcomes = game_outcomes(session=s)
    assert [o.number for o in outcomes] == [0, 1, 2, 3, 4, 5]  # voided game left out, in order
    assert [(o.first_submission_id, o.first_score) for o in outcomes] == [
        (b, 0.0),
        (a, 1.0),
        (a, 0.5),
        (a, 1.0),
        (b, 1.0),
        (a, 0.5),
    ]


def test_results_filtered_by_tournament(db: Database, world: World) -> None:
    with db.session() as s:
        t2 = create_tournament(
            TournamentSpec("second", 1, {}, [SeriesSpec(world.sub_a, world.sub_b, 2, 3)]),
            session=s,
        )
        assert t2.id is not None
        (other,) = series_of_tournament(t2.id, session=s)
        assert other.id is not None
        record_game(*game(world, 0, dealer=1), session=s)
        second = World(world.sub_a, world.sub_b, t2.id, other.id)
        record_game(*game(second, 0, dealer=1), session=s)
        assert pair_counts(session=s) == [PairCounts(world.sub_a, world.sub_b, 2, 0, 0)]
        assert pair_counts(session=s, tournament_id=t2.id) == [
            PairCounts(world.sub_a, world.sub_b, 1, 0, 0)
        ]
        assert len(game_outcomes(session=s, tournament_id=world.tournament_id)) == 1


def test_forfeits_by_reason_per_submission(db: Database, world: World) -> None:
    timeout, crash = GameEndReason.TIMEOUT, GameEndReason.CRASH
    with db.session() as s:
        record_game(*forfeit_game(world, 0, seat=0, reason=timeout), session=s)
        record_game(*forfeit_game(world, 1, seat=0, reason=timeout), session=s)
        record_game(*forfeit_game(world, 2, seat=0, reason=crash), session=s)
        record_game(*forfeit_game(world, 3, seat=1, reason=GameEndReason.MEMORY_LIMIT), session=s)
        record_game(*game(world, 4), session=s)
        # A double forfeit is scored as a draw and blames neither submission.
        record_game(*game(world, 5, winner=None, ending=GameEndReason.DOUBLE_FORFEIT), session=s)
        # A voided forfeit does not count.
        record_game(*forfeit_game(world, 6, seat=1, reason=crash), session=s)
    with db.read_session() as s:
        (voided_id,) = [g.id for g in games_of_series(world.series_id, session=s) if g.number == 6]
        assert voided_id is not None
    with db.session() as s:
        void_game(voided_id, "the host went away", session=s)
        # Counted by the one ending vocabulary, per offending submission.
        assert forfeit_counts(session=s) == {
            world.sub_a: {"timeout": 2, "crash": 1},
            world.sub_b: {"memory limit": 1},
        }
        assert forfeit_counts(session=s, tournament_id=world.tournament_id) == forfeit_counts(
            session=s
        )
        assert forfeit_counts(session=s, tournament_id=world.tournament_id + 1) == {}
