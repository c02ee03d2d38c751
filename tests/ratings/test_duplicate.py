"""Duplicate format: deal pairs, pentanomial counts and intervals that respect pairing."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import pytest

from leaderboard.ratings import (
    DealPair,
    Game,
    InvalidDealPairError,
    Outcome,
    RatingsError,
    pair_consecutive,
    paired_intervals,
    pentanomial_counts,
    read_games_csv,
)
from leaderboard.ratings.duplicate import _game_slope
from tests.ratings.fixture import CSV

W, D, L = Outcome.FIRST_WINS, Outcome.DRAW, Outcome.SECOND_WINS
BOTS = ("a", "b", "c", "d")
STRENGTH = {"a": 0.75, "b": 0.6, "c": 0.45, "d": 0.3}  # chance to beat an average bot


def pair_of(x: str, y: str, x_points: float) -> DealPair:
    """A deal pair where x moves first in game 1 and scores ``x_points`` over both games."""
    first, second = {
        0.0: (L, W),
        0.5: (L, D),
        1.0: (W, W),  # each seat's holder wins: a 1-1 split
        1.5: (W, D),
        2.0: (W, L),
    }[x_points]
    return DealPair(Game(x, y, first), Game(y, x, second))


Method = Literal["sandwich", "bootstrap"]
PairMaker = Callable[[np.random.Generator, str, str], DealPair]


def correlated(rng: np.random.Generator, x: str, y: str) -> DealPair:
    """The deal decides: one bot wins both games (2-0 or 0-2)."""
    p = STRENGTH[x] / (STRENGTH[x] + STRENGTH[y])
    return pair_of(x, y, 2.0 if rng.random() < p else 0.0)


def independent(rng: np.random.Generator, x: str, y: str) -> DealPair:
    """Each game on its own, no first-mover advantage."""
    p = STRENGTH[x] / (STRENGTH[x] + STRENGTH[y])
    game1 = W if rng.random() < p else L  # x moves first
    game2 = L if rng.random() < p else W  # y moves first
    return DealPair(Game(x, y, game1), Game(y, x, game2))


def anti_correlated(rng: np.random.Generator, x: str, y: str) -> DealPair:
    """Mostly the hand decides: whoever holds the strong hand wins, so each bot wins once.

    Which seat holds the strong hand is random, so this is no first-mover advantage.
    """
    if rng.random() < 0.8:
        x_first_game = W if rng.random() < 0.5 else L
        return DealPair(Game(x, y, x_first_game), Game(y, x, x_first_game))
    return independent(rng, x, y)


def tournament(maker: PairMaker, pairs_per_pairing: int = 60, seed: int = 5) -> list[DealPair]:
    rng = np.random.default_rng(seed)
    out = []
    for i, x in enumerate(BOTS):
        for y in BOTS[i + 1 :]:
            for k in range(pairs_per_pairing):
                # Alternate who moves first in game 1 so colours stay balanced.
                out.append(maker(rng, x, y) if k % 2 else maker(rng, y, x))
    return out


def test_points_and_validation() -> None:
    pair = DealPair(Game("a", "b", W), Game("b", "a", D))
    assert pair.points("a") == 1.5 and pair.points("b") == 0.5
    assert pair.players == ("a", "b")
    with pytest.raises(KeyError, match="'z'"):
        pair.points("z")
    with pytest.raises(InvalidDealPairError, match="seats swapped"):
        DealPair(Game("a", "b", W), Game("a", "b", L))


def test_pair_consecutive_checks_every_pair() -> None:
    games = [Game("a", "b", W), Game("b", "a", W), Game("a", "c", D), Game("a", "c", D)]
    with pytest.raises(InvalidDealPairError, match="games 3 and 4"):
        pair_consecutive(games)
    with pytest.raises(InvalidDealPairError, match="3 games"):
        pair_consecutive(games[:3])
    assert len(pair_consecutive(games[:2])) == 1


def test_pentanomial_counts_of_a_small_set() -> None:
    pairs = [
        pair_of("b", "a", 2.0),  # a scores 0
        pair_of("a", "b", 1.0),
        pair_of("a", "b", 1.5),
        pair_of("a", "b", 0.5),
        pair_of("b", "a", 0.5),  # a scores 1.5
        pair_of("c", "a", 1.0),
    ]
    table = pentanomial_counts(pairs)
    assert [(p.player, p.opponent) for p in table] == [("a", "b"), ("a", "c")]
    ab = table[0]
    assert ab.counts == (1, 1, 1, 2, 0)
    assert ab.pairs == 5
    assert ab.score == pytest.approx((0 + 0.5 + 1 + 1.5 + 1.5) / 10)
    assert table[1].counts == (0, 0, 1, 0, 0)


def test_fixture_pentanomials_agree_with_game_scores() -> None:
    games = read_games_csv(CSV)
    table = pentanomial_counts(pair_consecutive(games))
    assert sum(p.pairs for p in table) == 420
    for p in table:
        scored = sum(
            g.score if g.first == p.player else 1 - g.score
            for g in games
            if {g.first, g.second} == {p.player, p.opponent}
        )
        assert p.score == pytest.approx(scored / (2 * p.pairs))


@pytest.mark.parametrize("method", ["sandwich", "bootstrap"])
def test_perfectly_correlated_pairs_widen_the_intervals(method: Method) -> None:
    result = paired_intervals(
        tournament(correlated),
        method=method,
        samples=150,
    )
    ratio = result.paired / result.naive
    # Two games that always agree carry the information of one: about sqrt(2) wider.
    assert np.all(ratio > 1.2), ratio
    assert np.all(ratio < 1.8), ratio


@pytest.mark.parametrize("method", ["sandwich", "bootstrap"])
def test_independent_games_keep_the_naive_intervals(method: Method) -> None:
    result = paired_intervals(
        tournament(independent),
        method=method,
        samples=150,
    )
    ratio = result.paired / result.naive
    assert np.all((ratio > 0.8) & (ratio < 1.2)), ratio


@pytest.mark.parametrize("method", ["sandwich", "bootstrap"])
def test_anti_correlated_pairs_narrow_the_intervals(method: Method) -> None:
    result = paired_intervals(
        tournament(anti_correlated),
        method=method,
        samples=150,
    )
    assert np.all(result.paired < 0.7 * result.naive), result.by_name()


def test_fit_is_the_plain_bayeselo_fit_and_bootstrap_is_seeded() -> None:
    pairs = tournament(independent, pairs_per_pairing=20)
    one = paired_intervals(pairs, method="bootstrap", samples=40, seed=1)
    again = paired_intervals(pairs, method="bootstrap", samples=40, seed=1)
    other = paired_intervals(pairs, method="bootstrap", samples=40, seed=2)
    assert np.array_equal(one.paired, again.paired)
    assert not np.array_equal(one.paired, other.paired)
    assert set(one.by_name()) == set(BOTS)
    assert np.array_equal(one.naive, one.fit.intervals)


def test_game_slope_matches_finite_differences() -> None:
    result = paired_intervals(tournament(independent, pairs_per_pairing=10))
    fit = result.fit
    i, j = np.array([0]), np.array([1])
    h = 1e-6

    def log_p(shift: float, code: int) -> float:
        s = (fit.internal[0] - fit.internal[1] + fit.advantage) * math.log(10) / 400 + shift
        delta = fit.drawelo * math.log(10) / 400
        win = 1 / (1 + math.exp(-(s - delta)))
        loss = 1 / (1 + math.exp(-(-s - delta)))
        return math.log([win, 1 - win - loss, loss][code])

    for code in (0, 1, 2):
        numeric = (log_p(h, code) - log_p(-h, code)) / (2 * h)
        slope = _game_slope(fit, i, j, np.array([code]))
        assert slope[0] == pytest.approx(numeric, rel=1e-5)


def test_bad_requests() -> None:
    with pytest.raises(RatingsError, match="no deal pairs"):
        paired_intervals([])
    pairs = tournament(independent, pairs_per_pairing=4)
    with pytest.raises(RatingsError, match="unknown interval method"):
        paired_intervals(pairs, method="jackknife")  # type: ignore[arg-type]
    with pytest.raises(RatingsError, match="at least 2 samples"):
        paired_intervals(pairs, method="bootstrap", samples=1)
