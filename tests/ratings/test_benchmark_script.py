"""The benchmark's simulator and fit still run (at a small size) and recover the truth."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from leaderboard.ratings import fit_bayeselo

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ratings_fit.py"


def test_benchmark_simulation_fits_back_to_its_strengths() -> None:
    spec = importlib.util.spec_from_file_location("ratings_fit", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts, strength = module.simulate_counts(150, 90_000, 3)  # above EXACT_LIMIT: Krylov steps
    assert counts.total_games == 90_000
    fit = fit_bayeselo(counts)
    assert fit.advantage == pytest.approx(30.0, abs=8.0)
    assert fit.drawelo == pytest.approx(100.0, abs=8.0)
    error = np.abs(fit.internal - (strength - strength.mean()))
    assert error.max() < 4.5 * np.sqrt(np.diag(fit.covariance)).max() / fit.scale
