"""Log-posterior of the BayesElo model with its analytic gradient and Hessian.

Work is in natural units (``beta = elo * ln(10) / 400``). For an ordered pair where ``i``
moves first against ``j`` with first-mover advantage ``a`` and draw parameter ``delta``::

    s = beta_i - beta_j + a
    P(first wins)  = sigmoid(s - delta)
    P(second wins) = sigmoid(-s - delta)
    P(draw)        = sigmoid(s - delta) * sigmoid(-s - delta) * (exp(2 delta) - 1)

which is exactly Coulom's ``gamma``/``theta`` parametrisation. With ``A = wins + draws`` and
``B = losses + draws`` per pair the log-likelihood is
``sum A log sigmoid(u) + B log sigmoid(v) + D log(expm1(2 delta))`` (``u = s - delta``,
``v = -s - delta``, ``D`` all draws), so every quantity below is a vectorised sum over pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from leaderboard.ratings.games import PairCounts

if TYPE_CHECKING:
    from scipy import sparse

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Natural-log units per Elo point.
NATURAL_PER_ELO = math.log(10.0) / 400.0


@dataclass(frozen=True)
class Design:
    """Pair arrays the objective sums over, with BayesElo's virtual draws already added."""

    n: int
    first: IntArray
    second: IntArray
    wins: FloatArray
    draws: FloatArray
    losses: FloatArray

    def __post_init__(self) -> None:
        # Cached once: the objective is evaluated many times per fit.
        object.__setattr__(self, "a_counts", self.wins + self.draws)
        object.__setattr__(self, "b_counts", self.losses + self.draws)
        object.__setattr__(self, "draws_total", float(self.draws.sum()))

    a_counts: FloatArray = field(init=False, repr=False)  # wins + draws per pair
    b_counts: FloatArray = field(init=False, repr=False)  # losses + draws per pair
    draws_total: float = field(init=False, repr=False)  # all draws, real and virtual

    def incidence(self) -> sparse.csr_matrix:
        """Sparse matrix with one row ``e_first - e_second`` per pair."""
        from scipy import sparse  # only when fitting: SciPy is slow to import

        m = self.first.size
        rows = np.concatenate([np.arange(m), np.arange(m)])
        cols = np.concatenate([self.first, self.second])
        vals = np.concatenate([np.ones(m), -np.ones(m)])
        return sparse.csr_matrix((vals, (rows, cols)), shape=(m, self.n))


def _unique_keys(keys: IntArray, n: int) -> IntArray:
    """Sorted distinct pair keys; a bitmap beats sorting while n^2 stays small."""
    if n * n <= 1 << 24:
        seen = np.zeros(n * n, dtype=bool)
        seen[keys] = True
        return np.flatnonzero(seen).astype(np.int64)
    return np.unique(keys)


def build_design(counts: PairCounts, prior: float) -> Design:
    """Pair arrays for ``counts`` plus ``prior`` virtual draws per player, as BayesElo adds them.

    Coulom's ``CCondensedResults::AddPrior`` gives each player ``prior / 2`` virtual draws
    of his own, spread over his real opponents in proportion to the games played against each
    and split evenly between the two colours; every draw also counts for the opponent, so a
    player ends up with about ``prior`` virtual draws. For the ordered pair (i, j) that is
    ``prior / 4 * games(i, j) * (1 / games(i) + 1 / games(j))``, the same in both orders.
    """
    n = len(counts.names)
    games = (counts.wins + counts.draws + counts.losses).astype(np.float64)
    keys = counts.first * n + counts.second
    if prior > 0:
        # Virtual draws need both colour orders of every pair that met, even one never played.
        all_keys = _unique_keys(np.concatenate([keys, counts.second * n + counts.first]), n)
    else:
        all_keys = _unique_keys(keys, n)
    first, second = all_keys // n, all_keys % n
    pos = np.searchsorted(all_keys, keys)
    wins = np.zeros(all_keys.size)
    draws = np.zeros(all_keys.size)
    losses = np.zeros(all_keys.size)
    wins[pos] = counts.wins
    draws[pos] = counts.draws
    losses[pos] = counts.losses
    if prior > 0:
        lo, hi = np.minimum(first, second), np.maximum(first, second)
        lo_real = np.minimum(counts.first, counts.second)
        hi_real = np.maximum(counts.first, counts.second)
        pair_games = np.bincount(
            np.searchsorted(all_keys, lo_real * n + hi_real), games, all_keys.size
        )
        between = pair_games[np.searchsorted(all_keys, lo * n + hi)]
        per_player = np.bincount(counts.first, games, n) + np.bincount(counts.second, games, n)
        draws += 0.25 * prior * between * (1.0 / per_player[first] + 1.0 / per_player[second])
    return Design(n, first, second, wins, draws, losses)


@dataclass(frozen=True)
class Evaluation:
    """Negative log-posterior, gradient and Hessian pieces at one point ``(beta, a, delta)``."""

    value: float
    grad_beta: FloatArray
    grad_advantage: float
    grad_delta: float
    weight: FloatArray  # per pair: curvature of the s-direction, hu + hv
    skew: FloatArray  # per pair: hv - hu, couples delta with ratings and advantage
    delta_curvature: float  # from the D log(expm1(2 delta)) term


def evaluate(design: Design, beta: FloatArray, advantage: float, delta: float) -> Evaluation:
    """Everything the optimiser needs at one point; the ``sum(beta)^2 / 2`` term centres."""
    from scipy.special import expit  # only when fitting: SciPy is slow to import

    s = beta[design.first] - beta[design.second] + advantage
    u, v = s - delta, -s - delta
    a_counts, b_counts = design.a_counts, design.b_counts
    pu, pv = expit(u), expit(v)
    # log(expit(.)) is accurate here (arguments stay far from -700) and half the cost
    # of log_expit, which dominates a fit of a million games. A trial step of the optimiser
    # far out may underflow it to log(0) = -inf (and 0 * -inf = NaN): an infinite value,
    # set below, which rejects the step.
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(-(a_counts @ np.log(pu) + b_counts @ np.log(pv)))
    total = float(beta.sum())
    value += 0.5 * total * total
    d_total = design.draws_total
    grad_delta_extra = 0.0
    delta_curvature = 0.0
    if d_total > 0:
        # log(e^(2 delta) - 1) = 2 delta + log(1 - e^(-2 delta)), with 1 - e^(-2 delta) from
        # expm1: a huge delta (a trial step far out) cannot overflow as expm1(2 delta) would
        # (OverflowError), and a tiny one (a tiny prior, no real draws) gives large finite
        # numbers or inf, never 1 - exp(-2 delta) == 0 and a ZeroDivisionError.
        shrink = -math.expm1(-2.0 * delta)  # 1 - e^(-2 delta), in (0, 1] for delta > 0
        if not shrink > 0.0:  # delta == 0 (or NaN): the observed draws are impossible
            value, grad_delta_extra, delta_curvature = math.inf, -math.inf, math.inf
        else:
            value -= d_total * (2.0 * delta + math.log(shrink))
            grad_delta_extra = -d_total * 2.0 / shrink
            delta_curvature = d_total * 4.0 * (1.0 - shrink) / shrink / shrink
    if not math.isfinite(value):
        value = math.inf  # NaN (0 * log 0) too: the optimiser rejects the point either way
    gu, gv = a_counts * (1.0 - pu), b_counts * (1.0 - pv)
    r = gu - gv
    n = design.n
    grad_beta = np.asarray(
        total - (np.bincount(design.first, r, n) - np.bincount(design.second, r, n)),
        dtype=np.float64,
    )
    hu, hv = gu * pu, gv * pv
    return Evaluation(
        value=float(value),
        grad_beta=grad_beta,
        grad_advantage=float(-r.sum()),
        grad_delta=float(gu.sum() + gv.sum()) + grad_delta_extra,
        weight=hu + hv,
        skew=hv - hu,
        delta_curvature=delta_curvature,
    )


def laplacian(design: Design, weight: FloatArray) -> FloatArray:
    """Dense ``E^T diag(weight) E``: the ratings block of the Hessian (without centring)."""
    n = design.n
    flat = np.asarray(np.bincount(design.first * n + design.second, weight, n * n), np.float64)
    flat = flat.reshape(n, n)
    out: FloatArray = -(flat + flat.T)
    out[np.diag_indices(n)] = -out.sum(axis=1)  # rows of a Laplacian sum to zero
    return out


def centred_inverse(lap: FloatArray) -> FloatArray:
    """Pseudo-inverse of a connected graph Laplacian (null space = constants).

    Equals BayesElo's covariance: it fixes one player, inverts the truncated Hessian and
    re-centres, which is the Moore-Penrose inverse for a connected result graph.
    """
    n = lap.shape[0]
    # (L + cP)^-1 = L+ + P/c for the projector P onto the constants; c at the scale of L's
    # entries keeps the sum well conditioned (c = 1 lost every digit past ~10^8 games).
    scale = float(np.trace(lap)) / n
    scale = scale if scale > 0.0 and np.isfinite(scale) else 1.0
    projector = np.full((n, n), 1.0 / n)
    out: FloatArray = np.linalg.inv(lap + scale * projector) - projector / scale
    return out
