"""Tests from a mutation review of ``leaderboard/ratings/match_stats.py`` and
``leaderboard/ratings/duplicate.py``: each one kills a small change to the code that the
existing tests let through, and every expected value is worked out here from the documented
formulas (docs/ratings.md), never by asking the code under test.

What they pin down:

* one pairing (``kryt play``): counts must not be negative (draws too, and in a score
  sample), a pentanomial has exactly five counts, a draw is half a point in the score
  (½ before any game), ``elo_margin`` is half the interval's width, an empty sample is an
  even score with an infinite standard error; SPRT error rates must lie strictly below 0.5
  and a setting may be given only once;
* duplicate format: pentanomials are listed sorted by pairing and weights must be one
  positive count per unit; the paired (sandwich) covariance is ``C M C`` with the score
  vector of each unit (the second game of a deal has the *other* bot moving first, a single
  game is a unit of its own, also with no complete deal at all) in display units; the
  interval's ``z`` and the naive intervals follow ``confidence``; ``offset``, ``prior`` and
  the fixed parameters reach the fit; the bootstrap resamples weighted units one by one and
  takes the sample standard deviation (``ddof=1``); the paired LOS treats a variance below
  10⁻⁹ of the two variances as no spread (1 or 0 for a real gap) and any more as spread,
  and refuses the LOS of a bot over itself.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pytest
from numpy.typing import NDArray

from leaderboard.ratings import (
    BayesEloFit,
    DealPair,
    Game,
    Outcome,
    PairCounts,
    PairedIntervals,
    RatingsError,
    fit_bayeselo,
    paired_intervals,
    pentanomial_counts,
)
from leaderboard.ratings.match_stats import (
    ScoreSample,
    Sprt,
    SprtSettingsError,
    match_stats,
    pentanomial_sample,
    trinomial_sample,
)

W, D, L = Outcome.FIRST_WINS, Outcome.DRAW, Outcome.SECOND_WINS
LN10_400 = math.log(10.0) / 400.0  # natural units per Elo: beta = r ln10 / 400


def _elo(score: float) -> float:
    return -400.0 * math.log10(1.0 / score - 1.0)


def _wilson_bounds(x: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The two roots of ``(s - x)² = z² s (1 - s) / n`` (docs/ratings.md), by the quadratic
    formula: ``(n + z²) s² - (2 n x + z²) s + n x² = 0``."""
    a, b, c = n + z * z, 2 * n * x + z * z, n * x * x
    root = math.sqrt(b * b - 4 * a * c)
    return (b - root) / (2 * a), (b + root) / (2 * a)


# --------------------------------------------------------------------------- match_stats


def test_negative_counts_are_refused_everywhere() -> None:
    with pytest.raises(RatingsError, match="negative"):
        match_stats(3, -1, 2)  # a negative draw count too, not only wins or losses
    with pytest.raises(RatingsError, match="negative"):
        match_stats(3, -1, 2, pentanomial=[0, 0, 1, 0, 0])  # also when pairs give the figures
    with pytest.raises(RatingsError, match="negative"):
        ScoreSample.from_frequencies({1.0: 3, 0.5: 0, 0.0: -1})
    with pytest.raises(RatingsError, match="negative"):
        pentanomial_sample([-1, 0, 2, 0, 0])


def test_a_pentanomial_has_exactly_five_counts() -> None:
    for counts in ([1, 2, 3, 4], [1, 2, 3, 4, 5, 6]):
        with pytest.raises(RatingsError, match="five counts"):
            pentanomial_sample(counts)


def test_score_draw_ratio_and_margin_by_hand() -> None:
    stats = match_stats(5, 4, 1)
    assert stats.games == 10
    assert stats.score == pytest.approx((5 + 4 / 2) / 10)  # a draw is half a point
    assert stats.draw_ratio == pytest.approx(0.4)
    low, high = _wilson_bounds(0.7, 10)
    assert stats.elo_low == pytest.approx(_elo(low), abs=1e-9)
    assert stats.elo_high == pytest.approx(_elo(high), abs=1e-9)
    # Half the interval's width, not all of it.
    assert stats.elo_margin == pytest.approx((_elo(high) - _elo(low)) / 2, abs=1e-9)
    nothing = match_stats(0, 0, 0)
    assert nothing.score == 0.5 and nothing.draw_ratio == 0.0  # ½ before any game


def test_an_empty_sample_is_an_even_score_with_no_known_error() -> None:
    for sample in (trinomial_sample(0, 0, 0), pentanomial_sample([0, 0, 0, 0, 0])):
        assert (sample.units, sample.mean, sample.variance) == (0, 0.5, 0.0)
        assert sample.stderr == math.inf


def test_sprt_error_rates_must_lie_strictly_below_one_half() -> None:
    for settings in ({"alpha": 0.5}, {"beta": 0.5}):
        with pytest.raises(SprtSettingsError, match=r"between 0 and 0\.5"):
            Sprt(**settings)
    Sprt(alpha=0.4999, beta=0.4999)  # just inside is fine


def test_an_sprt_setting_given_twice_is_refused() -> None:
    with pytest.raises(SprtSettingsError, match="given twice"):
        Sprt.parse(["elo1=3", "elo1=4"])
    with pytest.raises(SprtSettingsError, match="given twice"):
        Sprt.parse(["alpha=0.1,alpha=0.1"])


# ------------------------------------------------------------------------------ duplicate


def _pair(x: str, y: str, first: Outcome, second: Outcome) -> DealPair:
    """x moves first in game 1, y in game 2."""
    return DealPair(Game(x, y, first), Game(y, x, second))


# Three bots, varied deals (2-0, 1-1 both ways, draws, 1½-½), a first-mover edge and
# different strengths, so that the seats of each game matter in the score vectors.
PAIRS = [
    _pair("a", "b", W, L),
    _pair("a", "b", W, W),
    _pair("b", "a", W, D),
    _pair("a", "b", D, D),
    _pair("b", "c", W, L),
    _pair("c", "b", L, W),
    _pair("b", "c", W, W),
    _pair("c", "b", W, D),
    _pair("a", "c", W, L),
    _pair("c", "a", L, W),
    _pair("a", "c", L, L),
    _pair("c", "a", D, W),
]
WEIGHTS = [2, 1, 3, 1, 2, 1, 1, 2, 3, 1, 1, 1]
SINGLES = [Game("c", "a", W), Game("b", "a", D)]
SINGLE_WEIGHTS = [2, 1]


def _games(
    pairs: list[DealPair], weights: list[int], singles: list[Game], sw: list[int]
) -> list[Game]:
    games = [
        g
        for p, w in zip(pairs, weights, strict=True)
        for _ in range(w)
        for g in (p.first, p.second)
    ]
    return games + [g for g, w in zip(singles, sw, strict=True) for _ in range(w)]


def _counts(games: list[Game]) -> PairCounts:
    tally: dict[tuple[str, str], list[int]] = {}
    column = {W: 0, D: 1, L: 2}
    for game in games:
        tally.setdefault((game.first, game.second), [0, 0, 0])[column[game.outcome]] += 1
    return PairCounts.from_mapping({k: (w, d, lo) for k, (w, d, lo) in tally.items()})


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _slope(fit: BayesEloFit, first: str, second: str, outcome: Outcome) -> float:
    """d log P(result) / d(beta_first - beta_second) in the model of docs/ratings.md:
    P(first wins) = σ(s - δ), P(second wins) = σ(-s - δ), P(draw) = σ(s-δ) σ(-s-δ) (e^{2δ}-1)
    with s = beta_first - beta_second + adv (natural units)."""
    i, j = fit.index(first), fit.index(second)
    s = (fit.internal[i] - fit.internal[j] + fit.advantage) * LN10_400
    delta = fit.drawelo * LN10_400
    win = 1.0 - _sigmoid(s - delta)  # d/ds log σ(s - δ)
    loss = -(1.0 - _sigmoid(-s - delta))  # d/ds log σ(-s - δ)
    return {W: win, L: loss, D: win + loss}[outcome]


def _unit_gradient(fit: BayesEloFit, games: list[Game]) -> NDArray[np.float64]:
    """Gradient of a unit's log-likelihood in the bots' natural-unit strengths."""
    g = np.zeros(len(fit.names))
    for game in games:
        slope = _slope(fit, game.first, game.second, game.outcome)
        g[fit.index(game.first)] += slope
        g[fit.index(game.second)] -= slope
    return g


def _sandwich_by_hand(
    fit: BayesEloFit, units: list[tuple[list[Game], int]], confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(covariance, intervals) in display units: ``C M C`` with C the fit's covariance in
    natural units and M the summed outer products of the units' gradients."""
    per_natural = (LN10_400 / fit.scale) ** 2  # display Elo² -> natural units²
    c_natural = fit.covariance * per_natural
    meat = sum(w * np.outer(g, g) for g, w in ((_unit_gradient(fit, u), w) for u, w in units))
    cov = (c_natural @ meat @ c_natural) / per_natural
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return cov, z * np.sqrt(np.diag(cov))


def test_the_sandwich_covariance_and_intervals_by_hand() -> None:
    """Deal pairs (weighted) and single games, a confidence other than 95% and an offset:
    the paired covariance is ``C M C`` of the units' score vectors (the second game of a deal
    has the other bot first; a single game is a unit alone, seats as played), the paired
    interval is ``z · sqrt(V_ii)`` with ``z`` of that confidence, LOS follows V."""
    result = paired_intervals(
        PAIRS,
        weights=WEIGHTS,
        singles=SINGLES,
        single_weights=SINGLE_WEIGHTS,
        confidence=0.9,
        offset=1500.0,
    )
    fit = result.fit
    units = [([p.first, p.second], w) for p, w in zip(PAIRS, WEIGHTS, strict=True)]
    units += [([g], w) for g, w in zip(SINGLES, SINGLE_WEIGHTS, strict=True)]
    cov, intervals = _sandwich_by_hand(fit, units, 0.9)
    assert np.allclose(result.covariance, cov, rtol=1e-9, atol=1e-9)
    assert np.allclose(result.paired, intervals, rtol=1e-9)
    # The fit is of every game, with the offset asked for (ratings centred on it).
    reference = fit_bayeselo(
        _counts(_games(PAIRS, WEIGHTS, SINGLES, SINGLE_WEIGHTS)), offset=1500.0
    )
    assert np.allclose(fit.ratings, reference.ratings, atol=1e-6)
    assert float(np.mean(fit.ratings)) == pytest.approx(1500.0, abs=1e-6)
    i, j = fit.index("a"), fit.index("c")
    gap = fit.ratings[i] - fit.ratings[j]
    expected = NormalDist().cdf(gap / math.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j]))
    assert result.los("a", "c") == pytest.approx(expected, abs=1e-9)


def test_single_games_alone_are_units_of_their_own() -> None:
    """No complete deal at all, only games whose deal is unfinished: still rated, each a
    unit (``singles``), not refused as "no deal pairs"."""
    singles = [
        Game("a", "b", W),
        Game("b", "a", W),
        Game("a", "b", D),
        Game("b", "c", W),
        Game("c", "b", L),
        Game("c", "a", D),
        Game("a", "c", L),
        Game("b", "c", D),
    ]
    result = paired_intervals([], singles=singles)
    cov, intervals = _sandwich_by_hand(result.fit, [([g], 1) for g in singles], 0.95)
    assert np.allclose(result.covariance, cov, rtol=1e-9, atol=1e-9)
    assert np.allclose(result.paired, intervals, rtol=1e-9)


def test_the_naive_intervals_follow_the_confidence() -> None:
    wide = paired_intervals(PAIRS, confidence=0.95)
    narrow = paired_intervals(PAIRS, confidence=0.9)
    ratio = NormalDist().inv_cdf(0.95) / NormalDist().inv_cdf(0.975)
    assert np.allclose(narrow.naive, wide.naive * ratio, rtol=1e-9)
    assert np.allclose(narrow.paired, wide.paired * ratio, rtol=1e-9)
    assert narrow.fit.confidence == 0.9


def test_prior_and_fixed_parameters_reach_the_fit() -> None:
    result = paired_intervals(PAIRS, prior=0.5, fit_advantage=True, fit_drawelo=False, drawelo=50.0)
    assert result.fit.prior == 0.5
    assert result.fit.drawelo == 50.0  # fixed, not fitted: fit_drawelo is its own switch
    assert result.fit.advantage != 0.0  # fitted
    fixed = paired_intervals(PAIRS, fit_advantage=False, advantage=20.0, fit_drawelo=True)
    assert fixed.fit.advantage == 20.0 and fixed.fit.drawelo != 97.3


def test_weights_must_be_one_positive_count_per_unit() -> None:
    two = PAIRS[:2]
    for weights in ([1, 0], [1], [1, 1, 1]):
        with pytest.raises(RatingsError, match="one positive weight per deal pair"):
            pentanomial_counts(two, weights)
        with pytest.raises(RatingsError, match="one positive weight per deal pair"):
            paired_intervals(PAIRS[:8], weights=[*weights, 1, 1, 1, 1, 1, 1])
    with pytest.raises(RatingsError, match="one positive weight per single game"):
        paired_intervals(PAIRS, singles=SINGLES, single_weights=[1, 0])


def test_pentanomials_are_sorted_by_pairing_from_the_first_names_side() -> None:
    pairs = [
        _pair("zed", "kay", W, L),  # zed 2 points: kay 0
        _pair("bee", "ann", W, W),  # 1-1
        _pair("kay", "ann", D, W),  # kay ½ + 0
        _pair("ann", "bee", W, D),  # ann 1½
    ]
    found = [(p.player, p.opponent, p.counts) for p in pentanomial_counts(pairs)]
    assert found == [
        ("ann", "bee", (0, 0, 1, 1, 0)),
        ("ann", "kay", (0, 0, 0, 1, 0)),  # from ann's side: ½ + 1
        ("kay", "zed", (1, 0, 0, 0, 0)),
    ]


def _bootstrap_by_hand(
    units: list[list[Game]], samples: int, seed: int, confidence: float
) -> NDArray[np.float64]:
    """Resample whole units with ``default_rng(seed)``, refit each, and take ``z`` times
    the sample standard deviation of each bot's centred rating (docs/ratings.md)."""
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(samples):
        pick = rng.integers(0, len(units), len(units))
        fit = fit_bayeselo(_counts([g for k in pick for g in units[k]]))
        draws.append(fit.ratings - fit.ratings.mean())
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return np.asarray(z * np.std(np.array(draws), axis=0, ddof=1), dtype=np.float64)


def test_the_bootstrap_resamples_weighted_units_one_by_one() -> None:
    """A pair of weight 3 is three units of the resample (as three listed pairs), and the
    interval is ``z`` times the sample standard deviation (``ddof=1``)."""
    units = [[p.first, p.second] for p, w in zip(PAIRS, WEIGHTS, strict=True) for _ in range(w)]
    expected = _bootstrap_by_hand(units, samples=12, seed=3, confidence=0.95)
    result = paired_intervals(PAIRS, weights=WEIGHTS, method="bootstrap", samples=12, seed=3)
    assert np.allclose(result.paired, expected, rtol=1e-6)


def _fitted_resamples(units: list[list[Game]], samples: int, seed: int) -> int:
    """How many of the bootstrap's resamples (``default_rng(seed)``, whole units) hold every
    bot and can be fitted."""
    bots = {name for unit in units for g in unit for name in (g.first, g.second)}
    rng = np.random.default_rng(seed)
    fitted = 0
    for _ in range(samples):
        games = [g for k in rng.integers(0, len(units), len(units)) for g in units[k]]
        if {name for g in games for name in (g.first, g.second)} != bots:
            continue
        try:
            fit_bayeselo(_counts(games))
        except RatingsError:
            continue
        fitted += 1
    return fitted


def test_the_bootstrap_needs_half_of_its_resamples_fitted() -> None:
    """A resample that lost a bot says nothing and is skipped; with fewer than half of the
    resamples left the bootstrap refuses (two bots each hang on a single deal pair here)."""
    pairs = [
        _pair("a", "b", W, L),
        _pair("b", "a", W, D),
        _pair("a", "b", D, W),
        _pair("b", "a", L, L),
        _pair("a", "b", W, W),
        _pair("b", "a", D, D),
        _pair("b", "c", W, D),
        _pair("c", "d", L, D),
    ]
    units = [[p.first, p.second] for p in pairs]
    assert _fitted_resamples(units, 20, seed=3) == 6
    with pytest.raises(RatingsError, match="only 6 of 20 bootstrap resamples"):
        paired_intervals(pairs, method="bootstrap", samples=20, seed=3)
    assert _fitted_resamples(units, 20, seed=1) == 10  # exactly half: enough
    result = paired_intervals(pairs, method="bootstrap", samples=20, seed=1)
    assert np.all(np.isfinite(result.paired))


def _with_covariance(
    result: PairedIntervals, a: str, b: str, variance: float, spread: float
) -> PairedIntervals:
    """``result`` with a covariance whose bots have ``variance`` each and whose difference
    a - b has variance ``spread``."""
    n = len(result.fit.names)
    cov = np.eye(n)
    i, j = result.fit.index(a), result.fit.index(b)
    cov[i, i] = cov[j, j] = variance
    cov[i, j] = cov[j, i] = variance - spread / 2
    return dataclasses.replace(result, covariance=cov)


def test_paired_los_no_spread_is_below_a_billionth_of_the_variances() -> None:
    """docs/ratings.md: a difference whose variance is below 10⁻⁹ of the two variances has
    no spread (LOS 1 or 0 for a real gap); any more is spread, and LOS is Φ(gap / sd)."""
    result = paired_intervals(PAIRS)
    gap = result.fit.rating("a") - result.fit.rating("c")
    assert abs(gap) > 1.0
    better, worse = ("a", "c") if gap > 0 else ("c", "a")
    gap = abs(gap)
    # Variance of the difference gap² (LOS Φ(1) if it counted), 10⁻¹⁰ of the two variances.
    variance = gap * gap / 2e-10
    no_spread = _with_covariance(result, better, worse, variance, gap * gap)
    assert no_spread.los(better, worse) == 1.0
    assert no_spread.los(worse, better) == 0.0
    # The same difference at 10⁻⁶ of the two variances is spread.
    spread = _with_covariance(result, better, worse, gap * gap / 2e-6, gap * gap)
    phi1 = NormalDist().cdf(1.0)
    assert spread.los(better, worse) == pytest.approx(phi1, abs=1e-6)
    assert spread.los(worse, better) == pytest.approx(1 - phi1, abs=1e-6)


def test_the_los_of_a_bot_over_itself_is_refused() -> None:
    result = paired_intervals(PAIRS[:8])
    with pytest.raises(ValueError, match="over itself"):
        result.los("a", "a")
