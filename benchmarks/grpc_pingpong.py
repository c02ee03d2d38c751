#!/usr/bin/env python3
"""Referee cost per decision vs. a bare bidirectional gRPC ping-pong, on the same transport.

    python benchmarks/grpc_pingpong.py [--rounds 3000] [--games 40] [--transport uds tcp]
                                       [--bots greedy greedy] [--repeat 3]

Every server runs as its own process, as bots do:
- *bare*: raw-bytes echo servers on long-lived bidi streams (the floor of any protocol).
  Two figures: one echo server, and two echo servers asked in turn, which is the referee's
  topology (it alternates between two bot processes; waking the idle one costs a little).
- *protocol*: two example bots served by the SDK; the SDK's series loop plays real games
  against both through ``BotClient`` (engine view, serde both ways, the bot's ``act``, the
  reply checked against the legal list, the move played). Cost per decision is the games'
  wall time divided by the number of decisions.

The ratio (target <= 1.25, issue "Referee") is taken against the two-server bare figure.
Each measurement is repeated and the best kept: the machine is shared, and noise only adds.
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
BOTS = {
    "random": "sdk.examples.random.bot:RandomBot",
    "greedy": "sdk.examples.greedy.bot:GreedyBot",
}


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


def _cpu_seconds(pids: list[int]) -> float:
    """User+system CPU of processes (Linux /proc; 0 elsewhere), to split cost by side."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / os.sysconf("SC_CLK_TCK")


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


Cost = tuple[float, float, float]
"""Per round trip: wall seconds, this process's CPU seconds, the servers' CPU seconds."""


def bare_round_trip(addresses: list[str], rounds: int, payload: bytes, pids: list[int]) -> Cost:
    """Cost of one round trip of ``payload``, asking the echo servers in turn."""
    channels = [grpc.insecure_channel(a, options=CHANNEL_OPTIONS) for a in addresses]
    outboxes: list[queue.SimpleQueue[bytes]] = [queue.SimpleQueue() for _ in addresses]
    # grpc-stubs do not type the response iterator's __next__/cancel: Any it is.
    calls: list[Any] = []
    for channel, outbox in zip(channels, outboxes, strict=True):
        grpc.channel_ready_future(channel).result(timeout=15)
        calls.append(channel.stream_stream(ECHO_PATH, None, None)(iter(outbox.get, _END)))
    n = len(addresses)
    for i in range(200):  # warm-up
        outboxes[i % n].put(payload)
        next(calls[i % n])
    start, cpu, servers = time.perf_counter(), time.process_time(), _cpu_seconds(pids)
    for i in range(rounds):
        outboxes[i % n].put(payload)
        next(calls[i % n])
    elapsed = time.perf_counter() - start
    cpu, servers = time.process_time() - cpu, _cpu_seconds(pids) - servers
    for outbox, call, channel in zip(outboxes, calls, channels, strict=True):
        outbox.put(_END)
        call.cancel()
        channel.close()
    return elapsed / rounds, cpu / rounds, servers / rounds


def protocol_decision(
    addresses: list[str], games: int, seed: str, pids: list[int]
) -> tuple[Cost, int]:
    """Cost per decision of real games between two served bots, and the decision count."""
    clients = [BotClient(a) for a in addresses]
    for c in clients:
        c.wait_healthy(15)
    decisions = 0

    def count(game: int, seat: int, reply: object) -> None:
        nonlocal decisions
        decisions += 1

    run_series([RemotePlayer(c) for c in clients], 2, seed="warm-up")
    start, cpu, bots = time.perf_counter(), time.process_time(), _cpu_seconds(pids)
    run_series([RemotePlayer(c) for c in clients], games, seed=seed, on_move=count)
    elapsed = time.perf_counter() - start
    cpu, bots = time.process_time() - cpu, _cpu_seconds(pids) - bots
    for c in clients:
        c.close()  # not shutdown(): that would make the bots exit
    return (elapsed / decisions, cpu / decisions, bots / decisions), decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--transport", nargs="+", default=["uds", "tcp"], choices=["uds", "tcp"])
    parser.add_argument("--bots", nargs=2, default=["greedy", "greedy"], choices=sorted(BOTS))
    parser.add_argument("--serve-echo", metavar="ADDRESS", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve_echo:
        serve_echo(opts.serve_echo)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kryt-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    print(f"bots: {' vs '.join(opts.bots)}; best of {opts.repeat}; times in µs per round trip")
    print(
        f"{'transport':<10}{'bare, 1 server':>15}{'bare, 2 servers':>16}"
        f"{'protocol/decision':>19}{'ratio':>7}  (target <= 1.25)"
    )
    cpu_lines = []
    try:
        for n, transport in enumerate(opts.transport):
            names = ("echo1", "echo2", "bot1", "bot2")
            if transport == "uds":
                addrs = [f"unix://{tmp / f'{name}.sock'}" for name in names]
            else:
                base = 40000 + (os.getpid() % 500) * 20 + 5 * n
                addrs = [f"127.0.0.1:{base + i}" for i in range(len(names))]
            here = str(Path(__file__).resolve())
            procs += [_spawn([here, "--serve-echo", a]) for a in addrs[:2]]
            procs += [
                _spawn(["-m", "sdk", "serve", BOTS[bot], a])
                for bot, a in zip(opts.bots, addrs[2:], strict=True)
            ]
            echo_pids, bot_pids = [procs[-4].pid, procs[-3].pid], [procs[-2].pid, procs[-1].pid]
            one, two, proto = [], [], []
            decisions = 0
            for r in range(opts.repeat):
                one.append(bare_round_trip(addrs[:1], opts.rounds, b"x" * 32, echo_pids[:1]))
                two.append(bare_round_trip(addrs[:2], opts.rounds, b"x" * 32, echo_pids))
                cost, decisions = protocol_decision(addrs[2:], opts.games, f"bench-{r}", bot_pids)
                proto.append(cost)
            best_two, best_proto = min(two), min(proto)
            ratio = best_proto[0] / best_two[0]
            print(
                f"{transport:<10}{min(one)[0] * 1e6:>15.0f}{best_two[0] * 1e6:>16.0f}"
                f"{best_proto[0] * 1e6:>19.0f}{ratio:>7.2f}"
                f"  ({decisions} decisions per run, {'OK' if ratio <= 1.25 else 'OVER TARGET'})",
                flush=True,
            )
            cpu_lines.append(
                f"{transport:<10}bare: referee {best_two[1] * 1e6:.0f}, servers "
                f"{best_two[2] * 1e6:.0f}; protocol: referee {best_proto[1] * 1e6:.0f}, "
                f"bots {best_proto[2] * 1e6:.0f}"
            )
            for p in procs:
                p.terminate()
                p.wait(5)
            procs.clear()
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("CPU µs per round trip (all threads; /proc tick resolution):")
    print("\n".join(cpu_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
