#!/usr/bin/env python3
"""Time a BayesElo fit of 1,000 bots and 10^6 games from cached per-pair counts (target ~1 s).

    .venv/bin/python benchmarks/ratings_fit.py [--bots 1000] [--games 1000000] [--repeat 3]

Games are simulated from known strengths (random opponents, random first mover) with the
BayesElo outcome model and aggregated to per-pair counts once, as the database cache holds
them; only the fit (optimisation, covariance, LOS table) is timed. The best of ``--repeat``
runs is reported because the machine may be shared.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leaderboard.ratings.bayeselo import fit_bayeselo
from leaderboard.ratings.games import PairCounts


def simulate_counts(bots: int, games: int, seed: int) -> tuple[PairCounts, np.ndarray]:
    """Per-pair counts of ``games`` simulated games; also returns the true internal Elos."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 200.0, bots)
    first = rng.integers(0, bots, games)
    second = (first + rng.integers(1, bots, games)) % bots  # never the same bot
    diff = strength[first] - strength[second] + 30.0  # 30 Elo first-mover advantage
    drawelo = 100.0
    p_win = 1.0 / (1.0 + 10.0 ** (-(diff - drawelo) / 400.0))
    p_loss = 1.0 / (1.0 + 10.0 ** ((diff + drawelo) / 400.0))
    roll = rng.random(games)
    outcome = np.where(roll < p_win, 0, np.where(roll < p_win + p_loss, 2, 1))
    key = (first * bots + second) * 3 + outcome
    table = np.bincount(key, minlength=bots * bots * 3).reshape(bots * bots, 3)
    pairs = np.flatnonzero(table.sum(axis=1))
    names = tuple(f"bot{k:04d}" for k in range(bots))
    counts = PairCounts(
        names=names,
        first=(pairs // bots).astype(np.int64),
        second=(pairs % bots).astype(np.int64),
        wins=table[pairs, 0].astype(np.int64),
        draws=table[pairs, 1].astype(np.int64),
        losses=table[pairs, 2].astype(np.int64),
    )
    return counts, strength


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    counts, strength = simulate_counts(args.bots, args.games, args.seed)
    times = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        fit = fit_bayeselo(counts)
        fit.table()  # ranks and LOS over the next bot, as the leaderboard shows them
        times.append(time.perf_counter() - start)
    error = np.abs(fit.internal - (strength - strength.mean())).max()
    print(
        f"BayesElo fit: {args.bots} bots, {counts.total_games} games, "
        f"{counts.first.size} ordered pairs: best {min(times):.2f} s, "
        f"median {sorted(times)[len(times) // 2]:.2f} s of {len(times)} "
        f"({fit.iterations} Newton iterations; advantage {fit.advantage:.1f}, "
        f"drawelo {fit.drawelo:.1f}; max |error| vs truth {error:.1f} Elo)"
    )


if __name__ == "__main__":
    main()
