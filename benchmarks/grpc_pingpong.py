#!/usr/bin/env python3
"""Referee cost per decision vs. a bare bidirectional gRPC ping-pong, on the same transport.

    python benchmarks/grpc_pingpong.py [--rounds 3000] [--games 40] [--transport uds tcp]

Both servers run as separate processes, as bots do:
- *bare*: a raw-bytes echo on one long-lived bidi stream (the floor of any protocol);
- *protocol*: two example random bots served by the SDK; the SDK's series loop plays real
  games against both over ``BotClient`` (view building, serde both ways, the bot's own
  ``act``, reply checking against the legal list, playing the move). Cost per decision is
  the wall time of the games divided by the number of decisions.

The target (issue: referee) is protocol / bare <= 1.25.
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sdk.client import CHANNEL_OPTIONS, BotClient, RemotePlayer  # noqa: E402
from sdk.local import run_series  # noqa: E402
from sdk.server import GRPC_OPTIONS  # noqa: E402

ECHO_PATH = "/bench.Echo/Play"
_END = b""


def serve_echo(address: str) -> None:
    """The bare server: echo every message on the stream."""

    def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        yield from requests

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=GRPC_OPTIONS)
    handler = grpc.stream_stream_rpc_method_handler(play)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Echo", {"Play": handler}),)
    )
    server.add_insecure_port(address)
    server.start()
    server.wait_for_termination()


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def bare_round_trip(address: str, rounds: int, payload: bytes) -> float:
    """Seconds per round trip of ``payload`` on one reused bidi stream."""
    with grpc.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
        grpc.channel_ready_future(channel).result(timeout=15)
        outbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        # grpc-stubs do not type the response iterator's __next__/cancel: Any it is.
        call: Any = channel.stream_stream(ECHO_PATH, None, None)(iter(outbox.get, _END))
        for _ in range(200):  # warm-up
            outbox.put(payload)
            next(call)
        start = time.perf_counter()
        for _ in range(rounds):
            outbox.put(payload)
            next(call)
        elapsed = time.perf_counter() - start
        outbox.put(_END)
        call.cancel()
    return elapsed / rounds


def protocol_decision(addresses: list[str], games: int) -> tuple[float, int]:
    """Seconds per decision of real games between two served bots, and the decision count."""
    clients = [BotClient(a) for a in addresses]
    for c in clients:
        c.wait_healthy(15)
    players = [RemotePlayer(c) for c in clients]
    run_series(players, 3, seed="warm-up")  # warm-up stream and caches
    for c in clients:
        c.close()  # not shutdown(): that would make the bots exit
    clients = [BotClient(a) for a in addresses]
    players = [RemotePlayer(c) for c in clients]
    decisions = 0

    def count(game: int, seat: int, reply: object) -> None:
        nonlocal decisions
        decisions += 1

    start = time.perf_counter()
    run_series(players, games, seed="bench", on_move=count)
    elapsed = time.perf_counter() - start
    for c in clients:
        c.close()
    return elapsed / decisions, decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--transport", nargs="+", default=["uds", "tcp"], choices=["uds", "tcp"])
    parser.add_argument("--serve-echo", metavar="ADDRESS", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve_echo:
        serve_echo(opts.serve_echo)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kryt-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    header = f"{'transport':<10}{'bare µs/rt':>12}{'protocol µs/decision':>22}{'ratio':>8}"
    print(header + "  (target <= 1.25)")
    try:
        for n, transport in enumerate(opts.transport):
            if transport == "uds":
                addrs = [f"unix://{tmp / f'{name}.sock'}" for name in ("echo", "a", "b")]
            else:
                base = 47000 + 10 * n + os.getpid() % 1000 * 10
                addrs = [f"127.0.0.1:{base + i}" for i in range(3)]
            procs.append(_spawn([str(Path(__file__).resolve()), "--serve-echo", addrs[0]]))
            bot = "sdk.examples.random.bot:RandomBot"
            procs += [_spawn(["-m", "sdk", "serve", bot, a]) for a in addrs[1:]]
            bare = bare_round_trip(addrs[0], opts.rounds, b"x" * 32)
            per_decision, decisions = protocol_decision(addrs[1:], opts.games)
            ratio = per_decision / bare
            print(
                f"{transport:<10}{bare * 1e6:>12.0f}{per_decision * 1e6:>22.0f}{ratio:>8.2f}"
                f"  ({decisions} decisions, {'OK' if ratio <= 1.25 else 'OVER TARGET'})",
                flush=True,
            )
            for p in procs:
                p.terminate()
                p.wait(5)
            procs.clear()
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
