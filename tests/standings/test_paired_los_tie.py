"""A paired LOS between two bots whose rating difference has no spread (seed 65536 of
test_fast_path): bot "b" played only one deal, split 1-1, against "a", so under the
sandwich covariance ``C M C`` the difference a - b has no variance and no gap, both rounding
noise. The LOS was that noise divided by that noise: 0.498 when the units came aggregated by
kind (the board), 0.0 when listed one by one (the replayed reference), for the same games."""

from __future__ import annotations

import itertools

import pytest

from leaderboard.ratings import DealPair, Outcome, paired_intervals
from leaderboard.ratings import Game as RatedGame

W, D, L = Outcome.FIRST_WINS, Outcome.DRAW, Outcome.SECOND_WINS


def _deal(first: str, second: str, one: Outcome, two: Outcome) -> DealPair:
    return DealPair(RatedGame(first, second, one), RatedGame(second, first, two))


# The deals of the failing board: a-b 1-1, a-d 0-2 twice, c-d 0-2 twice, 1-1, two draws.
KINDS = [
    (_deal("a", "b", W, W), 1),
    (_deal("a", "d", L, W), 2),
    (_deal("c", "d", L, W), 2),
    (_deal("c", "d", W, W), 1),
    (_deal("c", "d", D, D), 1),
]


def _los_of_tie(kinds: list[tuple[DealPair, int]], *, aggregated: bool) -> tuple[float, float]:
    if aggregated:
        result = paired_intervals([p for p, _ in kinds], weights=[n for _, n in kinds])
    else:
        result = paired_intervals([p for p, n in kinds for _ in range(n)])
    # a and b are tied (to a millionth of an Elo), so the board may rank either first.
    assert result.fit.rating("a") == pytest.approx(result.fit.rating("b"), abs=1e-6)
    return result.los("a", "b"), result.los("b", "a")


@pytest.mark.parametrize("aggregated", [True, False])
def test_los_of_bots_without_spread_between_them_is_a_coin_toss(aggregated: bool) -> None:
    for order in itertools.permutations(KINDS):
        assert _los_of_tie(list(order), aggregated=aggregated) == (0.5, 0.5)


def test_los_with_spread_is_unchanged() -> None:
    result = paired_intervals([p for p, _ in KINDS], weights=[n for _, n in KINDS])
    los = result.los("d", "c")
    assert 0.5 < los < 1.0
    assert result.los("c", "d") == pytest.approx(1.0 - los, abs=1e-12)
