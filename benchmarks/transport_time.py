#!/usr/bin/env python3
"""The time charged to a bot that answers at once: the distribution of the referee's
measured time per move, as stored in the game records.

    python benchmarks/transport_time.py [--games 100] [--transport uds tcp] [--bot minimal]

Two copies of a bot are served in their own processes (by default ``benchmarks/minimal_bot.py``,
raw protobuf, which answers each request with its first legal action as soon as it has
parsed it) and play a series through the referee's own loop over gRPC. Every move's
``seconds`` (what the time control charged) is collected from the records and printed as
percentiles. Issue 15's target: at most 1 ms at the 99th percentile. Everything the bot
does is inside that figure (parsing the request, choosing, replying), so with the minimal
bot it is the transport and the two processes' scheduling.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.client import BotClient, RemotePlayer  # noqa: E402
from sdk.tools.local import run_series  # noqa: E402

TARGET_P99_MS = 1.0
BOTS = {
    "minimal": [str(ROOT / "benchmarks" / "minimal_bot.py")],
    "random": ["-m", "sdk", "serve", "sdk.examples.random.bot:RandomBot"],
}


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` fall (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def charged_seconds(addresses: list[str], games: int) -> list[float]:
    """Every move's charged seconds over ``games`` games between the two served bots."""
    clients = [BotClient(address) for address in addresses]
    try:
        for client in clients:
            client.wait_healthy(30)
        run_series([RemotePlayer(c) for c in clients], 2, seed="warm-up")
        result = run_series([RemotePlayer(c) for c in clients], games, seed="transport")
    finally:
        for client in clients:
            client.close()
    return [move.seconds for record in result.games.values() for move in record.moves]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--transport", nargs="+", default=["uds", "tcp"], choices=["uds", "tcp"])
    parser.add_argument("--bot", default="minimal", choices=sorted(BOTS))
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kryt-transport-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print(f"ms charged per move, {opts.bot} bot, {opts.games} games, load {os.getloadavg()[0]:.1f}")
    print(f"{'transport':<10}{'moves':>7}{'p50':>8}{'p90':>8}{'p99':>8}{'p99.9':>8}{'max':>8}")
    try:
        for n, transport in enumerate(opts.transport):
            if transport == "uds":
                addresses = [f"unix://{tmp / f'bot{i}.sock'}" for i in range(2)]
            else:
                base = 41000 + (os.getpid() % 500) * 4 + 2 * n
                addresses = [f"127.0.0.1:{base + i}" for i in range(2)]
            bots = [
                subprocess.Popen(
                    [sys.executable, *BOTS[opts.bot], address],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for address in addresses
            ]
            try:
                started = time.monotonic()
                seconds = charged_seconds(addresses, opts.games)
            finally:
                for bot in bots:
                    bot.kill()
                    bot.wait(10)
            row = [percentile(seconds, q) * 1e3 for q in (0.5, 0.9, 0.99, 0.999)]
            row.append(max(seconds) * 1e3)
            verdict = "OK" if row[2] <= TARGET_P99_MS else "OVER TARGET"
            print(
                f"{transport:<10}{len(seconds):>7}"
                + "".join(f"{value:>8.2f}" for value in row)
                + f"  (p99 target <= {TARGET_P99_MS} ms: {verdict};"
                f" {time.monotonic() - started:.0f} s)"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
