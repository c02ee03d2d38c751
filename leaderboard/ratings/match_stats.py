"""Statistics of one pairing (A against B), as engine testers read them: the Elo difference
with its 95% interval, the likelihood of superiority (LOS), the draw ratio, and the
sequential probability ratio test (SPRT) that stops a run once the answer is clear.

Pure functions of counts (standard library only: the command line imports this module while
a run is going, without scipy).

Two models of the same numbers:

* **trinomial** - games are independent; each scores 1, ½ or 0 for A;
* **pentanomial** - duplicate deal pairs are the independent unit; a pair scores 0, ½, 1, 1½
  or 2 points for A. The two games of a deal are correlated, so this variance is the honest
  one for the duplicate format (and usually smaller).

Both reduce to the mean ``x`` and variance ``v`` of a per-unit score in [0, 1] (a pair's
points are halved) over ``n`` units. Then, with ``elo(s) = -400 log10(1/s - 1)``:

* Elo difference ``elo(x)``;
* trinomial: the Wilson score interval of ``x`` with the variance ``s (1 - s)`` (the largest a
  game of mean ``s`` can have), symmetric about ``elo(x)`` in Elo, and cutechess's LOS
  ``Φ((W - L) / sqrt(W + L))``: both rise whenever a loss or a draw becomes a win (the Wald
  interval ``x ± z sqrt(v / n)`` does not, and claims a certainty for a sweep);
* pentanomial, as fastchess: interval ``[elo(x - 1.96 sqrt(v / n)), elo(x + 1.96 sqrt(v /
  n))]`` (lopsided, so both bounds are printed) and LOS ``Φ((x - ½) / sqrt(v / n))``; pairs
  that all scored the same have no variance to estimate: the Wilson interval, LOS
  ``Φ(±sqrt(n))``; no complete pair: nothing known (``[-inf, +inf]``, LOS ½);
* SPRT in the logistic Elo model, the generalized SPRT of engine-testing tools (fastchess's
  ``logistic`` model, after Michel Van den Bergh): ``s_i = 1 / (1 + 10^(-elo_i / 400))`` for
  the two hypotheses; ``p_i`` the maximum-likelihood distribution of a unit's score whose
  mean is ``s_i`` (the observed frequencies, a count of 0 taken as 0.001, reweighted as
  ``p / (1 + θ (a - s_i))``); ``LLR = n Σ p (log p_1 - log p_0)`` over the observed
  frequencies ``p``. H1 (elo ≥ elo1) is accepted when ``LLR ≥ log((1 - β) / α)``, H0
  (elo ≤ elo0) when ``LLR ≤ log(β / (1 - α))``. (The normal approximation
  ``(s1 - s0)(2x - s0 - s1) / (2v/n)`` it replaced doubled the false H1 rate with bounds
  100 Elo or more apart.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from leaderboard.ratings.errors import RatingsError

Z95: Final = 1.959963984540054
"""The two-sided 95% quantile of the standard normal distribution."""


class SprtSettingsError(RatingsError):
    """An SPRT setting is missing, unknown or out of range."""


def elo_from_score(score: float) -> float:
    """The logistic Elo difference that gives expected ``score`` (0..1); ±inf at the ends."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_from_elo(elo: float) -> float:
    """Expected score (0..1) of a player ``elo`` points stronger, logistic model."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass(frozen=True, slots=True)
class ScoreSample:
    """``units`` independent results with mean ``mean`` and variance ``variance`` (per unit,
    each in [0, 1]): games in the trinomial model, halved deal pairs in the pentanomial."""

    units: int
    mean: float
    variance: float
    frequencies: tuple[tuple[float, int], ...] = ()
    """``(score of a unit, how many units)`` for every score a unit can have, lowest first
    (what the SPRT's likelihoods are computed from)."""

    @classmethod
    def from_frequencies(cls, counts: Mapping[float, int]) -> ScoreSample:
        """From ``{score of a unit: how many units}`` (every score a unit can have, 0 too)."""
        if any(c < 0 for c in counts.values()):
            raise RatingsError(f"counts must not be negative: {dict(counts)!r}")
        frequencies = tuple(sorted(counts.items()))
        n = sum(counts.values())
        if n == 0:
            return cls(0, 0.5, 0.0, frequencies)
        mean = sum(s * c for s, c in counts.items()) / n
        variance = sum(c * (s - mean) ** 2 for s, c in counts.items()) / n
        return cls(n, mean, variance, frequencies)

    @property
    def stderr(self) -> float:
        """Standard error of the mean."""
        return math.sqrt(self.variance / self.units) if self.units else math.inf


@dataclass(frozen=True, slots=True)
class MatchStats:
    """What a pairing's results say: Elo difference with its 95% interval, LOS, draw ratio."""

    wins: int
    draws: int
    losses: int
    elo: float
    elo_low: float
    elo_high: float
    los: float
    """Probability that A is the stronger (0..1)."""
    model: str
    """``trinomial`` or ``pentanomial``."""
    pentanomial: tuple[int, int, int, int, int] | None = None

    @property
    def games(self) -> int:
        """Games counted."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """A's mean points per game (0..1); ½ before any game."""
        return (self.wins + self.draws / 2) / self.games if self.games else 0.5

    @property
    def draw_ratio(self) -> float:
        """Share of drawn games (0..1)."""
        return self.draws / self.games if self.games else 0.0

    @property
    def elo_margin(self) -> float:
        """Half the width of the 95% interval (``inf`` when it is unbounded). The pentanomial's
        is lopsided (``elo`` is not its midpoint), so :meth:`format` prints the bounds."""
        return (self.elo_high - self.elo_low) / 2

    def format(self) -> str:
        """One line: ``Elo +35.2 [-5.1, +76.9] (95%, trinomial), LOS 91.2%, draw ratio
        10.0%``. The bounds are printed, not a ± margin: a sweep's interval is unbounded on
        one side (``inf``), and the pentanomial's is lopsided."""
        return (
            f"Elo {_signed(self.elo)} [{_signed(self.elo_low)}, {_signed(self.elo_high)}] (95%, "
            f"{self.model}), LOS {100 * self.los:.1f}%, draw ratio {100 * self.draw_ratio:.1f}%"
        )


def _signed(elo: float) -> str:
    """``+12.3``, ``-4.0``, ``+inf``; an even score is ``+0.0``, never ``-0.0``."""
    text = f"{elo:+.1f}"
    return "+0.0" if text == "-0.0" else text


def trinomial_sample(wins: int, draws: int, losses: int) -> ScoreSample:
    """Games as independent units scoring 1, ½ or 0."""
    return ScoreSample.from_frequencies({1.0: wins, 0.5: draws, 0.0: losses})


def pentanomial_sample(counts: Sequence[int]) -> ScoreSample:
    """Deal pairs as independent units; ``counts[k]`` pairs scored ``k / 2`` points (k 0..4),
    each pair's score halved to lie in [0, 1]."""
    if len(counts) != 5:
        raise RatingsError(f"a pentanomial has five counts (0, ½, 1, 1½, 2), got {counts!r}")
    return ScoreSample.from_frequencies({k / 4: c for k, c in enumerate(counts)})


def _wilson(x: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a mean score ``x`` over ``n`` units, in score, with
    the largest variance a unit of mean ``s`` can have, ``s (1 - s)``. Each bound rises with
    ``x`` for a given ``n``; a sweep's open end is exactly 0 or 1."""
    z2 = Z95 * Z95
    centre = (x + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 / (1 + z2 / n) * math.sqrt(x * (1 - x) / n + z2 / (4 * n * n))
    # The sum would miss a sweep's open end by a rounding.
    return (0.0 if x == 0.0 else centre - half), (1.0 if x == 1.0 else centre + half)


def _count(sample: ScoreSample, score: float) -> int:
    return next((count for value, count in sample.frequencies if value == score), 0)


def _stats(sample: ScoreSample, model: str) -> tuple[float, float, float, float]:
    """(Elo, low, high, LOS) of a sample; an empty sample says nothing."""
    if not sample.units:
        return 0.0, -math.inf, math.inf, 0.5
    x, n = sample.mean, sample.units
    elo = elo_from_score(x)
    if model == "trinomial":
        # Games: the Wilson interval of the score (a draw half a point), and cutechess's and
        # fastchess's LOS from the decisive games. Both only rise when a loss or a draw
        # becomes a win (Wald's x ± z sqrt(v/n) does not: +2 =1 -0 would claim more than
        # +3 =0 -0, as would +9 =0 -1 over +10 =0 -0).
        wins, losses = _count(sample, 1.0), _count(sample, 0.0)
        low, high = _wilson(x, n)
        decisive = wins + losses
        los = 0.5 if decisive == 0 else _normal_cdf((wins - losses) / math.sqrt(decisive))
        return elo, elo_from_score(low), elo_from_score(high), los
    if sample.variance == 0.0:
        # Every pair scored the same: no spread to estimate a variance from. The Wilson
        # interval (one pair: not a certainty); LOS from the variance about ½, (x - ½)².
        low, high = _wilson(x, n)
        los = 0.5 if x == 0.5 else _normal_cdf(math.copysign(math.sqrt(n), x - 0.5))
        return elo, elo_from_score(low), elo_from_score(high), los
    half = Z95 * sample.stderr
    low = elo_from_score(x - half)
    high = elo_from_score(x + half)
    return elo, low, high, _normal_cdf((x - 0.5) / sample.stderr)


def match_stats(
    wins: int,
    draws: int,
    losses: int,
    *,
    pentanomial: Sequence[int] | None = None,
) -> MatchStats:
    """The statistics of A's ``wins``/``draws``/``losses``; with ``pentanomial`` (duplicate
    format: counts of deal pairs scoring 0, ½, 1, 1½, 2 for A) the interval and LOS come from
    the pairs."""
    if min(wins, draws, losses) < 0:
        raise RatingsError(f"counts must not be negative: +{wins} ={draws} -{losses}")
    if pentanomial is not None:
        # Complete pairs only, also before the first one is (a run stopped after one game
        # of a deal): then the figures say nothing, as the note under them says.
        sample = pentanomial_sample(pentanomial)
        model = "pentanomial"
        penta: tuple[int, int, int, int, int] | None = (
            pentanomial[0],
            pentanomial[1],
            pentanomial[2],
            pentanomial[3],
            pentanomial[4],
        )
    else:
        sample = trinomial_sample(wins, draws, losses)
        model, penta = "trinomial", None
    elo, low, high, los = _stats(sample, model)
    return MatchStats(wins, draws, losses, elo, low, high, los, model, penta)


REGULARIZED_COUNT: Final = 1e-3
"""What an outcome never seen counts for in the SPRT's likelihoods (as in fastchess): its
maximum-likelihood distributions need every outcome possible."""


def _constrained_mle(
    scores: Sequence[float], observed: Sequence[float], mean: float
) -> list[float]:
    """The distribution over ``scores`` closest in likelihood to ``observed`` whose mean is
    ``mean``: ``p / (1 + θ (a - mean))``, with ``θ`` the root of
    ``Σ p (a - mean) / (1 + θ (a - mean))``, which falls strictly between the poles
    ``-1 / (max a - mean)`` and ``-1 / (min a - mean)`` (found by bisection)."""
    low, high = -1.0 / (scores[-1] - mean), -1.0 / (scores[0] - mean)
    for _ in range(200):
        theta = (low + high) / 2
        if theta in (low, high):
            break
        slope = sum(
            p * (a - mean) / (1.0 + theta * (a - mean))
            for a, p in zip(scores, observed, strict=True)
        )
        if slope > 0.0:
            low = theta
        else:
            high = theta
    theta = (low + high) / 2
    return [p / (1.0 + theta * (a - mean)) for a, p in zip(scores, observed, strict=True)]


class SprtDecision(Enum):
    """Where the test stands."""

    CONTINUE = "continue"
    H0 = "H0 accepted"
    """The difference is at most ``elo0``."""
    H1 = "H1 accepted"
    """The difference is at least ``elo1``."""


SPRT_ELO_LIMIT = 2000.0
"""The farthest from 0 an SPRT hypothesis may be (in Elo; expected score about 1e-5)."""


@dataclass(frozen=True, slots=True)
class Sprt:
    """A sequential probability ratio test of ``elo ≤ elo0`` (H0) against ``elo ≥ elo1``
    (H1) with error rates ``alpha`` (false H1) and ``beta`` (false H0)."""

    elo0: float = 0.0
    elo1: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not (math.isfinite(self.elo0) and math.isfinite(self.elo1)):
            raise SprtSettingsError(
                f"elo0 and elo1 must be finite numbers, got {self.elo0} and {self.elo1}"
            )
        if not (0.0 < self.alpha < 0.5 and 0.0 < self.beta < 0.5):
            raise SprtSettingsError(
                f"alpha and beta must lie between 0 and 0.5, got {self.alpha} and {self.beta}"
            )
        if not self.elo0 < self.elo1:
            raise SprtSettingsError(f"elo0 must be below elo1, got {self.elo0} and {self.elo1}")
        if max(abs(self.elo0), abs(self.elo1)) > SPRT_ELO_LIMIT:
            # So far out a hypothesis expects a score below the 0.001 count every outcome
            # never seen gets: at elo0=-20000 elo1=-5000 a bot losing every game kept an LLR
            # of +0.17 for ever, the test never deciding.
            raise SprtSettingsError(
                f"elo0 and elo1 must lie within ±{SPRT_ELO_LIMIT:g} Elo, got elo0={self.elo0:g}"
                f" and elo1={self.elo1:g}"
            )
        s0, s1 = score_from_elo(self.elo0), score_from_elo(self.elo1)
        if not 0.0 < s0 < s1 < 1.0:
            # Far apart or far out, the two hypotheses expect the same score in floating
            # point (elo0=5000 elo1=20000): no result could ever tell them apart.
            raise SprtSettingsError(
                f"elo0={self.elo0:g} and elo1={self.elo1:g} expect the same score in floating"
                " point (or a certain one): no game could decide between them; choose"
                " hypotheses within a few thousand Elo of 0"
            )
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise SprtSettingsError(
                f"alpha={self.alpha:g} and beta={self.beta:g} make a bound of the test"
                " infinite: the test could never stop; choose larger error rates"
            )

    @classmethod
    def parse(cls, words: Sequence[str]) -> Sprt:
        """From ``["elo0=0", "elo1=5", "alpha=0.05", "beta=0.05"]`` (any subset, any
        order; missing ones keep their defaults; each at most once, a finite number)."""
        values: dict[str, float] = {}
        for word in words:
            for item in word.replace(",", " ").split():
                key, sep, text = item.partition("=")
                if not sep or key not in {"elo0", "elo1", "alpha", "beta"}:
                    raise SprtSettingsError(
                        f"SPRT settings are elo0=, elo1=, alpha=, beta=; got {item!r}"
                    )
                if key in values:
                    raise SprtSettingsError(
                        f"{key} is given twice ({key}={values[key]:g} and {item}); give it once"
                    )
                try:
                    if "_" in text:  # float() would read 5_0 as 50
                        raise ValueError(text)
                    value = float(text)
                except ValueError:
                    raise SprtSettingsError(f"{key} must be a number, got {text!r}") from None
                if not math.isfinite(value):
                    raise SprtSettingsError(f"{key} must be a finite number, got {text!r}")
                values[key] = value
        return cls(**values)

    @property
    def lower(self) -> float:
        """The LLR at or below which H0 is accepted: ``log(β / (1 - α))``."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which H1 is accepted: ``log((1 - β) / α)``."""
        return math.log((1.0 - self.beta) / self.alpha)

    def llr(self, sample: ScoreSample) -> float:
        """The generalized log-likelihood ratio of H1 against H0 for ``sample`` (0 before any
        result): the observed distribution of a unit's score against the most likely ones
        whose means are the hypotheses' scores (see the module's docstring)."""
        if sample.units == 0:
            return 0.0
        scores = [score for score, _ in sample.frequencies]
        counts = [count if count > 0 else REGULARIZED_COUNT for _, count in sample.frequencies]
        total = sum(counts)
        observed = [count / total for count in counts]
        h0 = _constrained_mle(scores, observed, score_from_elo(self.elo0))
        h1 = _constrained_mle(scores, observed, score_from_elo(self.elo1))
        return total * sum(
            p * (math.log(q1) - math.log(q0)) for p, q0, q1 in zip(observed, h0, h1, strict=True)
        )

    def decide(self, llr: float) -> SprtDecision:
        """H1, H0, or go on."""
        if llr >= self.upper:
            return SprtDecision.H1
        if llr <= self.lower:
            return SprtDecision.H0
        return SprtDecision.CONTINUE

    def describe(self) -> str:
        """``elo0=0 elo1=5 alpha=0.05 beta=0.05``."""
        return f"elo0={self.elo0:g} elo1={self.elo1:g} alpha={self.alpha:g} beta={self.beta:g}"

    def format(self, sample: ScoreSample) -> str:
        """``SPRT elo0=0 elo1=5 alpha=0.05 beta=0.05: LLR 1.23 (-2.94, 2.94) continue``."""
        llr = self.llr(sample)
        return (
            f"SPRT {self.describe()}: LLR {llr:.2f} ({self.lower:.2f}, {self.upper:.2f})"
            f" {self.decide(llr).value}"
        )
