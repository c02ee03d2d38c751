#!/usr/bin/env python3
"""Random-game throughput of the classic table (2, 3 and 4 players) on one core.

Each game is played with ``legal_actions()`` + ``play`` choosing uniformly at random, the way a
simple bot or the referee drives the engine; prints games/s and actions/s per table size.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.rules import Game


def run(players: int, games: int, seed: int) -> tuple[float, int]:
    """Seconds and actions for ``games`` random games at a table of ``players``."""
    rng = random.Random(seed)
    actions = 0
    start = time.perf_counter()
    for i in range(games):
        game = Game.new(seed=seed + i, dealer=i % players, players=players, ruleset="classic")
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
        actions += len(game.history)
    return time.perf_counter() - start, actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for players in (2, 3, 4):
        seconds, actions = run(players, args.games, args.seed)
        print(
            f"classic, {players} players {args.games:6d} games  {args.games / seconds:8.0f} games/s"
            f"  {actions / seconds:9.0f} actions/s  {actions / args.games:6.1f} actions/game"
        )


if __name__ == "__main__":
    main()
