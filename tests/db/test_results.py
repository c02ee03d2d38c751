"""Aggregates for the ratings: ordered-pair W/D/L, outcomes in order, forfeits by reason."""

from __future__ import annotations

from leaderboard.db import (
    Database,
    GameResult,
    PairCounts,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    forfeit_counts,
    game_outcomes,
    pair_counts,
    record_game,
    series_of_tournament,
)
from tests.db.helpers import World, forfeit_game, game


def test_pair_counts_from_the_first_movers_side(db: Database, world: World) -> None:
    a, b = world.sub_a, world.sub_b
    records = [
        # dealer 0 -> seat 1 moves first. Seats (a, b) unless swapped.
        game(world, 0, dealer=0, result=GameResult.SEAT0),  # b first, a wins: b loses
        game(world, 1, dealer=1, result=GameResult.SEAT0),  # a first, a wins
        game(world, 2, dealer=1, result=GameResult.DRAW),  # a first, draw
        # seats (b, a), b deals: a first, a wins
        game(world, 3, dealer=0, result=GameResult.SEAT1, swap=True),
        game(world, 4, dealer=0, result=GameResult.SEAT1),  # b first, b wins
        # seats (b, a), b deals: a first, draw
        game(world, 5, dealer=0, result=GameResult.DRAW, swap=True),
        game(world, 6, dealer=0, result=None, voided=True, void_reason="infra", end_reason="void"),
    ]
    with db.session() as s:
        for record in records:
            record_game(record, session=s)
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
        record_game(game(world, 0, dealer=1), session=s)
        record_game(game(World(world.sub_a, world.sub_b, t2.id, other.id), 0, dealer=1), session=s)
        assert pair_counts(session=s) == [PairCounts(world.sub_a, world.sub_b, 2, 0, 0)]
        assert pair_counts(session=s, tournament_id=t2.id) == [
            PairCounts(world.sub_a, world.sub_b, 1, 0, 0)
        ]
        assert len(game_outcomes(session=s, tournament_id=world.tournament_id)) == 1


def test_forfeits_by_reason_per_submission(db: Database, world: World) -> None:
    with db.session() as s:
        record_game(forfeit_game(world, 0, seat=0, reason="timeout"), session=s)
        record_game(forfeit_game(world, 1, seat=0, reason="timeout"), session=s)
        record_game(forfeit_game(world, 2, seat=0, reason="crash"), session=s)
        record_game(forfeit_game(world, 3, seat=1, reason="illegal_action"), session=s)
        record_game(game(world, 4), session=s)
        assert forfeit_counts(session=s) == {
            world.sub_a: {"timeout": 2, "crash": 1},
            world.sub_b: {"illegal_action": 1},
        }
        assert forfeit_counts(session=s, tournament_id=world.tournament_id + 1) == {}
