"""The BayesElo fit reproduces bayeselo 0057 on the reference fixture (see data/EXPECTED.md)."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboard.ratings import BayesEloFit, PairCounts, fit_bayeselo, read_games_csv
from leaderboard.ratings.model import NATURAL_PER_ELO, build_design, evaluate, laplacian
from tests.ratings.fixture import CSV, expected

EXPECTED = expected()


@pytest.fixture(scope="module")
def counts() -> PairCounts:
    return PairCounts.from_games(read_games_csv(CSV))


@pytest.fixture(scope="module")
def fit(counts: PairCounts) -> BayesEloFit:
    return fit_bayeselo(counts)


def test_fixture_is_the_840_game_set(counts: PairCounts) -> None:
    assert counts.total_games == 840
    assert counts.names == ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


def test_ratings_match_bayeselo_within_one_elo(fit: BayesEloFit) -> None:
    for name, rating in EXPECTED.ratings.items():
        assert fit.rating(name) == pytest.approx(rating, abs=1.0), name
    # In fact the agreement is far tighter than the requirement.
    worst = max(abs(fit.rating(n) - r) for n, r in EXPECTED.ratings.items())
    assert worst < 0.01


def test_intervals_match_bayeselo_covariance_within_two(fit: BayesEloFit) -> None:
    rows = {row.name: row for row in fit.table()}
    for name, interval in EXPECTED.intervals.items():
        assert rows[name].interval == pytest.approx(interval, abs=2.0), name
        # bayeselo prints the rounded value; ours rounds to the same integer.
        assert round(rows[name].interval) == interval, name


def test_los_between_neighbours_matches_within_a_hundredth(fit: BayesEloFit) -> None:
    rows = fit.table()
    assert [r.name for r in rows] == list(EXPECTED.ratings)  # same order as bayeselo
    for row in rows[:-1]:
        assert row.los_next is not None
        assert row.los_next == pytest.approx(EXPECTED.los_next[row.name], abs=0.01), row.name
    assert rows[-1].los_next is None


def test_fitted_advantage_drawelo_and_scale(fit: BayesEloFit) -> None:
    assert fit.advantage == pytest.approx(EXPECTED.advantage, abs=0.05)
    assert fit.drawelo == pytest.approx(EXPECTED.drawelo, abs=0.05)
    assert fit.scale == pytest.approx(EXPECTED.scale, abs=1e-5)


def test_prior_zero_matches_bayeselo(counts: PairCounts) -> None:
    fit0 = fit_bayeselo(counts, prior=0)
    for name, rating in EXPECTED.ratings_prior0.items():
        assert fit0.rating(name) == pytest.approx(rating, abs=1.0), name
    assert fit0.advantage == pytest.approx(EXPECTED.advantage_prior0, abs=0.05)
    assert fit0.drawelo == pytest.approx(EXPECTED.drawelo_prior0, abs=0.05)
    # The prior pulls ratings together: every rating is closer to 0 with 2 virtual draws.
    fit2 = fit_bayeselo(counts)
    assert np.all(np.abs(fit2.internal) < np.abs(fit0.internal))


def test_offset_only_shifts_display(counts: PairCounts, fit: BayesEloFit) -> None:
    shifted = fit_bayeselo(counts, offset=2400.0)
    np.testing.assert_allclose(shifted.ratings - 2400.0, fit.ratings, atol=1e-9)
    np.testing.assert_allclose(shifted.intervals, fit.intervals)
    assert fit.ratings.mean() == pytest.approx(0.0, abs=1e-9)  # centred on 0


def test_confidence_level_scales_intervals(counts: PairCounts, fit: BayesEloFit) -> None:
    wider = fit_bayeselo(counts, confidence=0.99)
    np.testing.assert_allclose(wider.intervals / fit.intervals, 2.5758293 / 1.9599640, rtol=1e-6)


def test_covariance_equals_bayeselo_truncated_hessian_construction(
    counts: PairCounts, fit: BayesEloFit
) -> None:
    """bayeselo's ComputeCovariance fixes the last player, inverts the truncated Hessian of
    the ratings (advantage and drawelo held fixed) and re-centres with ``A C A^T``."""
    n = len(fit.names)
    design = build_design(counts, fit.prior)
    at_fit = evaluate(
        design,
        fit.internal * NATURAL_PER_ELO,
        fit.advantage * NATURAL_PER_ELO,
        fit.drawelo * NATURAL_PER_ELO,
    )
    # Minus the Hessian in display units (display = scale * internal Elo).
    hessian = laplacian(design, at_fit.weight) * (NATURAL_PER_ELO / fit.scale) ** 2
    truncated = hessian[: n - 1, : n - 1]
    a = np.full((n, n - 1), -1.0 / n)
    a[np.arange(n - 1), np.arange(n - 1)] += 1.0
    rebuilt = a @ np.linalg.solve(truncated, a.T)
    np.testing.assert_allclose(fit.covariance, rebuilt, rtol=1e-7, atol=1e-7)
    assert np.all(np.linalg.eigvalsh(fit.covariance)[1:] > 0)
    np.testing.assert_allclose(fit.covariance.sum(axis=1), 0.0, atol=1e-8)  # centred


def test_los_matrix_is_complementary(fit: BayesEloFit) -> None:
    los = fit.los_matrix()
    off = ~np.eye(len(fit.names), dtype=bool)
    np.testing.assert_allclose((los + los.T)[off], 1.0)
    assert fit.los("alpha", "bravo") == pytest.approx(los[0, 1])
    with pytest.raises(KeyError, match="zulu"):
        fit.los("alpha", "zulu")
