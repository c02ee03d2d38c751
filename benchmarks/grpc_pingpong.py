#!/usr/bin/env python3
"""Referee cost per decision vs. a bare bidirectional gRPC ping-pong, on the same transport.

    python benchmarks/grpc_pingpong.py [--rounds 3000] [--games 40] [--transport uds tcp]
                                       [--bots minimal greedy] [--repeat 3]

Every server runs as its own process, as bots do:
- *bare*: raw-bytes echo servers on long-lived bidi streams (the floor of any protocol),
  asked in turn as the referee asks its two bots, from both of gRPC's Python client APIs:
  the threaded one and asyncio (which the referee uses). The floor is the faster of the two.
- *referee*: the referee's series loop (``referee.series`` through ``sdk.tools.local.run_series``)
  plays real games over ``BotClient`` against two served bots: the engine's view, serde,
  the deadline, the reply checked against the legal list, the move played and recorded.
  Cost per decision is the games' wall time divided by the number of decisions.

The target (issue "Referee": the referee's cost per decision within 1.25x of the floor) is
read against the *minimal* bot (``benchmarks/minimal_bot.py``: raw protobuf, no SDK, the
first legal action), whose own work is ~5 µs a message more than the echo server's, so the
figure is the referee's (its gRPC costs more than the echo server's: see docs/benchmarks.md).
The *lean bound* plays the same games against the same bot with only the work every
decision needs, on streams awaited directly (:func:`lean_referee_decision`): the floor for a
referee written in Python with this engine and serde. With SDK bots (``--bots greedy``) the
figure adds the Python SDK's own cost per decision
(decoding the view into engine types, the bot's ``act``), printed for information.
Each measurement is repeated and the best kept: the machine is shared, and noise only adds.
"""

from __future__ import annotations

import argparse
import asyncio
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


import referee as referee_package  # noqa: E402

# gRPC reads its settings when first imported: referee/__init__.py has set its defaults.
GRPC_SETTINGS = referee_package.grpc_settings()

import grpc  # noqa: E402

from referee.client import (  # noqa: E402
    CHANNEL_OPTIONS,
    BotClient,
    RemotePlayer,
    _thread_loop,
    default_handshake,
)
from referee.protocol.messages import Clock, Decision, DecisionRequest  # noqa: E402
from referee.protocol.wire import PLAY_PATH, decode_bot_message, encode_referee_message  # noqa: E402
from referee.rules import Action, Game  # noqa: E402
from sdk.server import GRPC_OPTIONS  # noqa: E402
from sdk.tools.local import run_series  # noqa: E402

ECHO_PATH = "/bench.Echo/Play"
_END = b""
BOTS = {
    "minimal": "benchmarks/minimal_bot.py",
    "random": "sdk.examples.random.bot:RandomBot",
    "greedy": "sdk.examples.greedy.bot:GreedyBot",
}
TARGET = 1.25
SDK_TARGET = 1.25


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


Mark = tuple[float, float, float]


def _mark(pids: list[int]) -> Mark:
    """Wall clock, this process's CPU and the servers' CPU, now."""
    return time.perf_counter(), time.process_time(), _cpu_seconds(pids)


def _cost_since(mark: Mark, count: int, pids: list[int]) -> Cost:
    """Wall and CPU seconds per item of ``count`` since ``mark``."""
    wall, cpu, others = mark
    return (
        (time.perf_counter() - wall) / count,
        (time.process_time() - cpu) / count,
        (_cpu_seconds(pids) - others) / count,
    )


async def _close_streams(calls: list[Any], channels: list[grpc.aio.Channel]) -> None:
    for call in calls:
        call.cancel()
    for channel in channels:
        await channel.close(None)


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
    mark = _mark(pids)
    for i in range(rounds):
        outboxes[i % n].put(payload)
        next(calls[i % n])
    cost = _cost_since(mark, rounds, pids)
    for outbox, call, channel in zip(outboxes, calls, channels, strict=True):
        outbox.put(_END)
        call.cancel()
        channel.close()
    return cost


def bare_round_trip_aio(addresses: list[str], rounds: int, payload: bytes, pids: list[int]) -> Cost:
    """:func:`bare_round_trip` with gRPC's asyncio client, the API the referee uses."""

    async def run() -> Cost:
        channels = [grpc.aio.insecure_channel(a, options=CHANNEL_OPTIONS) for a in addresses]
        calls = []
        for channel in channels:
            await channel.channel_ready()
            calls.append(channel.stream_stream(ECHO_PATH, None, None)(None))
        n = len(addresses)
        for i in range(200):  # warm-up
            await calls[i % n].write(payload)
            await calls[i % n].read()
        mark = _mark(pids)
        for i in range(rounds):
            call = calls[i % n]
            await call.write(payload)
            await call.read()
        cost = _cost_since(mark, rounds, pids)
        await _close_streams(calls, channels)
        return cost

    # The referee's own per-thread loop: a closed loop would stay bound to gRPC's poller.
    return _thread_loop().run_until_complete(run())


def lean_referee_decision(addresses: list[str], games: int, seed: str, pids: list[int]) -> Cost:
    """A lower bound for any referee in Python: only the work every decision needs (the
    engine's view, encoding it, decoding the reply, the legality check, the move), on one
    asyncio stream per bot awaited directly, so the event loop turns exactly as often as in
    the bare asyncio echo (4 times per round trip). No deadlines kept across a timeout, no
    records, no series rules: not a usable referee, a floor for one."""

    async def run() -> Cost:
        channels = [grpc.aio.insecure_channel(a, options=CHANNEL_OPTIONS) for a in addresses]
        calls = []
        for channel in channels:
            await channel.channel_ready()
            call = channel.stream_stream(PLAY_PATH, None, None)(None)
            await call.write(encode_referee_message(default_handshake("lean", games, 1000, 10000)))
            await call.read()
            calls.append(call)
        clock = Clock(move_ms=1000, bank_ms=10000)

        async def play(count: int, prefix: str) -> int:
            decisions = 0
            for number in range(count):
                game = Game.new(f"{prefix}-{number}", dealer=number % 2)
                while not game.over:
                    seat = game.to_move
                    assert seat is not None
                    view = game.view(seat)
                    request = DecisionRequest(decisions + 1, number + 1, view, clock)
                    call = calls[seat]
                    async with asyncio.timeout(11.0):
                        await call.write(encode_referee_message(request))
                        data = await call.read()
                    assert isinstance(data, bytes)
                    reply = decode_bot_message(data)
                    assert isinstance(reply, Decision)
                    assert isinstance(reply.action, str | Action)
                    action = Action.parse(reply.action)
                    assert action in view.legal_actions
                    game.play(action)
                    decisions += 1
            return decisions

        await play(2, "warm-up")
        mark = _mark(pids)
        decisions = await play(games, seed)
        cost = _cost_since(mark, decisions, pids)
        await _close_streams(calls, channels)
        return cost

    return _thread_loop().run_until_complete(run())


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
    mark = _mark(pids)
    run_series([RemotePlayer(c) for c in clients], games, seed=seed, on_move=count)
    cost = _cost_since(mark, decisions, pids)
    for c in clients:
        c.close()  # not shutdown(): that would make the bots exit
    return cost, decisions


def _serve_bot(bot: str, address: str) -> subprocess.Popen[bytes]:
    target = BOTS[bot]
    if target.endswith(".py"):
        return _spawn([str(ROOT / target), address])
    return _spawn(["-m", "sdk", "serve", target, address])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--transport", nargs="+", default=["uds", "tcp"], choices=["uds", "tcp"])
    parser.add_argument(
        "--bots",
        nargs="+",
        default=["minimal", "greedy"],
        choices=sorted(BOTS),
        help="bots to measure the referee against (each plays itself); the target reads the first",
    )
    parser.add_argument("--serve-echo", metavar="ADDRESS", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve_echo:
        serve_echo(opts.serve_echo)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kryt-bench-"))
    procs: list[subprocess.Popen[bytes]] = []
    print(f"best of {opts.repeat}; µs per round trip (bare) or per decision (referee)")
    print(f"gRPC: {GRPC_SETTINGS}")
    header = f"{'transport':<10}{'bare threaded':>14}{'bare asyncio':>13}{'floor':>7}"
    header += f"{'lean bound':>12}{'ratio':>7}"
    header += "".join(f"{'referee+' + bot:>17}{'ratio':>7}" for bot in opts.bots)
    print(header)
    cpu_lines = []
    sdk_lines: list[str] = []
    try:
        for n, transport in enumerate(opts.transport):
            names = ["echo1", "echo2"] + [f"{bot}{i}" for bot in opts.bots for i in (1, 2)]
            if transport == "uds":
                addrs = [f"unix://{tmp / f'{name}.sock'}" for name in names]
            else:
                base = 40000 + (os.getpid() % 500) * 20 + 10 * n
                addrs = [f"127.0.0.1:{base + i}" for i in range(len(names))]
            here = str(Path(__file__).resolve())
            echoes = [_spawn([here, "--serve-echo", a]) for a in addrs[:2]]
            bots = [_serve_bot(name[:-1], a) for name, a in zip(names[2:], addrs[2:], strict=True)]
            procs += echoes + bots
            echo_pids = [p.pid for p in echoes]
            threaded: list[Cost] = []
            aio: list[Cost] = []
            lean: list[Cost] = []
            referee: dict[str, list[Cost]] = {bot: [] for bot in opts.bots}
            decisions: dict[str, int] = {}
            for r in range(opts.repeat):
                threaded.append(bare_round_trip(addrs[:2], opts.rounds, b"x" * 32, echo_pids))
                aio.append(bare_round_trip_aio(addrs[:2], opts.rounds, b"x" * 32, echo_pids))
                pids = [p.pid for p in bots[:2]]
                lean.append(lean_referee_decision(addrs[2:4], opts.games, f"bench-{r}", pids))
                for k, bot in enumerate(opts.bots):
                    pair = bots[2 * k : 2 * k + 2]
                    cost, decisions[bot] = protocol_decision(
                        addrs[2 + 2 * k : 4 + 2 * k],
                        opts.games,
                        f"bench-{r}",
                        [p.pid for p in pair],
                    )
                    referee[bot].append(cost)
            floor = min(min(threaded)[0], min(aio)[0])
            line = f"{transport:<10}{min(threaded)[0] * 1e6:>14.0f}{min(aio)[0] * 1e6:>13.0f}"
            line += f"{floor * 1e6:>7.0f}{min(lean)[0] * 1e6:>12.0f}{min(lean)[0] / floor:>7.2f}"
            for bot in opts.bots:
                best = min(referee[bot])
                line += f"{best[0] * 1e6:>17.0f}{best[0] / floor:>7.2f}"
            ratio = min(referee[opts.bots[0]])[0] / floor
            verdict = "OK" if ratio <= TARGET else "OVER TARGET"
            print(f"{line}  (target <= {TARGET} with {opts.bots[0]}: {verdict})", flush=True)
            cpu = f"{transport:<10}bare threaded: client {min(threaded)[1] * 1e6:.0f}, servers "
            cpu += f"{min(threaded)[2] * 1e6:.0f}; asyncio: client {min(aio)[1] * 1e6:.0f}"
            cpu += f"; lean bound: referee {min(lean)[1] * 1e6:.0f}"
            for bot in opts.bots:
                best = min(referee[bot])
                cpu += f"; {bot}: referee {best[1] * 1e6:.0f}, bots {best[2] * 1e6:.0f}"
                cpu += f" ({decisions[bot]} decisions)"
            cpu_lines.append(cpu)
            if "minimal" in opts.bots:
                # Issue 15: an SDK bot's own CPU per decision against the raw-protobuf bot's.
                raw = min(cost[2] for cost in referee["minimal"])
                for bot in opts.bots:
                    if bot != "minimal" and raw > 0:
                        sdk_cpu = min(cost[2] for cost in referee[bot])
                        verdict = "OK" if sdk_cpu / raw <= SDK_TARGET else "OVER TARGET"
                        sdk_lines.append(
                            f"{transport:<10}{bot}: {sdk_cpu * 1e6:.0f} µs of bot CPU per decision"
                            f" against minimal's {raw * 1e6:.0f}: {sdk_cpu / raw:.2f}x"
                            f" (target <= {SDK_TARGET}: {verdict})"
                        )
            for p in procs:
                p.terminate()
                p.wait(5)
            procs.clear()
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"lean bound: the least any Python referee does per decision, against {opts.bots[0]}"
        " (see lean_referee_decision)"
    )
    print("CPU µs per round trip or decision (all threads; /proc tick resolution):")
    print("\n".join(cpu_lines))
    if sdk_lines:
        print("SDK bot CPU per decision against the raw-protobuf minimal bot (best of the runs):")
        print("\n".join(sdk_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
