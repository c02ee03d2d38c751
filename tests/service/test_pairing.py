"""The ladder's pairing choice: the fit, and a simulation with known strengths in which the
uncertainty-driven choice finds the true order with fewer games than uniform pairing."""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Callable

import pytest

from arena.service.pairing import PairResult, choose_pair, fit

STRENGTHS = (0.0, 0.35, 0.7, 1.05, 1.4, 1.75, 2.1, 2.45)
"""True ratings (logistic units) of the simulated bots 0..7: adjacent bots differ by 0.35
(59% expected score), so telling neighbours apart needs many games."""
GAMES_PER_SERIES = 4
HORIZON = 300
"""Series per simulated ladder run."""
SEEDS = 12

Chooser = Callable[[list[int], list[PairResult], int, random.Random], tuple[int, int]]


def _play(rng: random.Random, a: int, b: int) -> float:
    """Points ``a`` scores in one series against ``b`` (no draws in the simulation)."""
    p = 1.0 / (1.0 + pow(2.718281828459045, -(STRENGTHS[a] - STRENGTHS[b])))
    return float(sum(rng.random() < p for _ in range(GAMES_PER_SERIES)))


def _adaptive(
    players: list[int], results: list[PairResult], n: int, rng: random.Random
) -> tuple[int, int]:
    pair = choose_pair(players, results, scheduled=n)
    assert pair is not None
    return pair


def _uniform(
    players: list[int], results: list[PairResult], n: int, rng: random.Random
) -> tuple[int, int]:
    pairs = list(itertools.combinations(players, 2))
    if n % len(pairs) == 0:
        rng.shuffle(pairs)
        _uniform.order = pairs  # type: ignore[attr-defined]
    order: list[tuple[int, int]] = _uniform.order  # type: ignore[attr-defined]
    return order[n % len(order)]


def games_to_true_order(choose: Chooser, seed: int) -> int:
    """Games played until the fitted order is the true order and stays so to the horizon."""
    rng = random.Random(seed)
    players = list(range(len(STRENGTHS)))
    rng.shuffle(players)  # no help from the order of the list
    truth = sorted(players, key=lambda p: -STRENGTHS[p])
    results: list[PairResult] = []
    last_wrong = 0
    for n in range(HORIZON):
        a, b = choose(players, results, n, rng)
        results.append(PairResult(a, b, GAMES_PER_SERIES, _play(rng, a, b)))
        if fit(players, results).order() != truth:
            last_wrong = n + 1
    return (last_wrong + 1) * GAMES_PER_SERIES


def test_the_fit_orders_players_by_their_results() -> None:
    results = [PairResult(1, 2, 10, 8.0), PairResult(2, 3, 10, 7.5), PairResult(1, 3, 4, 3.0)]
    current = fit([3, 2, 1], results)
    assert current.order() == [1, 2, 3]
    assert current.rating(1) > current.rating(2) > current.rating(3)
    # Neighbours with few games are less certain than the far pair.
    assert current.flip_probability(1, 2) > current.flip_probability(1, 3)


def test_new_bots_come_first_and_busy_pairs_are_skipped() -> None:
    results = [PairResult(1, 2, 40, 20.0)]
    assert 3 in choose_pair([1, 2, 3], results)  # type: ignore[operator]
    assert choose_pair([1, 2], results, busy=[(2, 1)]) is None
    pair = choose_pair([1, 2, 3], results, busy=[(1, 3)])
    assert pair is not None and set(pair) == {2, 3}


def test_every_pair_is_eventually_played() -> None:
    players = [1, 2, 3, 4, 5]
    results = [PairResult(1, 2, 4, 2.0)]  # one close pair the uncertainty rule loves
    seen = set()
    for n in range(60):
        pair = choose_pair(players, results, scheduled=n)
        assert pair is not None
        seen.add(frozenset(pair))
        results.append(PairResult(pair[0], pair[1], 4, 2.0))
    assert len(seen) == 10


@pytest.mark.slow
def test_uncertainty_pairing_needs_fewer_games_than_uniform_pairing() -> None:
    adaptive = [games_to_true_order(_adaptive, seed) for seed in range(SEEDS)]
    uniform = [games_to_true_order(_uniform, seed) for seed in range(SEEDS)]
    mean_a, mean_u = statistics.mean(adaptive), statistics.mean(uniform)
    print(
        f"\ngames until the true order of {len(STRENGTHS)} bots (mean of {SEEDS} runs): "
        f"uncertainty pairing {mean_a:.0f}, uniform pairing {mean_u:.0f}: "
        f"{mean_u - mean_a:.0f} fewer ({100 * (1 - mean_a / mean_u):.0f}%)"
    )
    assert mean_a < 0.8 * mean_u
