#!/usr/bin/env python3
"""Memory of a long series: does the runner keep every game in memory until the series ends?

Plays one series of ``--games`` games (default 10,000) between two in-process trivial bots
(first legal action) with a recorder that drops each record, as the tournament runner
hands each one to the database. Python's heap is measured with ``tracemalloc`` after every
``--every`` games, for ``keep_records=True`` (every GameRecord with its moves kept in the
SeriesResult) and ``keep_records=False`` (the tournament runner's mode: winners only).

Prints the traced heap at each checkpoint and the growth per game; the runner's mode must
stay flat (a few tens of bytes per game for the winner of each game), the keeping mode grows
by the size of a record (kilobytes per game).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.protocol.messages import TimeControl
from referee.record import GameRecord
from referee.rules import View
from referee.series import SeriesConfig, run_series
from sdk.bot import Bot
from sdk.tools.local import LocalPlayer, PlayerSlot


class FirstLegal(Bot):
    """The cheapest bot that plays legal games: the first legal action."""

    name = "first"
    version = "1"

    def act(self, view: View) -> str:
        return str(view.legal_actions[0])


def measure(games: int, every: int, keep: bool) -> list[tuple[int, int]]:
    """``(games played, traced heap bytes)`` at each checkpoint of one series."""
    points: list[tuple[int, int]] = []

    def recorder(number: int, _attempt: int, record: GameRecord) -> None:
        # The runner commits the record and forgets it; measure as the series goes.
        if number % every == 0:
            gc.collect()
            points.append((number, tracemalloc.get_traced_memory()[0]))

    slots = (
        PlayerSlot(lambda: LocalPlayer(FirstLegal()), "a", seat=0),
        PlayerSlot(lambda: LocalPlayer(FirstLegal()), "b", seat=1),
    )
    config = SeriesConfig(
        games=games, seed=1, time_control=TimeControl(move_ms=60_000, bank_ms=60_000)
    )
    gc.collect()
    tracemalloc.start()
    try:
        result = run_series(config, slots, recorder=recorder, keep_records=keep)
        assert len(result.winners) == games
    finally:
        tracemalloc.stop()
    return points


def report(label: str, points: list[tuple[int, int]]) -> float:
    """Print the checkpoints; return the growth in bytes per game after the first one."""
    print(f"{label}:")
    for number, size in points:
        print(f"  after {number:>6} games: {size / 1024:9.1f} KiB traced")
    (n0, s0), (n1, s1) = points[0], points[-1]
    growth = (s1 - s0) / max(1, n1 - n0)
    print(f"  growth: {growth:,.0f} bytes per game")
    return growth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument(
        "--skip-keeping", action="store_true", help="measure only the runner's mode"
    )
    parser.add_argument(
        "--max-growth",
        type=float,
        default=256.0,
        help="fail (exit 1) when the runner's mode grows by more bytes per game than this",
    )
    args = parser.parse_args()
    if args.games < 2 * args.every:
        parser.error("--games must be at least twice --every")
    started = time.perf_counter()
    flat = report(
        "keep_records=False (tournament runner)", measure(args.games, args.every, keep=False)
    )
    if not args.skip_keeping:
        report("keep_records=True (every record kept)", measure(args.games, args.every, True))
    print(f"total {time.perf_counter() - started:.1f} s")
    if flat > args.max_growth:
        print(f"FAIL: {flat:,.0f} bytes per game > {args.max_growth:,.0f}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
