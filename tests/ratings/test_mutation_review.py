"""Mutation review of the ratings (live Elo and the BayesElo fit of record).

Each expected value is computed here from the formulas of docs/ratings.md by a small,
independent implementation (its own Elo loop, its own BayesElo log-posterior maximised by a
general-purpose optimiser, its own numerical Hessian), never by running the code under test.
"""

from __future__ import annotations

import math
from itertools import pairwise
from statistics import NormalDist

import numpy as np
import pytest
from scipy import optimize

from leaderboard.ratings import (
    EloTracker,
    Game,
    Outcome,
    PairCounts,
    elo_ratings,
    fit_bayeselo,
)

# ---------------------------------------------------------------- live Elo, docs/ratings.md


def _own_elo(games: list[tuple[str, str, float]]) -> dict[str, tuple[float, int]]:
    """Classical Elo as the docs define it: E = 1 / (1 + 10^((R' - R) / 400)), each side
    moves by K (S - E), K = 32 for a bot's first 30 games and 16 afterwards, start 1500."""
    state: dict[str, tuple[float, int]] = {}
    for a, b, score in games:
        ra, na = state.get(a, (1500.0, 0))
        rb, nb = state.get(b, (1500.0, 0))
        ea = 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0))
        eb = 1.0 / (1.0 + 10.0 ** ((ra - rb) / 400.0))
        ka = 32.0 if na < 30 else 16.0
        kb = 32.0 if nb < 30 else 16.0
        state[a] = (ra + ka * (score - ea), na + 1)
        state[b] = (rb + kb * ((1.0 - score) - eb), nb + 1)
    return state


def _schedule() -> list[tuple[str, str, float]]:
    """32 games of alpha and bravo (wins, draws and losses, both colours), then alpha, now
    established, against charlie, a new bot, twice."""
    scores = (1.0, 0.5, 0.0, 1.0, 1.0, 0.5, 0.0, 0.0)
    games = []
    for k in range(32):
        first, second = ("alpha", "bravo") if k % 2 == 0 else ("bravo", "alpha")
        games.append((first, second, scores[k % len(scores)]))
    games += [("alpha", "charlie", 0.0), ("charlie", "alpha", 0.5)]
    return games


def _game(first: str, second: str, score: float) -> Game:
    outcome = {1.0: Outcome.FIRST_WINS, 0.5: Outcome.DRAW, 0.0: Outcome.SECOND_WINS}[score]
    return Game(first, second, outcome)


def test_live_elo_follows_the_documented_formula_game_by_game() -> None:
    """K 32 through a bot's 30th game, 16 from its 31st, each side its own K, scale 400,
    start 1500: every intermediate rating equals the documented arithmetic."""
    schedule = _schedule()
    tracker = EloTracker()
    for played in range(1, len(schedule) + 1):
        first, second = tracker.update(_game(*schedule[played - 1]))
        expected = _own_elo(schedule[:played])
        for row in (first, second):
            rating, games = expected[row.name]
            assert row.rating == pytest.approx(rating, abs=1e-9), (played, row.name)
            assert row.games == games
    final = {r.name: (r.rating, r.games) for r in elo_ratings(_game(*g) for g in schedule)}
    own = _own_elo(schedule)
    assert final.keys() == own.keys()
    for name, (rating, games) in own.items():
        assert final[name][0] == pytest.approx(rating, abs=1e-9)
        assert final[name][1] == games


def test_the_31st_game_moves_a_bot_by_sixteen_and_a_new_opponent_by_thirty_two() -> None:
    """An established bot (30 games played) meets a new one: the first moves by 16 (S - E),
    the second by 32 (S - E) (each side uses its own K)."""
    tracker = EloTracker()
    for k in range(30):
        tracker.update(_game("alpha", "bravo", 0.5) if k % 2 else _game("bravo", "alpha", 0.5))
    alpha_before = tracker.rating("alpha").rating
    assert tracker.rating("alpha").games == 30
    a, c = tracker.update(_game("alpha", "charlie", 1.0))
    expected = 1.0 / (1.0 + 10.0 ** ((1500.0 - alpha_before) / 400.0))
    assert a.rating - alpha_before == pytest.approx(16.0 * (1.0 - expected), abs=1e-12)
    assert c.rating - 1500.0 == pytest.approx(32.0 * (0.0 - (1.0 - expected)), abs=1e-12)


@pytest.mark.parametrize("games", [29, 30, 31])
def test_provisional_means_fewer_than_thirty_games(games: int) -> None:
    """docs/leaderboard.md: ``*`` = provisional (fewer than 30 games)."""
    tracker = EloTracker()
    for _ in range(games):
        tracker.update(_game("alpha", "bravo", 0.5))
    assert tracker.rating("alpha").provisional is (games < 30)
    assert tracker.ratings()[0].provisional is (games < 30)


def test_a_draw_between_equals_moves_nobody_and_a_win_moves_sixteen() -> None:
    """From 1500 each: a draw changes nothing (E = 1/2), a win gives 32 * 1/2 = 16."""
    tracker = EloTracker()
    a, b = tracker.update(_game("alpha", "bravo", 0.5))
    assert (a.rating, b.rating) == (1500.0, 1500.0)
    a, b = tracker.update(_game("alpha", "bravo", 1.0))
    assert (a.rating, b.rating) == (1516.0, 1484.0)


# ------------------------------------------------------- BayesElo, docs/ratings.md "Model"

# (first, second) -> (first's wins, draws, losses): three bots, both colours of each pair.
COUNTS: dict[tuple[str, str], tuple[int, int, int]] = {
    ("alpha", "bravo"): (6, 3, 2),
    ("bravo", "alpha"): (3, 4, 4),
    ("alpha", "charlie"): (7, 2, 1),
    ("charlie", "alpha"): (2, 3, 5),
    ("bravo", "charlie"): (5, 3, 2),
    ("charlie", "bravo"): (3, 2, 5),
}
NAMES = ("alpha", "bravo", "charlie")


def _f(x: float) -> float:
    return 1.0 / (1.0 + math.pow(10.0, -float(x) / 400.0))


def _with_prior(prior: float) -> list[tuple[int, int, float, float, float]]:
    """(i, j, wins, draws, losses) per ordered pair with the documented virtual draws:
    prior / 4 * games(i, j) * (1 / games(i) + 1 / games(j)), games(i, j) in either order."""
    index = {name: k for k, name in enumerate(NAMES)}
    per_player = dict.fromkeys(NAMES, 0)
    between: dict[frozenset[str], int] = {}
    for (a, b), wdl in COUNTS.items():
        n = sum(wdl)
        per_player[a] += n
        per_player[b] += n
        key = frozenset((a, b))
        between[key] = between.get(key, 0) + n
    rows = []
    for (a, b), (w, d, lo) in COUNTS.items():
        virtual = prior / 4 * between[frozenset((a, b))] * (1 / per_player[a] + 1 / per_player[b])
        rows.append((index[a], index[b], float(w), d + virtual, float(lo)))
    return rows


def _neg_log_posterior(
    r: np.ndarray, adv: float, drawelo: float, rows: list[tuple[int, int, float, float, float]]
) -> float:
    total = 0.0
    for i, j, w, d, lo in rows:
        p_first = _f(r[i] - r[j] + adv - drawelo)
        p_second = _f(r[j] - r[i] - adv - drawelo)
        p_draw = 1.0 - p_first - p_second
        total -= w * math.log(p_first) + d * math.log(p_draw) + lo * math.log(p_second)
    return total


def _own_fit(prior: float) -> tuple[np.ndarray, float, float]:
    """Centred internal ratings, advantage and drawelo maximising the documented posterior."""
    rows = _with_prior(prior)

    def objective(x: np.ndarray) -> float:
        r = np.array([x[0], x[1], -x[0] - x[1]])  # centred on 0
        return _neg_log_posterior(r, x[2], math.exp(x[3]), rows)

    best = optimize.minimize(
        objective,
        np.array([0.0, 0.0, 0.0, math.log(100.0)]),
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 40000, "maxfev": 40000},
    )
    x = best.x
    return np.array([x[0], x[1], -x[0] - x[1]]), float(x[2]), math.exp(float(x[3]))


def _own_covariance(r: np.ndarray, adv: float, drawelo: float, prior: float) -> np.ndarray:
    """Pseudo-inverse of the numerical Hessian of the negative log-posterior in the ratings
    (internal Elo units; advantage and drawelo held at their fitted values)."""
    rows = _with_prior(prior)
    n, h = len(r), 0.5
    hess = np.zeros((n, n))
    for a in range(n):
        for b in range(n):

            def at(da: float, db: float, a: int = a, b: int = b) -> float:
                x = r.copy()
                x[a] += da
                x[b] += db
                return _neg_log_posterior(x, adv, drawelo, rows)

            hess[a, b] = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)
    cov: np.ndarray = np.linalg.pinv(hess)
    return cov


@pytest.mark.parametrize("prior", [2.0, 0.0, 7.5])
def test_fit_equals_an_independent_maximum_of_the_documented_posterior(prior: float) -> None:
    """Ratings, advantage, drawelo and the display scale 4x / (1 + x)^2 agree with a
    Nelder-Mead maximum of the model and virtual draws written from docs/ratings.md."""
    fit = fit_bayeselo(PairCounts.from_mapping(COUNTS), prior=prior)
    r, adv, drawelo = _own_fit(prior)
    assert fit.names == NAMES
    assert fit.advantage == pytest.approx(adv, abs=1e-3)
    assert fit.drawelo == pytest.approx(drawelo, abs=1e-3)
    np.testing.assert_allclose(fit.internal, r, atol=1e-3)
    x = 10.0 ** (-drawelo / 400.0)
    scale = 4.0 * x / (1.0 + x) ** 2
    assert fit.scale == pytest.approx(scale, abs=1e-6)
    np.testing.assert_allclose(fit.ratings, scale * r, atol=1e-3)


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_intervals_and_los_follow_the_inverse_hessian(confidence: float) -> None:
    """interval = z sqrt(C_ii) scale with z = Phi^-1(1/2 + confidence/2); LOS over the next
    bot = Phi((r_i - r_j) / sqrt(C_ii + C_jj - 2 C_ij)), C from the numerical Hessian."""
    fit = fit_bayeselo(PairCounts.from_mapping(COUNTS), prior=2.0, confidence=confidence)
    r, adv, drawelo = _own_fit(2.0)
    x = 10.0 ** (-drawelo / 400.0)
    scale = 4.0 * x / (1.0 + x) ** 2
    cov = _own_covariance(r, adv, drawelo, 2.0) * scale**2
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    np.testing.assert_allclose(fit.intervals, z * np.sqrt(np.diag(cov)), rtol=2e-3)
    np.testing.assert_allclose(fit.covariance, cov, rtol=5e-3, atol=1e-3)
    rows = fit.table()
    assert [row.name for row in rows] == sorted(NAMES, key=lambda n: -r[NAMES.index(n)])
    for row, below in pairwise(rows):
        i, j = NAMES.index(row.name), NAMES.index(below.name)
        sigma = math.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j])
        los = NormalDist().cdf(scale * (r[i] - r[j]) / sigma)
        assert row.los_next == pytest.approx(los, abs=1e-4)
        assert fit.los(row.name, below.name) == pytest.approx(los, abs=1e-4)
    assert rows[-1].los_next is None


def test_table_counts_score_and_draw_rate_over_real_games() -> None:
    """W/D/L over both colours, score = (wins + draws / 2) / games, draw_rate = draws / games
    (real games only, not the prior's virtual draws)."""
    fit = fit_bayeselo(PairCounts.from_mapping(COUNTS), prior=2.0)
    totals = {name: [0, 0, 0] for name in NAMES}
    for (a, b), (w, d, lo) in COUNTS.items():
        totals[a][0] += w
        totals[a][1] += d
        totals[a][2] += lo
        totals[b][0] += lo
        totals[b][1] += d
        totals[b][2] += w
    for row in fit.table():
        w, d, lo = totals[row.name]
        assert (row.wins, row.draws, row.losses, row.games) == (w, d, lo, w + d + lo)
        assert row.score == pytest.approx((w + d / 2) / (w + d + lo), abs=1e-12)
        assert row.draw_rate == pytest.approx(d / (w + d + lo), abs=1e-12)


def test_outcome_of_a_half_point_is_a_draw() -> None:
    """The first mover's score 1, 1/2, 0 maps to 1-0, 1/2-1/2, 0-1 (the database's deal
    pairs reach the paired intervals through this)."""
    assert Outcome.from_score(1.0) is Outcome.FIRST_WINS
    assert Outcome.from_score(0.5) is Outcome.DRAW
    assert Outcome.from_score(0.0) is Outcome.SECOND_WINS
    assert [Outcome.from_score(o.score) for o in Outcome] == list(Outcome)
