"""Time a BayesElo fit of 1,000 bots and 10^6 games from cached per-pair counts.

    .venv/bin/python benchmarks/ratings_fit.py [--bots 1000] [--games 1000000] [--seed 1]

Games are simulated from known strengths (random opponents, random first mover) with the
BayesElo outcome model, aggregated to per-pair counts once (as the database cache holds them),
and only the fit itself is timed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

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
    args = parser.parse_args()
    counts, strength = simulate_counts(args.bots, args.games, args.seed)
    start = time.perf_counter()
    fit = fit_bayeselo(counts)
    elapsed = time.perf_counter() - start
    error = np.abs(fit.internal - (strength - strength.mean())).max()
    print(
        f"BayesElo fit: {args.bots} bots, {counts.total_games} games, "
        f"{counts.first.size} ordered pairs: {elapsed:.2f} s "
        f"({fit.iterations} Newton iterations; advantage {fit.advantage:.1f}, "
        f"drawelo {fit.drawelo:.1f}; max |error| vs truth {error:.1f} Elo)"
    )


if __name__ == "__main__":
    main()
