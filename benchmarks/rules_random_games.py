#!/usr/bin/env python3
"""Random-game throughput of the rules core on one core (target: >= 1,000 games/s).

Prints games/s and actions/s for the fast path (``Game.play_random``: uniform over the legal
actions without listing them) and for the convenient path (``legal_actions()`` + ``play``), both
measured in the same run so the ratio is meaningful on a noisy machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.rules import Game


def fast(games: int, seed: int) -> tuple[float, int]:
    rng = random.Random(seed)
    actions = 0
    start = time.perf_counter()
    for i in range(games):
        game = Game.new(seed=seed + i, dealer=i % 2)
        while not game.over:
            game.play_random(rng)
        actions += len(game.history)
    return time.perf_counter() - start, actions


def convenient(games: int, seed: int) -> tuple[float, int]:
    rng = random.Random(seed)
    actions = 0
    start = time.perf_counter()
    for i in range(games):
        game = Game.new(seed=seed + i, dealer=i % 2)
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
        actions += len(game.history)
    return time.perf_counter() - start, actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for name, runner, n in (
        ("play_random (fast path)", fast, args.games),
        ("legal_actions + play", convenient, max(1, args.games // 5)),
    ):
        seconds, actions = runner(n, args.seed)
        print(
            f"{name:26s} {n:6d} games  {n / seconds:8.0f} games/s  "
            f"{actions / seconds:9.0f} actions/s  {actions / n:6.1f} actions/game"
        )


if __name__ == "__main__":
    main()
