"""The rating of record: a batch Bradley-Terry fit in Rémi Coulom's BayesElo model.

Reproduces ``bayeselo`` 0057 run as ``elo / mm 1 1 / covariance / ratings / los``: maximum
a posteriori ratings with a fitted first-mover advantage and draw parameter (drawelo), a prior
of virtual draws, ratings centred on 0, displayed as ``scale * rating + offset`` with
``scale = 4x / (1 + x)^2``, ``x = 10^(-drawelo / 400)``, intervals from the covariance (the
inverse Hessian) and the likelihood of superiority between players. The optimiser is SciPy's
trust-region Newton method fed the analytic gradient and Hessian-vector products.

SciPy is imported inside the functions that use it, never at module level: importing SciPy
costs ~0.4 s, and a leaderboard read from a fresh rating snapshot never fits (the
``kryt leaderboard`` start-up check in tests/cli/test_leaderboard_startup.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import NDArray

from leaderboard.ratings.errors import (
    DisconnectedResultsError,
    FitError,
    InvalidCountsError,
    RatingsError,
    UnboundedRatingError,
)
from leaderboard.ratings.games import PairCounts
from leaderboard.ratings.model import (
    NATURAL_PER_ELO,
    Design,
    Evaluation,
    build_design,
    centred_inverse,
    evaluate,
    laplacian,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DEFAULT_PRIOR = 2.0
DEFAULT_DRAWELO = 97.3  # BayesElo's starting value, used when drawelo is not fitted
#: The largest prior accepted (virtual draws per player). Beyond it the virtual draws swamp
#: the real games in double precision: the optimiser's stopping test scales with all the
#: counts, so at 10^8 it stops before the first step and returns the starting point.
MAX_PRIOR = 1e6
#: Ratings tie when they agree to this many decimals of an Elo: rounding noise of the fit
#: (1e-12 or so) must not decide an order that the results leave open.
TIE_DECIMALS = 6
#: Ratings further than this from the mean mean the maximum does not exist (Elo units).
DIVERGENCE_ELO = 5000.0
#: Up to this many bots the ratings block of the Hessian is kept as a dense matrix.
DENSE_LIMIT = 4000
#: Up to this many bots the optimiser solves each trust-region step exactly.
EXACT_LIMIT = 100


@dataclass(frozen=True, slots=True)
class PlayerRating:
    """One line of the rating table (display units)."""

    rank: int
    name: str
    rating: float
    interval: float  # half-width of the confidence interval, +/- this much
    games: int
    wins: int
    draws: int
    losses: int
    score: float  # (wins + draws / 2) / games
    draw_rate: float  # draws / games
    los_next: float | None  # P(this bot is stronger than the next one down); None for last

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {
            "rank": self.rank,
            "name": self.name,
            "rating": self.rating,
            "interval": self.interval,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "score": self.score,
            "draw_rate": self.draw_rate,
            "los_next": self.los_next,
        }


@dataclass(frozen=True)
class BayesEloFit:
    """A fitted BayesElo model; arrays are indexed like ``names`` (sorted names).

    ``internal`` are the centred maximum-a-posteriori ratings in Elo units of the model;
    ``ratings = scale * internal + offset`` are what BayesElo displays. ``covariance`` and
    ``intervals`` are in display units; ``advantage`` and ``drawelo`` in internal units.
    """

    names: tuple[str, ...]
    internal: FloatArray
    ratings: FloatArray
    covariance: FloatArray
    intervals: FloatArray
    advantage: float
    drawelo: float
    scale: float
    offset: float
    prior: float
    confidence: float
    games: IntArray
    wins: IntArray
    draws: IntArray
    losses: IntArray
    iterations: int

    def index(self, name: str) -> int:
        """Position of ``name`` in the arrays; ``KeyError`` naming it if unknown."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no rated bot named {name!r}") from None

    def rating(self, name: str) -> float:
        """Display rating of ``name``."""
        return float(self.ratings[self.index(name)])

    def los(self, better: str, worse: str) -> float:
        """Likelihood of superiority: posterior P(``better`` is stronger than ``worse``)."""
        from scipy.special import ndtr

        i, j = self.index(better), self.index(worse)
        if i == j:
            raise ValueError(f"LOS of {better!r} over itself is undefined")
        c = self.covariance
        sigma = math.sqrt(c[i, i] + c[j, j] - 2.0 * c[i, j])
        return float(ndtr((self.ratings[i] - self.ratings[j]) / sigma))

    def los_matrix(self) -> FloatArray:
        """``m[i, j] = LOS(i over j)`` for all pairs; zero on the diagonal, as in BayesElo."""
        from scipy.special import ndtr

        c = self.covariance
        d = np.diag(c)
        sigma = np.sqrt(np.maximum(d[:, None] + d[None, :] - 2.0 * c, 1e-300))
        out: FloatArray = ndtr((self.ratings[:, None] - self.ratings[None, :]) / sigma)
        np.fill_diagonal(out, 0.0)
        return out

    def table(self) -> list[PlayerRating]:
        """Rows best first with the LOS over the next row; equal ratings (to a millionth of
        an Elo, :data:`TIE_DECIMALS`) are ordered by name."""
        order = sorted(
            range(len(self.names)),
            key=lambda k: (-round(float(self.internal[k]), TIE_DECIMALS), self.names[k]),
        )
        rows: list[PlayerRating] = []
        for rank, k in enumerate(order, start=1):
            below = order[rank] if rank < len(order) else None
            games = int(self.games[k])
            rows.append(
                PlayerRating(
                    rank=rank,
                    name=self.names[k],
                    rating=float(self.ratings[k]),
                    interval=float(self.intervals[k]),
                    games=games,
                    wins=int(self.wins[k]),
                    draws=int(self.draws[k]),
                    losses=int(self.losses[k]),
                    score=float(self.wins[k] + 0.5 * self.draws[k]) / games,
                    draw_rate=float(self.draws[k]) / games,
                    los_next=None if below is None else self.los(self.names[k], self.names[below]),
                )
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: model parameters and the table."""
        return {
            "model": "bayeselo",
            "prior": self.prior,
            "offset": self.offset,
            "scale": self.scale,
            "advantage": self.advantage,
            "drawelo": self.drawelo,
            "confidence": self.confidence,
            "players": [row.to_dict() for row in self.table()],
        }


def display_scale(drawelo: float) -> float:
    """BayesElo's display scale ``4x / (1 + x)^2`` with ``x = 10^(-drawelo / 400)``."""
    x = math.pow(10.0, -drawelo / 400.0)
    return 4.0 * x / (1.0 + x) ** 2


def _check_graph(counts: PairCounts) -> None:
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    n = len(counts.names)
    games = counts.wins + counts.draws + counts.losses
    per_player = np.bincount(counts.first, games, n) + np.bincount(counts.second, games, n)
    idle = [counts.names[k] for k in np.flatnonzero(per_player == 0)]
    if idle:
        raise InvalidCountsError(f"bots without games cannot be rated: {_some(idle)}")
    played = games > 0
    graph = sparse.coo_matrix(
        (np.ones(int(played.sum())), (counts.first[played], counts.second[played])), shape=(n, n)
    )
    components, labels = connected_components(graph, directed=False)
    if components > 1:
        groups = [
            sorted(counts.names[k] for k in np.flatnonzero(labels == c)) for c in range(components)
        ]
        shown = ", ".join(_some(group, 3) for group in groups[:SHOWN_GROUPS])
        more = f" and {components - SHOWN_GROUPS} more" if components > SHOWN_GROUPS else ""
        raise DisconnectedResultsError(
            f"the results split into {components} groups that never played each other, so "
            f"their relative ratings are undefined: {shown}{more}"
        )


SHOWN_GROUPS = 5
"""Groups named in the error of disconnected results (hundreds would be kilobytes a line)."""


def _some(names: list[str], limit: int = 10) -> str:
    """``names`` as a list, cut to its first ``limit`` with how many more."""
    if len(names) <= limit:
        return str(names)
    return f"{names[:limit]} and {len(names) - limit} more"


def _check_bounded(counts: PairCounts) -> None:
    """Without a prior a maximum exists only if no group of bots swept everyone else.

    That is Ford's condition: the graph with an edge u -> v whenever u scored a point or half
    a point against v must be strongly connected.
    """
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    n = len(counts.names)
    a_scored = (counts.wins + counts.draws) > 0  # first mover took points off second
    b_scored = (counts.losses + counts.draws) > 0
    src = np.concatenate([counts.first[a_scored], counts.second[b_scored]])
    dst = np.concatenate([counts.second[a_scored], counts.first[b_scored]])
    graph = sparse.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    components, labels = connected_components(graph, directed=True, connection="strong")
    if components == 1:
        return
    # A component nobody outside ever took a point from: its ratings run off to +infinity.
    scored_against = set(labels[dst[labels[src] != labels[dst]]].tolist())
    unbeaten = next(c for c in range(components) if c not in scored_against)
    group = sorted(counts.names[k] for k in np.flatnonzero(labels == unbeaten))
    raise UnboundedRatingError(
        f"{group} won every game against the other bots, so with prior 0 the gap runs off "
        "to infinity",
        advice="use a prior > 0",
    )


def _check_parameters_bounded(
    counts: PairCounts, prior: float, fit_advantage: bool, fit_drawelo: bool
) -> None:
    """Reject results whose first-mover advantage or drawelo has no finite maximum.

    Each case is a direction along which the likelihood rises for ever (so the optimiser
    would wander off or stop at an arbitrary point); the message says which:

    * only draws (real and virtual) and drawelo fitted: drawelo grows without bound;
    * every decisive game won by the first mover (or every one by the second), advantage
      fitted: the advantage grows, together with drawelo when there are draws to keep
      likely (or alone when drawelo is fixed and there are no draws at all; with a fixed
      drawelo any draw bounds it);
    * drawelo fitted, draws present (a prior > 0 always adds some) and no bot both won and
      lost a decisive game: the winners' ratings and drawelo grow together, each decisive
      game keeping its probability while every draw becomes more likely.
    """
    wins, draws, losses = (int(a.sum()) for a in (counts.wins, counts.draws, counts.losses))
    decisive = wins + losses
    any_draws = draws > 0 or prior > 0  # the prior's virtual draws count as draws
    if decisive == 0:
        if fit_drawelo:
            raise UnboundedRatingError(
                f"all {draws} games are draws, so the fitted drawelo runs off to infinity",
                advice="fix drawelo instead",
            )
        return
    if fit_advantage and (wins == 0 or losses == 0) and (fit_drawelo or not any_draws):
        side = "first" if losses == 0 else "second"
        raise UnboundedRatingError(
            f"the {side} mover never lost ({wins} first-mover wins, {losses} losses), so the "
            "fitted first-mover advantage runs off to infinity",
            advice="fix the advantage instead",
        )
    if fit_drawelo and any_draws:
        _check_winners_apart(counts)


def _check_winners_apart(counts: PairCounts) -> None:
    """UnboundedRatingError when the decisive games split the bots into winners who never
    lost one and losers who never won one (the gap and drawelo then grow together)."""
    n = len(counts.names)
    # Decisive games won and lost per bot, over both colours.
    won = np.bincount(counts.first, counts.wins, n) + np.bincount(counts.second, counts.losses, n)
    lost = np.bincount(counts.first, counts.losses, n) + np.bincount(counts.second, counts.wins, n)
    if np.any((won > 0) & (lost > 0)):
        return
    winners = [counts.names[k] for k in np.flatnonzero(won > 0)]
    losers = [counts.names[k] for k in np.flatnonzero(lost > 0)]
    raise UnboundedRatingError(
        f"every decisive game was won by one of {_listed(winners)} (who never lost one) "
        f"against one of {_listed(losers)} (who never won one) and every other result is a "
        "draw (the prior's virtual draws count too), so the gap between them and the fitted "
        "drawelo run off to infinity together",
        advice="fix drawelo instead",
    )


def _listed(names: list[str], most: int = 10) -> str:
    """``['a', 'b']``, or the first ``most`` and how many more: a message stays one line."""
    if len(names) <= most:
        return repr(names)
    return f"{names[:most]!r} and {len(names) - most} more"


class _Objective:
    """Packs/unpacks the free parameters and caches the last evaluation for SciPy."""

    def __init__(self, design: Design, advantage: float | None, delta: float | None) -> None:
        self.design = design
        self.fixed_advantage = advantage  # None: fitted
        self.fixed_delta = delta  # None: fitted (as log(delta), so it stays positive)
        self._key: bytes | None = None
        self._eval: Evaluation | None = None
        self._curvature: _Curvature | None = None
        self._curvature_key: bytes | None = None
        self._incidence = design.incidence()

    def start(self) -> FloatArray:
        """Rough moment estimates: Newton from here needs a handful of steps, not twenty."""
        d = self.design
        n = d.n
        games = d.wins + d.draws + d.losses
        points = d.wins + 0.5 * d.draws
        per_player = np.bincount(d.first, games, n) + np.bincount(d.second, games, n)
        scored = np.bincount(d.first, points, n) + np.bincount(d.second, games - points, n)
        # Performance-rating iteration: logit of the score plus the mean opponent.
        logit = np.log((scored + 0.5) / (per_player - scored + 0.5))
        beta = logit.copy()
        for _ in range(3):
            opp = np.bincount(d.first, games * beta[d.second], n)
            opp += np.bincount(d.second, games * beta[d.first], n)
            beta = logit + opp / per_player
            beta -= beta.mean()
        x = [beta]
        total = float(games.sum())
        if self.fixed_advantage is None:
            # logit of the first movers' score, from the two counts rather than from a rate:
            # with huge priors the rate rounds to 1.0 and 1 - rate to 0.
            first = float(points.sum())
            x.append(np.array([math.log((first + 0.5) / (total - first + 0.5))]))
        if self.fixed_delta is None:
            # delta = log((1 + r) / (1 - r)) for the draw rate r, written with the counts so
            # that 1 - r (the decisive share) never rounds to 0.
            draws = float(d.draws_total)
            delta = math.log((total + draws + 1.5) / (total - draws + 0.5))
            x.append(np.array([math.log(max(delta, 1e-3))]))
        return np.concatenate(x)

    def unpack(self, x: FloatArray) -> tuple[FloatArray, float, float]:
        n = self.design.n
        k = n
        advantage = self.fixed_advantage
        if advantage is None:
            advantage = float(x[k])
            k += 1
        delta = self.fixed_delta
        if delta is None:
            # exp overflows (OverflowError) beyond 709: such a trial point is simply infinite.
            delta = math.exp(float(x[k])) if float(x[k]) < 709.0 else math.inf
        return x[:n], advantage, delta

    def at(self, x: FloatArray) -> Evaluation:
        key = x.tobytes()
        if key != self._key or self._eval is None:
            self._eval = evaluate(self.design, *self.unpack(x))
            self._key = key
        return self._eval

    def value(self, x: FloatArray) -> float:
        return self.at(x).value

    def gradient(self, x: FloatArray) -> FloatArray:
        e = self.at(x)
        parts = [e.grad_beta]
        if self.fixed_advantage is None:
            parts.append(np.array([e.grad_advantage]))
        if self.fixed_delta is None:
            delta = self.unpack(x)[2]
            parts.append(np.array([delta * e.grad_delta]))  # chain rule for log(delta)
        return np.concatenate(parts)

    def curvature(self, x: FloatArray) -> _Curvature:
        """Hessian blocks at ``x`` in the free parameters, computed once per point."""
        e = self.at(x)
        if self._curvature is not None and self._curvature_key == self._key:
            return self._curvature
        inc = self._incidence
        n = self.design.n
        delta = self.unpack(x)[2]
        w_sum, q_sum = float(e.weight.sum()), float(e.skew.sum())
        columns: list[FloatArray] = []
        labels: list[str] = []
        if self.fixed_advantage is None:
            columns.append(inc.T @ e.weight)  # d2 / dbeta da
            labels.append("a")
        if self.fixed_delta is None:
            columns.append(delta * (inc.T @ e.skew))  # d2 / dbeta dlog(delta)
            labels.append("d")
        k = len(labels)
        block = np.zeros((k, k))
        for r, row in enumerate(labels):
            for c, col in enumerate(labels):
                if row == col == "a":
                    block[r, c] = w_sum
                elif row == col == "d":
                    # log(delta) parametrisation: delta^2 H_dd + delta g_d
                    h_dd = w_sum + e.delta_curvature
                    block[r, c] = delta * delta * h_dd + delta * e.grad_delta
                else:
                    block[r, c] = delta * q_sum
        dense = laplacian(self.design, e.weight) if n <= DENSE_LIMIT else None
        self._curvature = _Curvature(
            weight=e.weight,
            dense=dense,
            coupling=np.stack(columns, axis=1) if columns else np.zeros((n, 0)),
            block=block,
        )
        self._curvature_key = self._key
        return self._curvature

    def hessp(self, x: FloatArray, p: FloatArray) -> FloatArray:
        """Hessian times ``p``; the ``sum(beta)^2 / 2`` centring term adds ``ones ones^T``."""
        cur = self.curvature(x)
        n = self.design.n
        pb, pk = p[:n], p[n:]
        if cur.dense is not None:
            hb = cur.dense @ pb
        else:
            inc = self._incidence
            hb = inc.T @ (cur.weight * (inc @ pb))
        hb = hb + pb.sum() + cur.coupling @ pk
        return np.concatenate([hb, cur.coupling.T @ pb + cur.block @ pk])

    def hessian(self, x: FloatArray) -> FloatArray:
        """The full Hessian as a dense matrix (only while the pool is small enough)."""
        cur = self.curvature(x)
        assert cur.dense is not None, "dense Hessian requested above DENSE_LIMIT"
        n = self.design.n
        k = cur.block.shape[0]
        out = np.empty((n + k, n + k))
        out[:n, :n] = cur.dense + 1.0  # + ones ones^T from the centring term
        out[:n, n:] = cur.coupling
        out[n:, :n] = cur.coupling.T
        out[n:, n:] = cur.block
        return out


@dataclass(frozen=True)
class _Curvature:
    weight: FloatArray
    dense: FloatArray | None  # ratings block as a dense matrix while it fits in memory
    coupling: FloatArray  # n x k: ratings against advantage / log(drawelo)
    block: FloatArray  # k x k


def fit_bayeselo(
    counts: PairCounts,
    *,
    prior: float = DEFAULT_PRIOR,
    offset: float = 0.0,
    confidence: float = 0.95,
    fit_advantage: bool = True,
    fit_drawelo: bool = True,
    advantage: float = 0.0,
    drawelo: float = DEFAULT_DRAWELO,
) -> BayesEloFit:
    """Fit BayesElo to per-pair counts.

    ``prior`` is the number of virtual draws per player (BayesElo's ``prior``, default 2,
    at most :data:`MAX_PRIOR`); ``offset`` is added to displayed ratings; ``advantage`` and
    ``drawelo`` (internal Elo units) are used as given when their ``fit_*`` flag is false.
    """
    if not (math.isfinite(prior) and 0 <= prior <= MAX_PRIOR):
        raise RatingsError(
            f"prior must be a number of virtual draws from 0 to {MAX_PRIOR:g}, got {prior!r}"
        )
    if not (0.0 < confidence < 1.0):
        raise RatingsError(f"confidence must be between 0 and 1, got {confidence!r}")
    if 0.5 + confidence / 2.0 >= 1.0:  # the normal quantile of 1.0 is infinite
        raise RatingsError(
            f"confidence must be between 0 and 1, got {confidence!r}: so close to 1 that"
            " its intervals would be infinite in double precision"
        )
    for name, value in (("offset", offset), ("advantage", advantage), ("drawelo", drawelo)):
        if not math.isfinite(value):
            raise RatingsError(f"{name} must be a finite number of Elo, got {value!r}")
    # A fixed parameter beyond what a fit may reach (DIVERGENCE_ELO) means nothing, and the
    # likelihood overflows with it (exp(2 drawelo) of 10^300).
    if not fit_advantage and abs(advantage) > DIVERGENCE_ELO:
        raise RatingsError(
            f"a fixed advantage must lie within ±{DIVERGENCE_ELO:g} Elo, got {advantage!r}"
        )
    if not fit_drawelo and not 0 <= drawelo <= DIVERGENCE_ELO:
        raise RatingsError(
            f"a fixed drawelo must lie between 0 and {DIVERGENCE_ELO:g} Elo, got {drawelo!r}"
        )
    counts.require_games()
    _check_graph(counts)
    if prior == 0:
        _check_bounded(counts)
    _check_parameters_bounded(counts, prior, fit_advantage, fit_drawelo)

    from threadpoolctl import threadpool_limits

    # BLAS threads only contend on a busy machine (the fit cost 50 % more CPU with them):
    # one thread, as every fit is small next to the threads' start-up and hand-overs.
    with threadpool_limits(limits=1):
        return _fit(counts, prior, offset, confidence, fit_advantage, fit_drawelo, advantage,
                    drawelo)  # fmt: skip


def _fit(
    counts: PairCounts,
    prior: float,
    offset: float,
    confidence: float,
    fit_advantage: bool,
    fit_drawelo: bool,
    advantage: float,
    drawelo: float,
) -> BayesEloFit:
    from scipy import optimize

    design = build_design(counts, prior)
    fixed_delta: float | None = None if fit_drawelo else drawelo * NATURAL_PER_ELO
    if design.draws_total == 0:
        fixed_delta = 0.0  # no draws at all: the maximum is at drawelo = 0 (plain Bradley-Terry)
    elif fixed_delta is not None and fixed_delta <= 0:
        raise RatingsError(f"drawelo {drawelo!r} makes the observed draws impossible; use > 0")
    objective = _Objective(
        design, None if fit_advantage else advantage * NATURAL_PER_ELO, fixed_delta
    )
    weight = float(design.wins.sum() + design.draws.sum() + design.losses.sum())
    # Stop once the gradient is below 1e-9 per game (1e-7 stopped short on 10^7 one-sided
    # games, where a handful of results carry the information). Newton converges
    # quadratically, so the last step usually lands far below that; a target near the
    # rounding error of a sum over all games would make the trust region reject step after
    # step. 10^6 games of 1000 bots still take 4 Newton steps (benchmarks/ratings_fit.py).
    gtol = 1e-9 * max(1.0, weight)
    # About one natural unit (174 Elo) per coordinate: SciPy's default of 1 in total would
    # need several doublings before Newton may take its full step on a large pool.
    radius = math.sqrt(design.n + 2.0)
    if design.n <= EXACT_LIMIT:
        # Small pools: exact trust-region steps on the dense Hessian, the most robust choice.
        result = optimize.minimize(
            objective.value,
            objective.start(),
            jac=objective.gradient,
            hess=objective.hessian,
            method="trust-exact",
            options={"gtol": gtol, "maxiter": 100, "initial_trust_radius": radius},
        )
    else:
        # Large pools: the exact solver's repeated factorisations would cost more than the
        # passes over the games; a Krylov solver needs only Hessian-vector products.
        result = optimize.minimize(
            objective.value,
            objective.start(),
            jac=objective.gradient,
            hessp=objective.hessp,
            method="trust-krylov",
            options={
                "gtol": gtol,
                "maxiter": 100,
                "inexact": False,
                "initial_trust_radius": radius,
            },
        )
    beta, adv_nat, delta_nat = objective.unpack(result.x)
    elo = (beta - beta.mean()) / NATURAL_PER_ELO
    if max(abs(adv_nat), delta_nat) / NATURAL_PER_ELO > DIVERGENCE_ELO:
        raise UnboundedRatingError(
            "the first-mover advantage or drawelo runs off to infinity",
            advice="fix them instead",
        )
    if float(np.abs(elo).max()) > DIVERGENCE_ELO:
        worst = counts.names[int(np.argmax(np.abs(elo)))]
        raise UnboundedRatingError(
            f"rating of {worst!r} runs off to infinity (one group of bots won every game "
            "against the rest)",
            advice="use a prior > 0",
        )

    if not result.success and float(np.abs(objective.gradient(result.x)).max()) > 1e-6 * weight:
        raise FitError(
            f"BayesElo fit did not converge ({result.message}); these results may have no "
            "finite maximum (some combination of ratings, advantage and drawelo running off to "
            "infinity together)",
            advice="fix the advantage and drawelo instead",
        )
    final = evaluate(design, beta, adv_nat, delta_nat)
    cov_elo = centred_inverse(laplacian(design, final.weight)) / NATURAL_PER_ELO**2
    if not (
        np.all(np.isfinite(elo))
        and math.isfinite(adv_nat)
        and math.isfinite(delta_nat)
        and np.all(np.isfinite(cov_elo))
    ):
        # Extreme inputs (a prior near the smallest float, parameters fixed at the edge of
        # their range) can overflow on the way; NaN would slip past the checks above.
        raise FitError(
            "BayesElo fit gave non-finite numbers (the inputs are beyond what double "
            "precision can fit)",
            advice="use a prior and fixed parameters of ordinary size",
        )
    drawelo_fit = delta_nat / NATURAL_PER_ELO
    scale = display_scale(drawelo_fit)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)  # scipy.stats costs ~1 s to import
    covariance = cov_elo * scale**2
    wins, draws, losses = counts.player_totals()
    return BayesEloFit(
        names=counts.names,
        internal=elo,
        ratings=scale * elo + offset,
        covariance=covariance,
        intervals=z * np.sqrt(np.maximum(np.diag(covariance), 0.0)),
        advantage=adv_nat / NATURAL_PER_ELO,
        drawelo=drawelo_fit,
        scale=scale,
        offset=offset,
        prior=prior,
        confidence=confidence,
        games=wins + draws + losses,
        wins=wins,
        draws=draws,
        losses=losses,
        iterations=int(result.nit),
    )
