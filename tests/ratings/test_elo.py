"""Live Elo: expected score, K = 32 then 16, game order, provisional flag."""

from __future__ import annotations

import pytest

from leaderboard.ratings import EloTracker, Game, Outcome, elo_ratings, expected_score

W, D, L = Outcome.FIRST_WINS, Outcome.DRAW, Outcome.SECOND_WINS


def test_expected_score() -> None:
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)  # 400 points: odds 10 to 1
    assert expected_score(1500, 1900) + expected_score(1900, 1500) == pytest.approx(1.0)


def test_first_game_moves_both_by_sixteen_with_k_32() -> None:
    first, second = EloTracker().update(Game("a", "b", W))
    assert first.rating == pytest.approx(1516.0)
    assert second.rating == pytest.approx(1484.0)
    assert first.games == second.games == 1
    assert first.provisional and second.provisional


def test_draw_counts_half() -> None:
    tracker = EloTracker()
    tracker.update(Game("a", "b", W))  # a 1516, b 1484
    b, a = tracker.update(Game("b", "a", D))  # (first mover, second mover)
    e = expected_score(1484.0, 1516.0)
    assert b.rating == pytest.approx(1484.0 + 32 * (0.5 - e))
    assert a.rating == pytest.approx(1516.0 + 32 * (0.5 - (1 - e)))


def test_k_drops_to_sixteen_after_thirty_games() -> None:
    tracker = EloTracker()
    for k in range(30):
        tracker.update(Game("a", f"opp{k}", D))  # draws between equals change nothing
    established = tracker.rating("a")
    assert established.games == 30 and not established.provisional
    assert tracker.k_factor("a") == 16.0 and tracker.k_factor("new") == 32.0
    a, new = tracker.update(Game("a", "new", L))
    assert a.rating == pytest.approx(1500.0 - 16 * 0.5)  # a uses K = 16
    assert new.rating == pytest.approx(1500.0 + 32 * 0.5)  # the newcomer still K = 32
    assert new.provisional


def test_order_matters_for_live_elo() -> None:
    games = [Game("a", "b", W), Game("a", "b", W), Game("b", "a", W)]
    forward = {r.name: r.rating for r in elo_ratings(games)}
    backward = {r.name: r.rating for r in elo_ratings(list(reversed(games)))}
    assert forward["a"] != pytest.approx(backward["a"])
    # ...but rating points are conserved while both sides share a K.
    assert forward["a"] + forward["b"] == pytest.approx(3000.0)


def test_ratings_sorted_best_first_and_options() -> None:
    games = [Game("c", "b", W), Game("b", "a", W), Game("c", "a", W)]
    table = elo_ratings(games, initial=1000.0, k_new=10.0)
    assert [r.name for r in table] == ["c", "b", "a"]
    a_after_two = 1000.0 - 10 * (1 - expected_score(995.0, 1000.0))  # b (995) beat a
    assert table[0].rating == pytest.approx(1005.0 + 10 * (1 - expected_score(1005, a_after_two)))
