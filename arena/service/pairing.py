"""Which pair the ladder plays next: where the result teaches the most (pure functions).

The current fit is a Bradley-Terry model (logistic, draws count half) with a Gaussian prior,
fitted by Newton's method; its inverse Hessian gives the uncertainty of every rating
difference. The next pair is

1. a bot with no games yet (new bots first), against its most uncertain opponent;
2. otherwise, every ``explore_every``-th choice, the pair with the fewest games (so every
   pair is eventually played);
3. otherwise the pair whose *order* is least certain: the highest probability that the fit
   has the two in the wrong order, ``Phi(-|r_i - r_j| / sd(r_i - r_j))``.

Pairs listed in ``busy`` (series being played) are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

PRIOR_SD = 2.0
"""Prior standard deviation of a rating (logistic units: 1 = odds of e to 1)."""
NEWTON_STEPS = 30


@dataclass(frozen=True, slots=True)
class PairResult:
    """Results between two players: ``a`` scored ``score_a`` points in ``games`` games."""

    a: int
    b: int
    games: int
    score_a: float


@dataclass(frozen=True, slots=True)
class Fit:
    """Ratings (logistic units, mean 0) and their covariance, indexed like the player list."""

    players: tuple[int, ...]
    ratings: NDArray[np.float64]
    covariance: NDArray[np.float64]

    def rating(self, player: int) -> float:
        """The rating of ``player``."""
        return float(self.ratings[self.players.index(player)])

    def order(self) -> list[int]:
        """Players from the strongest to the weakest."""
        return [self.players[i] for i in np.argsort(-self.ratings, kind="stable")]

    def flip_probability(self, a: int, b: int) -> float:
        """Probability that the fit has ``a`` and ``b`` in the wrong order."""
        i, j = self.players.index(a), self.players.index(b)
        variance = self.covariance[i, i] + self.covariance[j, j] - 2.0 * self.covariance[i, j]
        sd = math.sqrt(max(float(variance), 1e-12))
        gap = abs(float(self.ratings[i] - self.ratings[j]))
        return 0.5 * math.erfc(gap / sd / math.sqrt(2.0))


def fit(players: Sequence[int], results: Iterable[PairResult]) -> Fit:
    """The maximum a posteriori Bradley-Terry ratings of ``players`` given ``results``."""
    index = {p: i for i, p in enumerate(players)}
    if len(index) != len(players):
        raise ValueError(f"players must be distinct, got {list(players)}")
    n = len(players)
    games = np.zeros((n, n))
    scores = np.zeros((n, n))  # scores[i, j]: points i scored against j
    for r in results:
        if r.a not in index or r.b not in index or r.a == r.b:
            continue  # results of players not on the ladder any more
        if r.games < 0 or not 0.0 <= r.score_a <= r.games:
            raise ValueError(f"impossible result {r}")
        i, j = index[r.a], index[r.b]
        games[i, j] += r.games
        games[j, i] += r.games
        scores[i, j] += r.score_a
        scores[j, i] += r.games - r.score_a
    ratings = np.zeros(n)
    prior = 1.0 / PRIOR_SD**2
    hessian = np.eye(n) * prior
    for _ in range(NEWTON_STEPS):
        diff = ratings[:, None] - ratings[None, :]
        expected = 1.0 / (1.0 + np.exp(-diff))
        gradient = (scores - games * expected).sum(axis=1) - prior * ratings
        weights = games * expected * (1.0 - expected)
        hessian = np.diag(weights.sum(axis=1) + prior) - weights
        step = np.linalg.solve(hessian, gradient)
        ratings = ratings + step
        if float(np.abs(step).max(initial=0.0)) < 1e-9:
            break
    diff = ratings[:, None] - ratings[None, :]
    expected = 1.0 / (1.0 + np.exp(-diff))
    weights = games * expected * (1.0 - expected)
    hessian = np.diag(weights.sum(axis=1) + prior) - weights
    covariance: NDArray[np.float64] = np.asarray(np.linalg.inv(hessian), dtype=np.float64)
    return Fit(tuple(players), ratings - ratings.mean(), covariance)


def choose_pair(
    players: Sequence[int],
    results: Sequence[PairResult],
    *,
    busy: Iterable[tuple[int, int]] = (),
    scheduled: int = 0,
    explore_every: int = 5,
) -> tuple[int, int] | None:
    """The next pair to play (see the module docstring), or None when none is free.

    ``scheduled`` counts the series chosen so far (for the exploration turn).
    """
    if len(players) < 2:
        return None
    taken = {frozenset(p) for p in busy}
    pair_games: dict[frozenset[int], int] = {}
    played: dict[int, int] = dict.fromkeys(players, 0)
    for r in results:
        key = frozenset((r.a, r.b))
        pair_games[key] = pair_games.get(key, 0) + r.games
        for p in (r.a, r.b):
            if p in played:
                played[p] += r.games
    for p, _q in busy:  # a bot whose first series is running is no longer new
        if p in played:
            played[p] += 1
    for _p, q in busy:
        if q in played:
            played[q] += 1
    free = [
        (a, b)
        for i, a in enumerate(players)
        for b in players[i + 1 :]
        if frozenset((a, b)) not in taken
    ]
    if not free:
        return None
    current = fit(players, results)
    newcomers = [p for p in players if played[p] == 0]
    if newcomers:
        newcomer = newcomers[0]
        options = [pair for pair in free if newcomer in pair]
        if options:
            return max(options, key=lambda pair: current.flip_probability(*pair))
    if explore_every > 0 and scheduled % explore_every == explore_every - 1:
        return min(free, key=lambda pair: (pair_games.get(frozenset(pair), 0), pair))
    return max(
        free,
        key=lambda pair: (
            current.flip_probability(*pair),
            -pair_games.get(frozenset(pair), 0),
        ),
    )
