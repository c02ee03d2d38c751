"""An independent review of the statistics of ``kryt play`` (Elo with its 95% interval, LOS,
pentanomial, SPRT), each figure recomputed here from its published definition rather than
read from ``leaderboard/ratings/match_stats.py``:

* games (trinomial): the Wilson score interval of the mean score ``x`` over ``n`` games, found
  here by bisection on ``(x - s)² = z² s (1 - s) / n`` (not by the quadratic's closed form),
  ``z`` the 97.5% normal quantile; LOS as cutechess-cli: ``Φ((W - L) / sqrt(W + L))``;
* deal pairs (pentanomial) as fastchess ``elo_pentanomial.cpp``: the variance ``v`` of a
  halved pair's score about ``x`` over ``n`` pairs; the bounds ``elo(x -/+ z sqrt(v / n))``;
  LOS ``Φ((x - ½) / sqrt(v / n))``; pairs without spread: the Wilson interval and
  ``Φ(±sqrt(n))`` (docs/ratings.md);
* the generalized SPRT of fastchess's ``logistic`` model (Van den Bergh): the log-likelihood
  of the most likely distribution with mean ``s`` is found here through its Lagrange dual
  ``max_θ Σ p log(1 + θ (a - s))`` (a concave maximisation by golden section), not through
  the root of its derivative as the module does; thresholds ``log(β / (1 - α))`` and
  ``log((1 - β) / α)``.

Tests marked ``xfail(strict=True)`` show a bug found by the review (see their reasons).
"""

from __future__ import annotations

import io
import math
import re
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from kryt.cli import main
from kryt.commands.play import _Tally, unpaired_note
from leaderboard.ratings.match_stats import (
    Z95,
    MatchStats,
    Sprt,
    SprtDecision,
    SprtSettingsError,
    match_stats,
    pentanomial_sample,
    trinomial_sample,
)
from referee.pairing import split_games
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord
from referee.series import SeriesConfigError, SeriesFormat

ROOT = Path(__file__).resolve().parents[2]
NORMAL = NormalDist()
Z = NORMAL.inv_cdf(0.975)
FAST = ("--backend", "process", "--move-seconds", "0.5")


# --------------------------------------------------------------------------------------------
# Reference implementations (independent of the module under review)
# --------------------------------------------------------------------------------------------


def ref_elo(score: float) -> float:
    """Logistic Elo of an expected score: ``400 log10(x / (1 - x))``."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return 400.0 * math.log10(score / (1.0 - score))


def ref_score(elo: float) -> float:
    """Expected score of an Elo difference (1 at +inf, 0 at -inf)."""
    if elo == math.inf:
        return 1.0
    if elo == -math.inf:
        return 0.0
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def unit_counts(counts: list[int]) -> dict[Fraction, int]:
    """``counts[k]`` units scoring ``k / (len - 1)``: W/D/L as [L, D, W], pentanomial as is."""
    last = len(counts) - 1
    return {Fraction(k, last): c for k, c in enumerate(counts)}


def moments(units: dict[Fraction, int]) -> tuple[int, Fraction, Fraction]:
    """Exact ``(n, mean, variance about the mean)`` of a per-unit score distribution."""
    n = sum(units.values())
    mean = sum((a * c for a, c in units.items()), Fraction(0)) / n
    variance = sum((c * (a - mean) ** 2 for a, c in units.items()), Fraction(0)) / n
    return n, mean, variance


def _wilson_root(x: float, n: int, low: float, high: float) -> float:
    """The root of ``(x - s)² - z² s (1 - s) / n`` between ``low`` and ``high`` (where it
    changes sign), by bisection."""

    def f(s: float) -> float:
        return (x - s) ** 2 - Z * Z * s * (1 - s) / n

    for _ in range(200):
        mid = (low + high) / 2
        if (f(low) > 0) == (f(mid) > 0):
            low = mid
        else:
            high = mid
    return (low + high) / 2


def ref_stats(counts: list[int]) -> tuple[float, float, float, float]:
    """``(elo, low bound as a score, high bound as a score, LOS)`` by the definitions above."""
    n, mean, variance = moments(unit_counts(counts))
    x = float(mean)
    if len(counts) == 3:
        losses, _, wins = counts
        low = 0.0 if x == 0 else _wilson_root(x, n, 0.0, x)
        high = 1.0 if x == 1 else _wilson_root(x, n, x, 1.0)
        los = 0.5 if wins + losses == 0 else NORMAL.cdf((wins - losses) / math.sqrt(wins + losses))
        return ref_elo(x), low, high, los
    if variance == 0:
        # Wilson score interval with the variance x(1 - x) (docs/ratings.md).
        z2 = Z * Z
        centre = (x + z2 / (2 * n)) / (1 + z2 / n)
        half = Z * math.sqrt(x * (1 - x) / n + z2 / (4 * n * n)) / (1 + z2 / n)
        low = 0.0 if x == 0 else centre - half
        high = 1.0 if x == 1 else centre + half
        los = 0.5 if mean == Fraction(1, 2) else NORMAL.cdf(math.copysign(math.sqrt(n), x - 0.5))
        return ref_elo(x), low, high, los
    se = math.sqrt(float(variance / n))
    low, high = max(0.0, x - Z * se), min(1.0, x + Z * se)
    return ref_elo(x), low, high, NORMAL.cdf((x - 0.5) / se)


def _max_dual(p: list[float], a: list[float], s: float) -> float:
    """``max_θ Σ p log(1 + θ (a - s))`` over the θ keeping every term positive: the
    Kullback-Leibler divergence from the observed ``p`` to the most likely distribution of
    mean ``s`` (the dual of the constrained maximum likelihood). Concave: golden section."""
    d = [ai - s for ai in a]
    lo, hi = -1.0 / max(d), -1.0 / min(d)

    def g(theta: float) -> float:
        total = 0.0
        for pi, di in zip(p, d, strict=True):
            inside = 1.0 + theta * di
            if inside <= 0.0:
                return -math.inf
            total += pi * math.log(inside)
        return total

    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    g1, g2 = g(x1), g(x2)
    for _ in range(300):
        if g1 < g2:
            lo, x1, g1 = x1, x2, g2
            x2 = lo + ratio * (hi - lo)
            g2 = g(x2)
        else:
            hi, x2, g2 = x2, x1, g1
            x1 = hi - ratio * (hi - lo)
            g1 = g(x1)
    return max(g1, g2)


def ref_llr(counts: list[int], elo0: float, elo1: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (score ``s1``) against H0 (``s0``), fastchess's
    logistic model: a count of 0 taken as 0.001, ``N`` the regularized total; the log-
    likelihood of the MLE with mean ``s`` is ``N (Σ p log p - KL)``, so the LLR is
    ``N (KL0 - KL1)``."""
    last = len(counts) - 1
    scores = [k / last for k in range(len(counts))]
    regular = [float(c) if c > 0 else 1e-3 for c in counts]
    total = sum(regular)
    p = [c / total for c in regular]
    return total * (_max_dual(p, scores, ref_score(elo0)) - _max_dual(p, scores, ref_score(elo1)))


def assert_matches_reference(stats: MatchStats, counts: list[int]) -> None:
    elo, low, high, los = ref_stats(counts)
    if math.isinf(elo):
        assert stats.elo == elo
    else:
        # abs 1e-3 Elo: near a sweep of 10⁹ games 1 - x itself is only known to ~1e-8.
        assert stats.elo == pytest.approx(elo, rel=1e-9, abs=1e-3)
    # Bounds compared as scores: the logistic curve is too steep near 0 and 1 for Elo.
    assert ref_score(stats.elo_low) == pytest.approx(low, abs=1e-9)
    assert ref_score(stats.elo_high) == pytest.approx(high, abs=1e-9)
    assert stats.los == pytest.approx(los, abs=1e-9)
    for value in (stats.elo, stats.elo_low, stats.elo_high, stats.los):
        assert not math.isnan(value)
    assert "nan" not in stats.format()


small_or_huge = st.one_of(st.integers(0, 6), st.integers(0, 10**9))


# --------------------------------------------------------------------------------------------
# Elo, interval, LOS
# --------------------------------------------------------------------------------------------


def test_the_interval_is_at_95_percent() -> None:
    """docs/ratings.md: "with the 95% interval": z is the two-sided 95% normal quantile."""
    assert pytest.approx(Z, abs=1e-12) == Z95
    assert NORMAL.cdf(Z95) - NORMAL.cdf(-Z95) == pytest.approx(0.95, abs=1e-12)


@settings(max_examples=300, deadline=None, database=None)
@given(wins=small_or_huge, draws=small_or_huge, losses=small_or_huge)
def test_trinomial_figures_are_wilson_and_cutechess(wins: int, draws: int, losses: int) -> None:
    """docs/ratings.md: mean x = (W + D/2)/N, the Wilson interval with variance s(1 - s); LOS
    Φ((W - L)/sqrt(W + L)) (cutechess-cli); zero games, one game, sweeps and huge counts
    included (no NaN, no traceback)."""
    assume(wins + draws + losses > 0)
    stats = match_stats(wins, draws, losses)
    assert stats.model == "trinomial"
    assert_matches_reference(stats, [losses, draws, wins])
    assert stats.draw_ratio == pytest.approx(draws / (wins + draws + losses))


@settings(max_examples=300, deadline=None, database=None)
@given(counts=st.lists(small_or_huge, min_size=5, max_size=5))
def test_pentanomial_figures_match_fastchess(counts: list[int]) -> None:
    """fastchess EloPentanomial: a pair's points halved (0, ¼, ½, ¾, 1), variance about the
    mean per pair, bounds elo(x ∓ 1.96 sqrt(v/pairs)), LOS Φ((x - ½)/sqrt(v/pairs))."""
    assume(sum(counts) > 0)
    wins, draws, losses = 3, 0, 1  # the score line's W/D/L do not enter the pentanomial
    stats = match_stats(wins, draws, losses, pentanomial=counts)
    assert stats.model == "pentanomial"
    assert stats.pentanomial == tuple(counts)
    assert_matches_reference(stats, counts)


@settings(max_examples=150, deadline=None, database=None)
@given(wins=small_or_huge, draws=small_or_huge, losses=small_or_huge)
@example(wins=0, draws=43786325, losses=1)  # the score is 0.5 less 1e-8: rounding shows
def test_the_figures_are_from_bot_a_and_mirror_when_the_seats_swap(
    wins: int, draws: int, losses: int
) -> None:
    """The Elo is A's (the first bot): swapping wins and losses negates it, mirrors the
    interval and turns the LOS into its complement."""
    assume(wins + draws + losses > 0)
    a, b = match_stats(wins, draws, losses), match_stats(losses, draws, wins)
    assert b.elo == -a.elo or b.elo == pytest.approx(-a.elo, rel=1e-9, abs=1e-3)
    assert ref_score(b.elo_low) == pytest.approx(1 - ref_score(a.elo_high), abs=1e-9)
    assert ref_score(b.elo_high) == pytest.approx(1 - ref_score(a.elo_low), abs=1e-9)
    # A score within 1e-8 of a half over ~1e-8 of spread: the z-score carries float rounding
    # of a few 1e-9 (each side's LOS rounds on its own), far below any printed digit.
    assert a.los + b.los == pytest.approx(1.0, abs=1e-7)
    if wins > losses:
        assert a.elo > 0 and a.los > 0.5


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000, 10**9])
def test_sweeps_and_all_draws(n: int) -> None:
    """docs/ratings.md: "A sample without spread ... its interval is the Wilson score
    interval ... and its LOS is Φ(±sqrt(n))"; for a sweep that is cutechess's LOS
    ``Φ((W - L) / sqrt(W + L))``; all draws: Elo 0, a symmetric interval, LOS 50%."""
    for counts in ([0, 0, n], [n, 0, 0], [0, n, 0]):
        losses, draws, wins = counts
        stats = match_stats(wins, draws, losses)
        assert_matches_reference(stats, counts)
        if draws == 0:
            cutechess = NORMAL.cdf((wins - losses) / math.sqrt(wins + losses))
            assert stats.los == pytest.approx(cutechess, abs=1e-12)
    # Deal pairs all scoring the same (every pair 1½ points; every pair split 1-1).
    assert_matches_reference(match_stats(0, 0, 0, pentanomial=[0, 0, 0, n, 0]), [0, 0, 0, n, 0])
    assert_matches_reference(match_stats(0, 0, 0, pentanomial=[0, 0, n, 0, 0]), [0, 0, n, 0, 0])


def test_zero_games_say_nothing() -> None:
    """An empty sample: Elo 0 with an unbounded interval and LOS 50%, no NaN; the SPRT's LLR
    is 0 and the test goes on (module docstring: "0 before any result")."""
    for stats in (match_stats(0, 0, 0), match_stats(0, 0, 0, pentanomial=[0, 0, 0, 0, 0])):
        assert (stats.elo, stats.elo_low, stats.elo_high, stats.los) == (
            0.0,
            -math.inf,
            math.inf,
            0.5,
        )
        assert stats.format() == (
            f"Elo +0.0 [-inf, +inf] (95%, {stats.model}), LOS 50.0%, draw ratio 0.0%"
        )
    sprt = Sprt()
    for sample in (trinomial_sample(0, 0, 0), pentanomial_sample([0, 0, 0, 0, 0])):
        assert sprt.llr(sample) == 0.0
        assert sprt.decide(sprt.llr(sample)) is SprtDecision.CONTINUE


def test_the_los_of_games_is_cutechess_and_of_pairs_fastchess() -> None:
    """docs/ratings.md: games' LOS ``Φ((W - L)/sqrt(W + L))`` as cutechess counts it (+9 =0
    -1: 99.43%, where the Wald form ``Φ((x - ½)/sqrt(v/n))`` says 99.999%); deal pairs' LOS
    ``Φ((x - ½) / sqrt(v/n))`` as fastchess."""
    assert match_stats(9, 0, 1).los == pytest.approx(0.99430, abs=1e-5)
    pairs = match_stats(0, 0, 0, pentanomial=[0, 1, 2, 3, 0])
    x = (1 * 0.25 + 2 * 0.5 + 3 * 0.75) / 6
    v = (1 * (0.25 - x) ** 2 + 2 * (0.5 - x) ** 2 + 3 * (0.75 - x) ** 2) / 6
    assert pairs.los == pytest.approx(NORMAL.cdf((x - 0.5) / math.sqrt(v / 6)), abs=1e-12)


def _fmt(elo: float) -> str:
    text = f"{elo:+.1f}"
    return "+0.0" if text == "-0.0" else text


@pytest.mark.parametrize(
    ("wins", "draws", "losses", "said"),
    [
        (17, 2, 3, "+261.3 [+81.2, +441.3]"),
        (9, 0, 1, "+381.7 [+67.4, +696.0]"),
        (1, 0, 0, "+inf [-233.8, +inf]"),
        (0, 30, 0, "+0.0 [-121.8, +121.8]"),
        (54, 1, 5, "Elo +398.4 [+250.6, +546.2] (95%, trinomial), LOS 100.0%, draw ratio 1.7%"),
    ],
)
def test_the_worked_examples_of_the_docs(wins: int, draws: int, losses: int, said: str) -> None:
    """docs/ratings.md's examples ("17 wins, 2 draws and 3 losses give +261.3 [+81.2,
    +441.3]; 9 wins in 10 +381.7 [+67.4, +696.0]; one win +inf [-233.8, +inf]; 30 draws
    +0.0 [-121.8, +121.8]", the +54 =1 -5 line): recomputed from the definitions, and the
    module prints the same."""
    doc = (ROOT / "docs" / "ratings.md").read_text(encoding="utf-8")
    assert said in doc
    elo, low, high, los = ref_stats([losses, draws, wins])
    mine = f"{_fmt(elo)} [{_fmt(ref_elo(low))}, {_fmt(ref_elo(high))}]"
    assert mine in said
    if said.startswith("Elo"):
        mine = (
            f"Elo {mine} (95%, trinomial), LOS {100 * los:.1f}%,"
            f" draw ratio {100 * draws / (wins + draws + losses):.1f}%"
        )
        assert mine == said
    assert mine in match_stats(wins, draws, losses).format()


def test_turning_a_draw_into_a_win_never_lowers_los_or_the_low_bound() -> None:
    """LOS is "the likelihood that A is stronger" (docs/ratings.md): a win in place of a
    draw (or a loss) is better evidence, so neither it nor the interval's low end may go
    down. (The Wald figures gave +3 =0 -0 LOS 95.8% [-42.9, +inf] and +2 =1 -0 99.3%
    [+46.6, +inf]; +10 =0 -0 99.92% and +9 =0 -1 99.999%.)"""
    three_wins, two_wins_a_draw = match_stats(3, 0, 0), match_stats(2, 1, 0)
    assert three_wins.los >= two_wins_a_draw.los
    assert three_wins.elo_low >= two_wins_a_draw.elo_low
    assert match_stats(10, 0, 0).los >= match_stats(9, 0, 1).los


@settings(max_examples=300, deadline=None, database=None)
@given(
    counts=st.lists(small_or_huge, min_size=3, max_size=3),
    better=st.sampled_from(["draw", "loss"]),
)
def test_any_better_result_raises_los_and_both_bounds(counts: list[int], better: str) -> None:
    """The same for any counts: a draw or a loss turned into a win never lowers the LOS nor
    either end of the interval (in score; equal allowed)."""
    losses, draws, wins = counts
    if better == "draw":
        assume(draws > 0)
        after = match_stats(wins + 1, draws - 1, losses)
    else:
        assume(losses > 0)
        after = match_stats(wins + 1, draws, losses - 1)
    before = match_stats(wins, draws, losses)
    assert after.los >= before.los - 1e-12
    assert ref_score(after.elo_low) >= ref_score(before.elo_low) - 1e-12
    assert ref_score(after.elo_high) >= ref_score(before.elo_high) - 1e-12


# --------------------------------------------------------------------------------------------
# SPRT
# --------------------------------------------------------------------------------------------

elo_bound = st.floats(-2000, 2000, allow_nan=False)


def _sprt_or_reject(elo0: float, width: float) -> tuple[Sprt, float]:
    """The SPRT of ``[elo0, elo0 + width]`` (capped at 2000), or the example rejected when
    the settings are refused (bounds too close to tell apart)."""
    elo1 = min(elo0 + width, 2000.0)
    assume(elo1 > elo0)
    try:
        return Sprt(elo0=elo0, elo1=elo1), elo1
    except SprtSettingsError:
        assume(False)
        raise


@settings(max_examples=150, deadline=None, database=None)
@given(
    counts=st.lists(small_or_huge, min_size=3, max_size=3),
    elo0=elo_bound,
    width=st.sampled_from([0.5, 5.0, 50.0, 400.0, 3000.0]),
)
def test_trinomial_llr_is_the_logistic_gsprt(counts: list[int], elo0: float, width: float) -> None:
    """fastchess SPRT::getLLR (logistic): LLR = N Σ p (log p1 - log p0), p_i the most likely
    distribution of mean s_i = 1/(1 + 10^(-elo_i/400)), a count of 0 taken as 0.001; bounds
    anywhere in the accepted ±2000 Elo, counts from 0 to 10⁹."""
    assume(sum(counts) > 0)
    sprt, elo1 = _sprt_or_reject(elo0, width)
    losses, draws, wins = counts
    got = sprt.llr(trinomial_sample(wins, draws, losses))
    assert math.isfinite(got)
    assert got == pytest.approx(ref_llr(counts, elo0, elo1), rel=1e-6, abs=1e-6)


@settings(max_examples=150, deadline=None, database=None)
@given(
    counts=st.lists(small_or_huge, min_size=5, max_size=5),
    elo0=elo_bound,
    width=st.sampled_from([0.5, 5.0, 50.0, 400.0, 3000.0]),
)
def test_pentanomial_llr_is_the_logistic_gsprt(
    counts: list[int], elo0: float, width: float
) -> None:
    """fastchess SPRT::getLLR for the pentanomial: pair scores 0, ¼, ½, ¾, 1, the same
    logistic hypotheses (not scaled by √2: that is the normalized model only)."""
    assume(sum(counts) > 0)
    sprt, elo1 = _sprt_or_reject(elo0, width)
    got = sprt.llr(pentanomial_sample(counts))
    assert math.isfinite(got)
    assert got == pytest.approx(ref_llr(counts, elo0, elo1), rel=1e-6, abs=1e-6)


@settings(max_examples=100, deadline=None, database=None)
@given(
    counts=st.lists(st.integers(1, 10**6), min_size=3, max_size=3),
    elo0=st.floats(-300, 300, allow_nan=False),
    width=st.floats(1, 300, allow_nan=False),
    times=st.integers(2, 50),
)
def test_llr_mirrors_and_scales(counts: list[int], elo0: float, width: float, times: int) -> None:
    """Two consequences of the likelihood ratio's definition: seen from B's side (wins and
    losses swapped, hypotheses -elo1 and -elo0) the LLR changes sign; with every outcome
    seen, k times the games at the same frequencies give k times the LLR."""
    elo1 = elo0 + width
    losses, draws, wins = counts
    llr = Sprt(elo0=elo0, elo1=elo1).llr(trinomial_sample(wins, draws, losses))
    mirrored = Sprt(elo0=-elo1, elo1=-elo0).llr(trinomial_sample(losses, draws, wins))
    assert mirrored == pytest.approx(-llr, rel=1e-7, abs=1e-7)
    scaled = Sprt(elo0=elo0, elo1=elo1).llr(
        trinomial_sample(times * wins, times * draws, times * losses)
    )
    assert scaled == pytest.approx(times * llr, rel=1e-7, abs=1e-7)


@pytest.mark.parametrize(("alpha", "beta"), [(0.05, 0.05), (0.05, 0.2), (0.01, 0.1), (0.3, 0.02)])
def test_thresholds_and_decisions(alpha: float, beta: float) -> None:
    """docs/ratings.md: "The run stops as soon as LLR ≥ log((1-β)/α) (H1 accepted) or
    LLR ≤ log(β/(1-α)) (H0 accepted); with the defaults the bounds are ±2.94" (Wald's
    thresholds: α bounds the false H1, β the false H0; not swapped when α ≠ β)."""
    sprt = Sprt(alpha=alpha, beta=beta)
    lower, upper = math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)
    assert sprt.lower == pytest.approx(lower, abs=1e-12)
    assert sprt.upper == pytest.approx(upper, abs=1e-12)
    assert sprt.decide(sprt.upper) is SprtDecision.H1
    assert sprt.decide(sprt.lower) is SprtDecision.H0
    assert sprt.decide(math.nextafter(sprt.upper, 0)) is SprtDecision.CONTINUE
    assert sprt.decide(math.nextafter(sprt.lower, 0)) is SprtDecision.CONTINUE
    assert f"({lower:.2f}, {upper:.2f})" in sprt.format(trinomial_sample(1, 1, 1))
    if (alpha, beta) == (0.05, 0.05):
        assert f"{sprt.lower:.2f}, {sprt.upper:.2f}" == "-2.94, 2.94"


def test_sprt_settings_in_every_spelling_the_cli_accepts() -> None:
    """``--sprt`` takes logistic Elo only (docs: "in the logistic Elo model"), as numbers in
    any float spelling, separated by spaces or commas; non-finite or unit-suffixed values
    and other models are refused."""
    assert Sprt.parse(["elo0=-0.5e1", "elo1=+1E1", "alpha=.1", "beta=5e-2"]) == Sprt(
        elo0=-5, elo1=10, alpha=0.1, beta=0.05
    )
    assert Sprt.parse(["elo0=0 elo1=5", "alpha=0.05,beta=0.05"]) == Sprt()
    for words in (["elo1=nan"], ["elo1=inf"], ["alpha=5%"], ["model=normalized"], ["elo1=5elo"]):
        with pytest.raises(SprtSettingsError):
            Sprt.parse(words)
    # A bound given in logistic Elo is used as such: elo1=100 means a score of 0.6401.
    sample = trinomial_sample(30, 10, 20)
    assert Sprt.parse(["elo1=100"]).llr(sample) == pytest.approx(
        ref_llr([20, 10, 30], 0.0, 100.0), abs=1e-7
    )


# --------------------------------------------------------------------------------------------
# Pairing games into deal pairs (-j N), the tally of a run
# --------------------------------------------------------------------------------------------


def _record(winner: int | None, forfeit_seat: int | None = None) -> GameRecord:
    if forfeit_seat is not None:
        return GameRecord(
            deck=(),
            dealer=0,
            turn_limit=100,
            moves=(),
            ending=GameEndReason.TIMEOUT,
            winner=1 - forfeit_seat,
            forfeit=Forfeit(forfeit_seat, GameEndReason.TIMEOUT, "", "no reply"),
        )
    ending = GameEndReason.TURN_LIMIT if winner is None else GameEndReason.OUT
    return GameRecord(deck=(), dealer=0, turn_limit=100, moves=(), ending=ending, winner=winner)


def _tally(*, duplicate: bool, sprt: Sprt | None = None) -> _Tally:
    return _Tally(
        games=1000,
        duplicate=duplicate,
        sprt=sprt,
        verbose=False,
        report_every=10_000,
        names=("A 1", "B 1"),
        out=Console(file=io.StringIO()),
    )


def test_deal_pairs_are_games_2k_minus_1_and_2k_of_one_series() -> None:
    """referee/series.py: "each deal twice ... (pairs of games 1-2, 3-4, ...)" per series;
    with -j 2 the series' games arrive interleaved. A forfeit counts as a loss of the seat
    that forfeited; an unpaired last game (a run stopped between the two games of a deal)
    is left out; games 2 and 3 are not a pair; the figures are A's (seat 0)."""
    tally = _tally(duplicate=True)
    arrivals = [
        ((0, 1), _record(0)),  # A wins
        ((1, 1), _record(None)),  # draw
        ((1, 2), _record(None, forfeit_seat=1)),  # B forfeits: A wins -> pair 1½
        ((0, 2), _record(None, forfeit_seat=0)),  # A forfeits -> pair 1 (win + loss)
        ((0, 3), _record(1)),  # B wins ...
        ((1, 3), _record(1)),
        ((0, 4), _record(1)),  # ... -> pair 0
        ((1, 4), _record(0)),  # -> pair 1
        ((0, 5), _record(0)),  # unpaired: its pair was never played
    ]
    for (series, number), record in arrivals:
        tally.add(series, number, record)
    assert tally.pentanomial() == [1, 0, 2, 1, 0]
    assert (tally.wins, tally.draws, tally.losses) == (4, 1, 4)
    assert unpaired_note(tally.pentanomial(), 9) == (
        "Elo, interval and LOS from the 4 complete deal pairs: 1 game without its pair left out"
    )
    sample = tally.sample()
    assert sample.units == 4 and sample.mean == pytest.approx((0 + 1 + 1 + 1.5) / 2 / 4)
    # Standard format: every game is a unit (trinomial), whatever the series.
    standard = _tally(duplicate=False)
    for (series, number), record in arrivals:
        standard.add(series, number, record)
    assert standard.sample() == trinomial_sample(4, 1, 4)


@settings(max_examples=200, deadline=None, database=None)
@given(units=st.integers(1, 5000), jobs=st.integers(1, 64), duplicate=st.booleans())
def test_split_games_keeps_deal_pairs_whole(units: int, jobs: int, duplicate: bool) -> None:
    """``-j N`` (docs/ratings.md): "the run is split into N independent series ... each
    keeping ... its deal pairs": every series of a duplicate run has an even number of games,
    the sizes add up to -n, none is empty, and they differ by at most one deal (game)."""
    fmt = SeriesFormat.DUPLICATE if duplicate else SeriesFormat.STANDARD
    unit = 2 if duplicate else 1
    sizes = split_games(unit * units, jobs, fmt)
    assert sum(sizes) == unit * units and len(sizes) == min(jobs, units)
    assert all(size > 0 and size % unit == 0 for size in sizes)
    assert max(sizes) - min(sizes) <= unit
    if duplicate:
        with pytest.raises(SeriesConfigError):
            split_games(2 * units + 1, jobs, fmt)


def test_the_left_out_note_agrees_with_the_figures_when_no_pair_is_complete() -> None:
    """unpaired_note: "the score line counts every game, the Elo, its interval and LOS only
    complete pairs": with 0 complete pairs the figures must be those of no pair at all (or
    the note must not claim so)."""
    pentanomial = [0, 0, 0, 0, 0]
    note = unpaired_note(pentanomial, 1)
    stats = match_stats(1, 0, 0, pentanomial=pentanomial)
    assert note is None or (
        stats.model == "pentanomial" and (stats.elo_low, stats.elo_high) == (-math.inf, math.inf)
    )


def test_a_game_counted_after_the_decision_does_not_undo_it() -> None:
    """docs/ratings.md: "When the SPRT stops the run, games in progress are dropped" and the
    run stops "as soon as" a bound is crossed: the decision printed at the end must be the
    one that stopped the run. Here series 1 crosses log(β/(1-α)) at its 9th loss and series
    2's game ending in the same moment (a win for A) is counted after it."""
    sprt = Sprt(elo0=0, elo1=100)
    tally = _tally(duplicate=False, sprt=sprt)
    number = 0
    while not tally.decided:
        number += 1
        tally.add(0, number, _record(1))
    assert number == 9 and sprt.decide(sprt.llr(tally.sample())) is SprtDecision.H0
    tally.add(1, 1, _record(0))  # the game of series 2 that ended at the same time
    assert sprt.decide(sprt.llr(tally.sample())) is SprtDecision.H0


# --------------------------------------------------------------------------------------------
# kryt play --sprt for real, with the bundled bots
# --------------------------------------------------------------------------------------------


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


GAME_LINE = re.compile(r"^game (\d+)/\d+ \(series 1 game (\d+), dealer seat \d\): (.*)$")
LLR_LINE = re.compile(r"^LLR (-?\d+\.\d\d) \((-?\d+\.\d\d), (-?\d+\.\d\d)\)$")


def _summary(out: str) -> tuple[float, str, str]:
    found = re.search(
        r"SPRT elo0=\S+ elo1=\S+ alpha=\S+ beta=\S+: LLR (-?\d+\.\d\d) .*\) (.+)", out
    )
    assert found is not None, out
    elo = re.search(r"Elo (\S+) \[", out)
    assert elo is not None, out
    return float(found.group(1)), found.group(2), elo.group(1)


@pytest.mark.usefixtures("elsewhere")
def test_sprt_stops_at_the_first_crossing_and_says_h1(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/ratings.md: "The run stops as soon as LLR ≥ log((1-β)/α) (H1 accepted)"; README:
    "--sprt stops as soon as the sequential test accepts H0 or H1 and prints its LLR and
    bounds". greedy (A) against random, one series: every game's LLR (--verbose) is
    recomputed here from the results so far; the run ends at the first game whose LLR
    reaches the upper bound, says H1, and A's Elo is positive."""
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "300", "--seed", "11", "-v",
        "--sprt", "elo0=0", "elo1=100", "alpha=0.05", "beta=0.1", *FAST,
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    wins = draws = losses = 0
    games = 0
    upper, lower = math.log(0.9 / 0.05), math.log(0.1 / 0.95)
    for index, line in enumerate(lines):
        game = GAME_LINE.match(line)
        if not game:
            continue
        games += 1
        assert int(game.group(2)) == games
        said = game.group(3)
        if said.startswith("greedy 1.0.0 wins"):
            wins += 1
        elif said.startswith("random 1.0.0 wins"):
            losses += 1
        else:
            assert said.startswith("draw"), said
            draws += 1
        llr_line = LLR_LINE.match(lines[index + 1])
        assert llr_line is not None, lines[index + 1]
        assert (float(llr_line.group(2)), float(llr_line.group(3))) == (
            round(lower, 2),
            round(upper, 2),
        )
        mine = ref_llr([losses, draws, wins], 0.0, 100.0)
        assert float(llr_line.group(1)) == pytest.approx(mine, abs=0.006)
        crossed = mine >= upper or mine <= lower
        is_last = not any(GAME_LINE.match(rest) for rest in lines[index + 1 :])
        assert crossed == is_last, (games, mine)
    llr, decision, elo = _summary(out)
    assert decision == "H1 accepted" and llr >= upper
    assert llr == pytest.approx(ref_llr([losses, draws, wins], 0.0, 100.0), abs=0.006)
    assert float(elo) > 0
    assert f"+{wins} ={draws} -{losses}" in out
    assert f"stopped early by the SPRT after {games} of 300 games" in out


@pytest.mark.usefixtures("elsewhere")
def test_duplicate_sprt_in_parallel_uses_complete_pairs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--sprt help: "trinomial model; pentanomial with --format duplicate"; with -j 2 the
    pairs are those of each series. random (A) against greedy: H0, the final LLR and the
    Elo line are those of the printed pentanomial, A's Elo is negative."""
    code, out, err = kryt(
        capsys, "play", "builtin:random", "builtin:greedy", "-n", "300", "-j", "2",
        "--seed", "5", "--format", "duplicate", "--sprt", "elo0=-50", "elo1=50", *FAST,
    )  # fmt: skip
    assert code == 0, err
    found = re.search(r"pentanomial \(0, ½, 1, 1½, 2 points per deal pair\): \[([\d, ]+)\]", out)
    assert found is not None, out
    counts = [int(c) for c in found.group(1).split(",")]
    llr, decision, elo = _summary(out)
    assert decision == "H0 accepted" and llr <= math.log(0.05 / 0.95)
    assert llr == pytest.approx(ref_llr(counts, -50.0, 50.0), abs=0.006)
    mine, low, high, los = ref_stats(counts)
    line = f"Elo {_fmt(mine)} [{_fmt(ref_elo(low))}, {_fmt(ref_elo(high))}] (95%, pentanomial)"
    assert line in out and f"LOS {100 * los:.1f}%" in out
    assert float(elo) < 0
    scores = re.findall(r"\+(\d+) =(\d+) -(\d+) \[[\d.]+\] (\d+)/300", out)
    assert scores, out
    *counted, done = (int(n) for n in scores[-1])  # the last score line: the whole run
    played = sum(counted)
    assert played == done and 2 * sum(counts) <= played <= 2 * sum(counts) + 2
    assert f"stopped early by the SPRT after {played} of 300 games" in out


@pytest.mark.usefixtures("elsewhere")
def test_an_undecided_sprt_plays_every_game_and_says_continue(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Bounds not reached within -n: every game is played, the last line says 'continue'
    with the LLR of the final score, and nothing claims an early stop."""
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "4", "-j", "2",
        "--seed", "2", "--sprt", "elo0=0", "elo1=5", *FAST,
    )  # fmt: skip
    assert code == 0, err
    score = re.search(r"Score of greedy 1\.0\.0 vs random 1\.0\.0: \+(\d+) =(\d+) -(\d+)", out)
    assert score is not None
    wins, draws, losses = (int(score.group(i)) for i in (1, 2, 3))
    assert wins + draws + losses == 4
    llr, decision, _ = _summary(out)
    assert decision == "continue"
    assert llr == pytest.approx(ref_llr([losses, draws, wins], 0.0, 5.0), abs=0.006)
    assert "stopped early" not in out
