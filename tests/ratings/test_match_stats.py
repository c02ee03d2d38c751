"""Elo difference, interval, LOS and SPRT of one pairing, against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboard.ratings.match_stats import (
    Z95,
    Sprt,
    SprtDecision,
    SprtSettingsError,
    elo_from_score,
    match_stats,
    pentanomial_sample,
    score_from_elo,
    trinomial_sample,
)


def test_elo_and_score_are_inverse_and_match_the_logistic_formula() -> None:
    # 0.75 = 1 / (1 + 10^(-d/400))  =>  d = 400 log10(3) = 190.848...
    assert elo_from_score(0.75) == pytest.approx(190.8485, abs=1e-4)
    assert score_from_elo(190.8485) == pytest.approx(0.75, abs=1e-7)
    assert elo_from_score(0.5) == 0.0
    assert elo_from_score(1.0) == math.inf and elo_from_score(0.0) == -math.inf


def test_trinomial_sample_by_hand() -> None:
    # +60 =20 -20: mean 0.6 + 0.1 = 0.7; E[x^2] = 0.6 + 0.05 = 0.65; variance 0.65 - 0.49.
    sample = trinomial_sample(60, 20, 20)
    assert sample.units == 100
    assert sample.mean == pytest.approx(0.7)
    assert sample.variance == pytest.approx(0.16)
    assert sample.stderr == pytest.approx(0.04)


def test_match_stats_by_hand() -> None:
    stats = match_stats(60, 20, 20)
    # Elo(0.7) = -400 log10(3/7) = 147.19. Wilson, z² = 3.8415, n = 100: the bounds are the
    # roots of (x - s)² = z² s (1 - s) / n, i.e. 103.8415 s² - 143.8415 s + 49 = 0:
    # s = (143.8415 ± sqrt(143.8415² - 4 · 103.8415 · 49)) / (2 · 103.8415) = 0.6042, 0.7810.
    assert stats.elo == pytest.approx(147.19, abs=0.01)
    z2 = 1.959964**2
    a, b, c = 100 + z2, 2 * 100 * 0.7 + z2, 100 * 0.49
    root = math.sqrt(b * b - 4 * a * c)
    assert stats.elo_low == pytest.approx(elo_from_score((b - root) / (2 * a)), abs=1e-3)
    assert stats.elo_high == pytest.approx(elo_from_score((b + root) / (2 * a)), abs=1e-3)
    # Elo(0.6042) = -400 log10(0.3958 / 0.6042) = 73.44
    assert stats.elo_low == pytest.approx(73.44, abs=0.01)
    assert stats.draw_ratio == pytest.approx(0.2)
    # LOS = Phi((60 - 20) / sqrt(80)) = Phi(4.4721) = 0.9999961 (cutechess)
    assert stats.los == pytest.approx(0.9999961, abs=1e-7)
    assert "draw ratio 20.0%" in stats.format() and "trinomial" in stats.format()


def test_the_printed_interval_is_the_real_one() -> None:
    # The games' Wilson interval is symmetric about the Elo difference (its bounds' logits
    # add up to twice the score's), a sweep's is unbounded on one side, and the pairs' is
    # lopsided: the bounds are printed, never a "±".
    stats = match_stats(17, 2, 3)
    low, high = stats.elo_low, stats.elo_high
    assert high - stats.elo == pytest.approx(stats.elo - low, abs=1e-9)
    text = stats.format()
    assert f"Elo {stats.elo:+.1f} [{low:+.1f}, {high:+.1f}] (95%, trinomial)" in text
    assert "±" not in text
    sweep = match_stats(10, 0, 0)
    assert sweep.elo_high == math.inf and "+inf]" in sweep.format()
    assert match_stats(9, 0, 1).elo_high < math.inf
    pairs = match_stats(0, 0, 0, pentanomial=[0, 1, 1, 4, 2])
    assert pairs.elo_high - pairs.elo > pairs.elo - pairs.elo_low
    # An even score prints +0.0, not -0.0 (the logit of 1/2 is -0.0 in floating point).
    assert match_stats(3, 0, 3).format().startswith("Elo +0.0 [")


def test_an_even_match_has_a_symmetric_interval_and_even_los() -> None:
    stats = match_stats(10, 5, 10)
    assert stats.elo == 0.0 and stats.los == pytest.approx(0.5)
    assert stats.elo_low == pytest.approx(-stats.elo_high)


def test_pentanomial_sample_by_hand() -> None:
    # Pairs scoring 1/2, 1, 1, 3/2 (halved: 0.25, 0.5, 0.5, 0.75): mean 0.5, variance
    # (0.0625 + 0 + 0 + 0.0625) / 4 = 0.03125.
    sample = pentanomial_sample([0, 1, 2, 1, 0])
    assert (sample.units, sample.mean) == (4, 0.5)
    assert sample.variance == pytest.approx(0.03125)
    stats = match_stats(2, 4, 2, pentanomial=[0, 1, 2, 1, 0])
    assert stats.model == "pentanomial" and stats.pentanomial == (0, 1, 2, 1, 0)
    # The pairs' spread is smaller than the games' (variance 0.25 * 4/8 = 0.125 per game
    # over 8 games = 0.0156 vs 0.03125 / 4 = 0.0078 per pair): a narrower interval.
    assert stats.elo_margin < match_stats(2, 4, 2).elo_margin


def test_sprt_bounds_by_hand() -> None:
    sprt = Sprt(elo0=0, elo1=5, alpha=0.05, beta=0.05)
    assert sprt.lower == pytest.approx(math.log(0.05 / 0.95))
    assert sprt.lower == pytest.approx(-2.944439, abs=1e-6)
    assert sprt.upper == pytest.approx(2.944439, abs=1e-6)


def _generalized_llr(frequencies: dict[float, float], n: float, s0: float, s1: float) -> float:
    """The yardstick, computed another way than the module: each hypothesis' most likely
    distribution found by a general constrained optimiser (SciPy's SLSQP over the simplex,
    mean fixed), not by the closed form and a root."""
    from scipy.optimize import minimize

    scores = sorted(frequencies)
    observed = np.array([frequencies[a] for a in scores])
    values = np.array(scores)

    def most_likely(mean: float) -> np.ndarray:
        found = minimize(  # type: ignore[call-overload]
            lambda q: -float(observed @ np.log(q)),
            np.full(len(scores), 1 / len(scores)),
            method="SLSQP",
            bounds=[(1e-12, 1.0)] * len(scores),
            constraints=[
                {"type": "eq", "fun": lambda q: float(q.sum() - 1)},
                {"type": "eq", "fun": lambda q: float(q @ values - mean)},
            ],
            options={"ftol": 1e-15, "maxiter": 500},
        )
        return np.asarray(found.x)

    q0, q1 = most_likely(s0), most_likely(s1)
    return float(n * (observed @ (np.log(q1) - np.log(q0))))


@pytest.mark.parametrize(
    ("wins", "draws", "losses", "elo0", "elo1"),
    [
        (60, 20, 20, 0, 5),
        (600, 200, 200, 0, 5),
        (400, 200, 400, 0, 5),
        (7, 2, 1, 0, 400),
        (600, 100, 300, 0, 200),
        (30, 10, 60, -100, 0),
        (520, 300, 480, -3, 3),
    ],
)
def test_sprt_llr_is_the_generalized_likelihood_ratio(
    wins: int, draws: int, losses: int, elo0: float, elo1: float
) -> None:
    """The LLR is that of the most likely score distributions under each hypothesis (the
    generalized SPRT of fastchess's logistic model). The normal approximation it replaced
    said 25.8 for +600 =100 -300 at [0, 200] where the ratio is 16.8, and accepted a false
    H1 about twice as often as alpha allows with bounds 100 Elo or more apart."""
    sprt = Sprt(elo0=elo0, elo1=elo1)
    n = wins + draws + losses
    expected = _generalized_llr(
        {0.0: losses / n, 0.5: draws / n, 1.0: wins / n},
        n,
        score_from_elo(elo0),
        score_from_elo(elo1),
    )
    assert sprt.llr(trinomial_sample(wins, draws, losses)) == pytest.approx(expected, abs=2e-4)


def test_sprt_llr_by_hand() -> None:
    sprt = Sprt(elo0=0, elo1=5)
    assert sprt.llr(trinomial_sample(60, 20, 20)) == pytest.approx(0.707247, abs=1e-6)
    assert sprt.decide(0.71) is SprtDecision.CONTINUE
    # Ten times the games, same frequencies: the LLR grows tenfold and H1 is accepted.
    assert sprt.llr(trinomial_sample(600, 200, 200)) == pytest.approx(7.072473, abs=1e-5)
    assert sprt.decide(7.07) is SprtDecision.H1
    # An even score drifts towards H0.
    assert sprt.llr(trinomial_sample(400, 200, 400)) == pytest.approx(-0.129436, abs=1e-6)
    assert sprt.decide(-3.0) is SprtDecision.H0
    # The wide bounds of the audit: +600 =100 -300 at [0, 200] is 16.78, not 25.8.
    assert Sprt(elo0=0, elo1=200).llr(trinomial_sample(600, 100, 300)) == pytest.approx(
        16.7831, abs=1e-4
    )
    # A sweep has no spread but does carry evidence (an outcome never seen counts 0.001).
    assert Sprt(elo0=0, elo1=400).llr(trinomial_sample(8, 0, 0)) > 0


def test_sprt_pentanomial_llr_by_hand() -> None:
    sprt = Sprt(elo0=0, elo1=5)
    # 40 pairs: 2 x 0, 6 x 1/2, 16 x 1, 10 x 3/2, 6 x 2 points. Halved scores 0, .25, .5, .75, 1
    # mean = (6*.25 + 16*.5 + 10*.75 + 6*1) / 40 = 23 / 40 = 0.575
    # E[x^2] = (6*.0625 + 16*.25 + 10*.5625 + 6) / 40 = 16 / 40 = 0.4; v = 0.4 - 0.330625
    counts = [2, 6, 16, 10, 6]
    sample = pentanomial_sample(counts)
    assert sample.mean == pytest.approx(0.575) and sample.variance == pytest.approx(0.069375)
    expected = _generalized_llr(
        {k / 4: c / 40 for k, c in enumerate(counts)}, 40, 0.5, score_from_elo(5)
    )
    assert sprt.llr(sample) == pytest.approx(expected, abs=2e-4)


def test_a_sample_without_spread_is_no_certainty() -> None:
    """One win printed ``Elo +inf [+inf, +inf]``, ``LOS 100.0%``; one draw a zero-width
    interval. Now the Wilson interval with the widest variance of that mean, and the LOS of
    the variance about ½ (one win: 84.1%, as cutechess counts it)."""
    one_win = match_stats(1, 0, 0)
    assert one_win.elo == math.inf and one_win.elo_high == math.inf
    assert one_win.elo_low == pytest.approx(elo_from_score(1 / (1 + Z95**2)), abs=1e-9)
    assert one_win.los == pytest.approx(0.841345, abs=1e-6)
    assert "LOS 84.1%" in one_win.format()
    sweep = match_stats(0, 0, 100)
    assert sweep.elo_low == -math.inf
    assert sweep.elo_high == pytest.approx(elo_from_score(Z95**2 / (100 + Z95**2)), abs=1e-9)
    assert sweep.los == pytest.approx(0.0, abs=1e-12)
    draws = match_stats(0, 30, 0)
    assert draws.elo == 0.0 and draws.los == 0.5
    assert draws.elo_low == pytest.approx(-draws.elo_high) and draws.elo_high > 50
    # Pairs of the duplicate format alike: four deal pairs, each 2 points.
    pairs = match_stats(8, 0, 0, pentanomial=[0, 0, 0, 0, 4])
    assert pairs.los == pytest.approx(0.977250, abs=1e-6)  # Φ(2)
    assert pairs.elo_low > 0 and pairs.elo_high == math.inf


def test_sprt_settings_parse_and_refuse_nonsense() -> None:
    sprt = Sprt.parse(["elo0=0", "elo1=10", "alpha=0.1", "beta=0.2"])
    assert (sprt.elo0, sprt.elo1, sprt.alpha, sprt.beta) == (0, 10, 0.1, 0.2)
    assert Sprt.parse(["elo1=3"]) == Sprt(elo1=3)
    assert Sprt.parse(["elo0=-1,elo1=4"]) == Sprt(elo0=-1, elo1=4)
    with pytest.raises(SprtSettingsError, match="elo2"):
        Sprt.parse(["elo2=3"])
    with pytest.raises(SprtSettingsError, match="abc"):
        Sprt.parse(["alpha=abc"])
    with pytest.raises(SprtSettingsError, match="below"):
        Sprt(elo0=5, elo1=5)
    with pytest.raises(SprtSettingsError, match="alpha"):
        Sprt(alpha=0.7)
    text = Sprt().format(trinomial_sample(60, 20, 20))
    assert "LLR 0.71 (-2.94, 2.94) continue" in text
    # Hypotheses no result can tell apart, bounds that can never be reached, and numbers
    # written with separators float() would read (5_0 as 50) are refused.
    for words, said in (
        (["elo0=5000", "elo1=20000"], "within ±2000"),
        (["elo0=-20000", "elo1=-5000"], "within ±2000"),
        (["elo0=-2001", "elo1=0"], "within ±2000"),
        (["elo0=-1e-320", "elo1=1e-320"], "same score"),
        (["alpha=5e-324"], "infinite"),
        (["elo1=5_0"], "5_0"),
    ):
        with pytest.raises(SprtSettingsError, match=said):
            Sprt.parse(words)
    # At the limit the test still moves: a bot losing every game is sent towards H0.
    edge = Sprt(elo0=-2000, elo1=-1000)
    assert edge.llr(trinomial_sample(0, 0, 1000)) < edge.llr(trinomial_sample(0, 0, 10)) < 0
