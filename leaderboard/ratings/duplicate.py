"""Duplicate format: games come in deal pairs (same deal, seats swapped).

The two games of a pair share the deal, so their results are correlated: a deal that favours
whoever holds the strong hand tends to give 1-1, one that favours the better player 2-0. Two
tools account for it:

* :func:`pentanomial_counts` - per pairing, how many deal pairs ended 0, 1/2, 1, 3/2 or 2
  points for the first-named bot (the pentanomial distribution used in engine testing);
* :func:`paired_intervals` - rating intervals (and the LOS that goes with them) that treat
  the *deal pair*, not the game, as the independent unit: a cluster-robust sandwich estimate
  ``C M C`` (``C`` the BayesElo covariance, ``M`` the summed outer products of per-pair score
  vectors), or a bootstrap that resamples whole pairs with a seeded generator and refits.
  Games whose deal is not complete yet (``singles``) are units of their own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from leaderboard.ratings.bayeselo import (
    DEFAULT_DRAWELO,
    DEFAULT_PRIOR,
    TIE_DECIMALS,
    BayesEloFit,
    fit_bayeselo,
)
from leaderboard.ratings.errors import InvalidDealPairError, RatingsError
from leaderboard.ratings.games import Game, Outcome, PairCounts
from leaderboard.ratings.model import NATURAL_PER_ELO

FloatArray = NDArray[np.float64]

_OUTCOME_CODE = {Outcome.FIRST_WINS: 0, Outcome.DRAW: 1, Outcome.SECOND_WINS: 2}


@dataclass(frozen=True, slots=True)
class DealPair:
    """The two games of one deal; ``second`` has the seats of ``first`` swapped."""

    first: Game
    second: Game

    def __post_init__(self) -> None:
        if (self.second.first, self.second.second) != (self.first.second, self.first.first):
            raise InvalidDealPairError(
                f"games {self.first.first} v {self.first.second} and "
                f"{self.second.first} v {self.second.second} are not one deal with seats swapped"
            )

    @property
    def players(self) -> tuple[str, str]:
        """(first mover of the first game, his opponent)."""
        return self.first.first, self.first.second

    def points(self, name: str) -> float:
        """Points ``name`` scored over the two games: 0, 0.5, 1, 1.5 or 2."""
        if name == self.first.first:
            return self.first.score + (1.0 - self.second.score)
        if name == self.first.second:
            return (1.0 - self.first.score) + self.second.score
        raise KeyError(f"{name!r} did not play in deal pair {self.players}")


def pair_consecutive(games: Sequence[Game]) -> list[DealPair]:
    """Group games 1+2, 3+4, ... into deal pairs (the fixture's and the referee's order)."""
    if len(games) % 2:
        raise InvalidDealPairError(f"{len(games)} games cannot be split into deal pairs")
    pairs: list[DealPair] = []
    for k in range(0, len(games), 2):
        try:
            pairs.append(DealPair(games[k], games[k + 1]))
        except InvalidDealPairError as exc:
            raise InvalidDealPairError(f"games {k + 1} and {k + 2}: {exc}") from None
    return pairs


@dataclass(frozen=True, slots=True)
class Pentanomial:
    """Deal-pair results of ``player`` against ``opponent``.

    ``counts[k]`` is the number of pairs in which ``player`` scored ``k / 2`` points.
    """

    player: str
    opponent: str
    counts: tuple[int, int, int, int, int]

    @property
    def pairs(self) -> int:
        """Number of deal pairs played."""
        return sum(self.counts)

    @property
    def score(self) -> float:
        """Mean points per game of ``player`` (0..1)."""
        points = sum(k * 0.5 * c for k, c in enumerate(self.counts))
        return points / (2 * self.pairs)


def pentanomial_counts(
    pairs: Iterable[DealPair], weights: Iterable[int] | None = None
) -> list[Pentanomial]:
    """One pentanomial per pairing, from the alphabetically first bot's side, sorted.

    ``weights`` (as many as pairs) counts each pair that many times: a database hands over
    deal pairs aggregated by kind.
    """
    table: dict[tuple[str, str], list[int]] = {}
    for pair, weight in _weighted(pairs, weights):
        player, opponent = sorted(pair.players)
        bucket = round(2 * pair.points(player))
        table.setdefault((player, opponent), [0, 0, 0, 0, 0])[bucket] += weight
    return [
        Pentanomial(player, opponent, (c[0], c[1], c[2], c[3], c[4]))
        for (player, opponent), c in sorted(table.items())
    ]


def _weighted(
    pairs: Iterable[DealPair], weights: Iterable[int] | None
) -> list[tuple[DealPair, int]]:
    listed = list(pairs)
    if weights is None:
        return [(pair, 1) for pair in listed]
    counts = [int(w) for w in weights]
    if len(counts) != len(listed) or any(w < 1 for w in counts):
        raise RatingsError(
            f"need one positive weight per deal pair: {len(listed)} pairs, weights {counts[:10]}"
        )
    return list(zip(listed, counts, strict=True))


@dataclass(frozen=True)
class PairedIntervals:
    """Naive (games independent) and paired (deal pairs independent) intervals, display Elo.

    ``covariance`` is the paired covariance of the display ratings (indexed like
    ``fit.names``), the one ``paired`` comes from; :meth:`los` uses it, so the likelihood of
    superiority and the paired interval always agree."""

    fit: BayesEloFit
    method: str
    naive: FloatArray
    paired: FloatArray
    covariance: FloatArray

    def by_name(self) -> dict[str, tuple[float, float]]:
        """``{name: (naive, paired)}``."""
        return {
            name: (float(self.naive[k]), float(self.paired[k]))
            for k, name in enumerate(self.fit.names)
        }

    def los(self, better: str, worse: str) -> float:
        """Likelihood of superiority of ``better`` over ``worse`` under the paired covariance:
        ``Φ((r_i - r_j) / sqrt(V_ii + V_jj - 2 V_ij))``."""
        i, j = self.fit.index(better), self.fit.index(worse)
        if i == j:
            raise ValueError(f"LOS of {better!r} over itself is undefined")
        v = self.covariance
        variance = float(v[i, i] + v[j, j] - 2.0 * v[i, j])
        gap = float(self.fit.ratings[i] - self.fit.ratings[j])
        # ``C M C`` can give the difference of two bots no spread at all (a bot whose only
        # games are split deals with one opponent moves with him): the variance is then
        # rounding noise of either sign, ~1e-15 of V_ii + V_jj, that changes with the order
        # the units were summed in (kinds from the database, games one by one), and the gap
        # is the fit's own noise. Dividing noise by noise gave any LOS from 0 to 1 for the
        # same results; no spread and a gap the board calls a tie (TIE_DECIMALS) is a coin
        # toss, 0.5.
        if variance <= _NO_SPREAD * float(v[i, i] + v[j, j]):
            if abs(gap) < 10.0**-TIE_DECIMALS:
                return 0.5
            return 1.0 if gap > 0 else 0.0  # no spread: the sign of the gap is certain
        return NormalDist().cdf(gap / math.sqrt(variance))


_NO_SPREAD = 1e-9
"""A variance of a rating difference below this fraction of the two variances is rounding
noise, not spread (:meth:`PairedIntervals.los`)."""

_NO_GAME = -1
"""Outcome code of the missing second game of a single (a game whose deal is incomplete)."""


def _encode(
    pairs: Sequence[DealPair], singles: Sequence[Game], names: tuple[str, ...]
) -> NDArray[np.int64]:
    """Rows (first mover of game 1, his opponent, outcome 1, outcome 2) as indices; a single
    game has outcome 2 :data:`_NO_GAME`."""
    index = {name: k for k, name in enumerate(names)}
    rows = [
        (
            index[p.first.first],
            index[p.first.second],
            _OUTCOME_CODE[p.first.outcome],
            _OUTCOME_CODE[p.second.outcome],
        )
        for p in pairs
    ]
    rows += [(index[g.first], index[g.second], _OUTCOME_CODE[g.outcome], _NO_GAME) for g in singles]
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def _counts_from_rows(rows: NDArray[np.int64], names: tuple[str, ...]) -> PairCounts:
    n = len(names)
    first = np.concatenate([rows[:, 0], rows[:, 1]])
    second = np.concatenate([rows[:, 1], rows[:, 0]])
    outcome = np.concatenate([rows[:, 2], rows[:, 3]])
    played = outcome != _NO_GAME
    first, second, outcome = first[played], second[played], outcome[played]
    table = np.bincount((first * n + second) * 3 + outcome, minlength=n * n * 3).reshape(-1, 3)
    keys = np.flatnonzero(table.sum(axis=1))
    return PairCounts(
        names=names,
        first=(keys // n).astype(np.int64),
        second=(keys % n).astype(np.int64),
        wins=table[keys, 0].astype(np.int64),
        draws=table[keys, 1].astype(np.int64),
        losses=table[keys, 2].astype(np.int64),
    )


def _game_slope(
    fit: BayesEloFit, i: NDArray[np.int64], j: NDArray[np.int64], code: NDArray[np.int64]
) -> FloatArray:
    """d log P(result) / d(beta_first - beta_second) for games where i moved first against j."""
    from scipy.special import expit  # only with a fit: SciPy is slow to import

    beta = fit.internal * NATURAL_PER_ELO
    s = beta[i] - beta[j] + fit.advantage * NATURAL_PER_ELO
    delta = fit.drawelo * NATURAL_PER_ELO
    win_slope = expit(-(s - delta))  # d log sigmoid(s - delta) / ds
    loss_slope = -expit(-(-s - delta))  # d log sigmoid(-s - delta) / ds
    slope: FloatArray = np.where(
        code == 0, win_slope, np.where(code == 2, loss_slope, win_slope + loss_slope)
    )
    return slope


def _sandwich(
    fit: BayesEloFit, rows: NDArray[np.int64], multiplicity: NDArray[np.int64]
) -> FloatArray:
    i, j = rows[:, 0], rows[:, 1]
    # Score of the whole unit along e_i - e_j: game 1 has i first, game 2 (if the deal is
    # complete) has j first.
    two = rows[:, 3] != _NO_GAME
    second = _game_slope(fit, j, i, np.where(two, rows[:, 3], 1))
    c = _game_slope(fit, i, j, rows[:, 2]) - np.where(two, second, 0.0)
    n = len(fit.names)
    w = c * c * multiplicity  # identical units contribute identical outer products
    flat = np.bincount(i * n + j, w, n * n).reshape(n, n)
    meat = -(flat + flat.T)
    meat[np.diag_indices(n)] = -meat.sum(axis=1)
    # fit.covariance is C / (NATURAL_PER_ELO / scale)^2 with C the natural-unit inverse Hessian.
    units = (NATURAL_PER_ELO / fit.scale) ** 2
    cov: FloatArray = fit.covariance @ meat @ fit.covariance * units
    return cov


def paired_intervals(
    pairs: Sequence[DealPair],
    *,
    weights: Sequence[int] | None = None,
    singles: Sequence[Game] = (),
    single_weights: Sequence[int] | None = None,
    method: Literal["sandwich", "bootstrap"] = "sandwich",
    prior: float = DEFAULT_PRIOR,
    offset: float = 0.0,
    confidence: float = 0.95,
    samples: int = 200,
    seed: int = 0,
    fit_advantage: bool = True,
    fit_drawelo: bool = True,
    advantage: float = 0.0,
    drawelo: float = DEFAULT_DRAWELO,
) -> PairedIntervals:
    """BayesElo fit of all games with intervals that treat each deal pair as one unit.

    ``sandwich`` is deterministic and cheap; ``bootstrap`` refits ``samples`` resamples of
    the units drawn with ``numpy.random.default_rng(seed)`` and reports
    ``z * standard deviation`` of each bot's centred display rating. ``weights`` counts
    each pair that many times (deal pairs aggregated by kind, as a database gives them).

    ``singles`` are games whose deal is not complete (its other game not played yet, or
    voided): each is a unit of its own (``single_weights`` as ``weights``), so one
    unfinished deal neither drops the pairing of the others nor is left out of the fit.
    ``fit_advantage``, ``fit_drawelo``, ``advantage`` and ``drawelo`` are passed to
    :func:`~leaderboard.ratings.bayeselo.fit_bayeselo` (every refit of the bootstrap too).
    """
    if not pairs and not singles:
        raise RatingsError("no deal pairs to rate")
    weighted = _weighted(pairs, weights)
    lone = _weighted_games(singles, single_weights)
    tally: dict[tuple[str, str], list[int]] = {}
    column = {Outcome.FIRST_WINS: 0, Outcome.DRAW: 1, Outcome.SECOND_WINS: 2}
    for game, weight in [(g, w) for p, w in weighted for g in (p.first, p.second)] + lone:
        tally.setdefault((game.first, game.second), [0, 0, 0])[column[game.outcome]] += weight
    counts = PairCounts.from_mapping({k: (w, d, lo) for k, (w, d, lo) in tally.items()})

    def fitted(table: PairCounts, offset: float = 0.0, confidence: float = 0.95) -> BayesEloFit:
        return fit_bayeselo(
            table,
            prior=prior,
            offset=offset,
            confidence=confidence,
            fit_advantage=fit_advantage,
            fit_drawelo=fit_drawelo,
            advantage=advantage,
            drawelo=drawelo,
        )

    fit = fitted(counts, offset=offset, confidence=confidence)
    rows = _encode([p for p, _ in weighted], [g for g, _ in lone], counts.names)
    multiplicity = np.array([w for _, w in weighted] + [w for _, w in lone], dtype=np.int64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)  # scipy.stats costs ~1 s to import
    if method == "sandwich":
        cov = _sandwich(fit, rows, multiplicity)
        paired = z * np.sqrt(np.maximum(np.diag(cov), 0.0))
    elif method == "bootstrap":
        if samples < 2:
            raise RatingsError(f"bootstrap needs at least 2 samples, got {samples}")
        rows = np.repeat(rows, multiplicity, axis=0)  # resample single units
        rng = np.random.default_rng(seed)
        draws: list[FloatArray] = []
        for _ in range(samples):
            pick = rows[rng.integers(0, len(rows), len(rows))]
            try:
                sample = fitted(_counts_from_rows(pick, counts.names))
            except RatingsError:
                continue  # a resample that lost a bot or split the pool says nothing; skip it
            draws.append(sample.ratings - sample.ratings.mean())
        if len(draws) < max(2, samples // 2):
            raise RatingsError(
                f"only {len(draws)} of {samples} bootstrap resamples could be fitted; "
                "too few deal pairs per bot for a bootstrap"
            )
        cov = np.atleast_2d(np.cov(np.array(draws), rowvar=False, ddof=1))
        paired = z * np.sqrt(np.maximum(np.diag(cov), 0.0))
    else:
        raise RatingsError(f"unknown interval method {method!r}; use 'sandwich' or 'bootstrap'")
    if not np.all(np.isfinite(paired)):
        raise RatingsError(f"paired intervals are not finite: {paired.tolist()}")
    return PairedIntervals(
        fit=fit, method=method, naive=fit.intervals, paired=paired, covariance=cov
    )


def _weighted_games(games: Sequence[Game], weights: Sequence[int] | None) -> list[tuple[Game, int]]:
    if weights is None:
        return [(game, 1) for game in games]
    counts = [int(w) for w in weights]
    if len(counts) != len(games) or any(w < 1 for w in counts):
        raise RatingsError(
            f"need one positive weight per single game: {len(games)} games, weights {counts[:10]}"
        )
    return list(zip(games, counts, strict=True))
