"""Whatever the results and options, a fit gives finite numbers or a RatingsError.

The command line turns a RatingsError into one ``error:`` line with exit code 2; anything
else (a ZeroDivisionError in the start point for ``--prior 1e17``, an OverflowError for a
fixed drawelo of 1e300) would be a traceback. Hypothesis tries priors, fixed parameters and
small result sets with gaps, sweeps and all-draw pairings.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kryt.commands.ratings import app
from leaderboard.ratings import Game as RatedGame
from leaderboard.ratings import PairCounts, RatingsError, fit_bayeselo, paired_intervals
from leaderboard.ratings.bayeselo import MAX_PRIOR
from leaderboard.ratings.duplicate import DealPair
from leaderboard.ratings.games import Outcome

Counts = dict[tuple[str, str], tuple[int, int, int]]
NAMES = ("a", "b", "c", "d")

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
PRIORS = st.one_of(
    st.floats(0, MAX_PRIOR),
    st.sampled_from([0.0, 2.0, MAX_PRIOR, 1e15, 1e16, 1e17, 1e300, -1.0, math.inf, math.nan]),
    ANY_FLOAT,
)


@st.composite
def results(draw: st.DrawFn) -> Counts:
    """2-4 bots, any subset of ordered pairs, 0-4 wins/draws/losses each (at least 1 game)."""
    names = NAMES[: draw(st.integers(2, 4))]
    counts: Counts = {}
    for a in names:
        for b in names:
            if a != b and draw(st.booleans()):
                w, d, lo = (draw(st.integers(0, 4)) for _ in range(3))
                if w + d + lo:
                    counts[(a, b)] = (w, d, lo)
    if not counts:
        counts[(names[0], names[1])] = (1, 0, 0)
    return counts


def check(fit_or_error: object) -> None:
    """A fit with finite ratings, intervals and LOS; an error must be a RatingsError."""
    if isinstance(fit_or_error, BaseException):
        assert isinstance(fit_or_error, RatingsError), repr(fit_or_error)
        assert str(fit_or_error)
        return
    fit = fit_or_error
    assert np.all(np.isfinite(fit.ratings)) and np.all(np.isfinite(fit.intervals))  # type: ignore[attr-defined]
    for row in fit.table():  # type: ignore[attr-defined]
        assert row.los_next is None or 0.0 <= row.los_next <= 1.0


def attempt(counts: Counts, **options: object) -> object:
    try:
        return fit_bayeselo(PairCounts.from_mapping(counts), **options)  # type: ignore[arg-type]
    except Exception as exc:
        return exc


@settings(max_examples=300, deadline=None)
@given(results(), PRIORS)
def test_any_prior_gives_a_fit_or_a_ratings_error(counts: Counts, prior: float) -> None:
    outcome = attempt(counts, prior=prior)
    check(outcome)
    if not (math.isfinite(prior) and 0 <= prior <= MAX_PRIOR):
        assert isinstance(outcome, RatingsError) and "prior must be" in str(outcome)


@settings(max_examples=300, deadline=None)
@given(
    results(),
    PRIORS,
    st.booleans(),
    st.booleans(),
    st.one_of(st.floats(-6000, 6000), ANY_FLOAT),
    st.one_of(st.floats(0, 6000), ANY_FLOAT),
)
def test_any_fixed_parameters_give_a_fit_or_a_ratings_error(
    counts: Counts,
    prior: float,
    fit_advantage: bool,
    fit_drawelo: bool,
    advantage: float,
    drawelo: float,
) -> None:
    check(
        attempt(
            counts,
            prior=prior,
            fit_advantage=fit_advantage,
            fit_drawelo=fit_drawelo,
            advantage=advantage,
            drawelo=drawelo,
        )
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c")]),
            st.integers(0, 2),
            st.integers(0, 2),
        ),
        min_size=1,
        max_size=8,
    ),
    PRIORS,
)
def test_paired_intervals_give_a_fit_or_a_ratings_error(
    deals: list[tuple[tuple[str, str], int, int]], prior: float
) -> None:
    outcomes = (Outcome.FIRST_WINS, Outcome.DRAW, Outcome.SECOND_WINS)
    pairs = [
        DealPair(RatedGame(x, y, outcomes[r1]), RatedGame(y, x, outcomes[r2]))
        for (x, y), r1, r2 in deals[1:]
    ]
    (x, y), r1, _ = deals[0]
    singles = [RatedGame(x, y, outcomes[r1])]  # a deal whose second game is not played yet
    try:
        result = paired_intervals(pairs, singles=singles, prior=prior)
    except Exception as exc:
        assert isinstance(exc, RatingsError), repr(exc)
        return
    assert np.all(np.isfinite(result.paired))
    names = result.fit.names
    for better, worse in itertools.pairwise(names):
        assert 0.0 <= result.los(better, worse) <= 1.0


@pytest.mark.parametrize(
    "prior", ["1e15", "1e16", "1e17", "1e300", "inf", "nan", "-1", "1000000.5"]
)
def test_the_command_line_refuses_a_prior_out_of_range_in_one_line(
    tmp_path: Path, prior: str
) -> None:
    csv = tmp_path / "ok.csv"
    csv.write_text("first,second,result\na,b,1-0\nb,a,0-1\na,b,1/2-1/2\nb,a,1-0\n")
    result = CliRunner().invoke(app, ["fit", str(csv), "--prior", prior])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: prior must be a number of virtual")


def test_the_largest_prior_still_fits(tmp_path: Path) -> None:
    csv = tmp_path / "ok.csv"
    csv.write_text("first,second,result\na,b,1-0\nb,a,0-1\na,b,1/2-1/2\nb,a,1-0\n")
    result = CliRunner().invoke(app, ["fit", str(csv), "--prior", f"{MAX_PRIOR:g}", "--json"])
    assert result.exit_code == 0, result.output
