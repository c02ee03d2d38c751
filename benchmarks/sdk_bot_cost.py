#!/usr/bin/env python3
"""A bot's own CPU per decision: the Python SDK's bots against the raw-protobuf minimal bot.

    python benchmarks/sdk_bot_cost.py [--requests 4000] [--repeat 5] [--bots random greedy]

Every bot is served in its own process, as in a tournament, and receives exactly the same
stream: a handshake, then ``--requests`` decision requests whose views come from real random
games (encoded once by the referee's encoder, so the referee costs nothing during the
measurement). Each reply is awaited before the next request is sent. The bot's CPU time is
read from ``/proc`` before and after; the rounds of the bots alternate, and the best round of
each is kept (noise only adds). Issue 15's target: an SDK bot's CPU per decision within
1.25x of the minimal bot's (``benchmarks/minimal_bot.py``, raw protobuf, on gRPC's threaded
server; it is also printed on the asyncio server, as the SDK serves).

It then times the same answers in this process, without gRPC: warm (request after request)
and with the CPU caches flushed before each request (an 8 MiB buffer touched), which is
closer to what a bot's Python work costs between the transport's own work.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


import referee as referee_package  # noqa: E402

# gRPC reads its settings when first imported: referee/__init__.py has set its defaults.
GRPC_SETTINGS = referee_package.grpc_settings()

import grpc  # noqa: E402

from referee.protocol.messages import (  # noqa: E402
    PROTOCOL_VERSION,
    Clock,
    DecisionRequest,
    Handshake,
    Shutdown,
    TimeControl,
)
from referee.protocol.wire import (  # noqa: E402
    PLAY_PATH,
    decode_referee_message,
    encode_bot_message,
    encode_referee_message,
)
from referee.rules import Game  # noqa: E402

TARGET = 1.25
ADDRESS = "<address>"
"""Where a bot's command line takes the address it serves on."""
BOTS = {
    "minimal": [str(ROOT / "benchmarks" / "minimal_bot.py"), ADDRESS],
    "minimal-aio": [str(ROOT / "benchmarks" / "minimal_bot.py"), ADDRESS, "--aio"],
    "random": ["-m", "sdk", "serve", "sdk.examples.random.bot:RandomBot", ADDRESS],
    "greedy": ["-m", "sdk", "serve", "sdk.examples.greedy.bot:GreedyBot", ADDRESS],
}


def recorded_requests(count: int) -> list[bytes]:
    """``count`` encoded decision requests with the views of random games, in game order."""
    requests: list[bytes] = []
    seed = 0
    while len(requests) < count:
        game = Game.new(seed=seed, dealer=seed % 2)
        rng = random.Random(seed)
        while not game.over and len(requests) < count:
            request = DecisionRequest(
                request_id=len(requests) + 1,
                game_number=1,
                view=game.view(game.to_move or 0),
                clock=Clock(move_ms=1000, bank_ms=10_000),
            )
            requests.append(encode_referee_message(request))
            legal = game.legal_actions()
            game.play(legal[int(rng.random() * len(legal))])
        seed += 1
    return requests


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(address: str, requests: list[bytes], pid: int) -> float:
    """Send the handshake, then every request in turn; the bot's CPU seconds per request."""
    handshake = Handshake(
        protocol_version=PROTOCOL_VERSION,
        referee_version="bench",
        games=1,
        opponent_name="bench",
        time_control=TimeControl(1000, 10_000),
    )
    async with grpc.aio.insecure_channel(address) as channel:
        await channel.channel_ready()
        call = channel.stream_stream(PLAY_PATH, None, None)(None)
        await call.write(encode_referee_message(handshake))
        await call.read()
        before = cpu_seconds(pid)
        for data in requests:
            await call.write(data)
            await call.read()
        spent = cpu_seconds(pid) - before
        await call.write(encode_referee_message(Shutdown(reason="benchmark over")))
        await call.done_writing()
        call.cancel()
    return spent / len(requests)


def in_process(requests: list[bytes], rounds: int = 3) -> dict[tuple[str, bool], float]:
    """Seconds per request of the raw bot's answer and of the SDK random bot's (decode, act,
    encode), warm and with cold caches: best of ``rounds``."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from minimal_bot import answer

    from sdk.driver import BotDriver
    from sdk.examples.random.bot import RandomBot

    driver = BotDriver(RandomBot(seed=1), name="random", version="0")

    def sdk_answer(data: bytes) -> object:
        message = decode_referee_message(data, lazy=True)
        reply = driver.handle(message, time.monotonic())
        return None if reply is None else encode_bot_message(reply)

    flush_buffer = np.zeros(8 << 20, dtype=np.uint8)
    results: dict[tuple[str, bool], float] = {}
    for name, answer_one in (("minimal", answer), ("random", sdk_answer)):
        for cold in (False, True):
            best = float("inf")
            for _ in range(rounds):
                spent = 0.0
                for data in requests:
                    if cold:
                        flush_buffer[::64] += 1
                    start = time.perf_counter()
                    answer_one(data)
                    spent += time.perf_counter() - start
                best = min(best, spent / len(requests))
            results[name, cold] = best
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--bots", nargs="+", default=["random", "greedy"], choices=["random", "greedy"]
    )
    opts = parser.parse_args()
    requests = recorded_requests(opts.requests)
    names = ["minimal", "minimal-aio", *opts.bots]
    best = {name: float("inf") for name in names}
    tmp = Path(tempfile.mkdtemp(prefix="kryt-sdk-bench-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        for _ in range(opts.repeat):
            for name in names:
                address = f"unix://{tmp / f'{name}.sock'}"
                bot = subprocess.Popen(
                    [sys.executable, *(address if a == ADDRESS else a for a in BOTS[name])],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                try:
                    deadline = time.monotonic() + 30
                    while not (tmp / f"{name}.sock").exists() and time.monotonic() < deadline:
                        time.sleep(0.05)
                    cost = asyncio.run(drive(address, requests, bot.pid))
                    best[name] = min(best[name], cost)
                finally:
                    bot.kill()
                    bot.wait(10)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"bot CPU per decision, best of {opts.repeat} rounds of {len(requests)} requests")
    print(f"gRPC: {GRPC_SETTINGS}")
    raw = best["minimal"]
    print(f"{'minimal (raw protobuf)':<24}{raw * 1e6:>8.0f} µs  (the yardstick: threaded server)")
    aio = best["minimal-aio"]
    print(f"{'minimal on asyncio':<24}{aio * 1e6:>8.0f} µs  {aio / raw:.2f}x (as the SDK serves)")
    for name in opts.bots:
        ratio = best[name] / raw
        verdict = "OK" if ratio <= TARGET else "OVER TARGET"
        label = f"sdk {name}"
        print(
            f"{label:<24}{best[name] * 1e6:>8.0f} µs  {ratio:.2f}x (target <= {TARGET}: {verdict})"
        )
    times = in_process(requests[:1000])
    print("in this process, per request (no gRPC; best of 3 rounds of 1000):")
    for cold in (False, True):
        raw_us, sdk_us = times["minimal", cold] * 1e6, times["random", cold] * 1e6
        print(
            f"  {'cold caches' if cold else 'warm':<12} minimal {raw_us:6.1f} µs,"
            f" sdk random {sdk_us:6.1f} µs: +{sdk_us - raw_us:.1f} µs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
