#!/usr/bin/env python3
"""Where the referee's CPU per decision goes, with and without its transport.

    python benchmarks/referee_breakdown.py [--streams 1 64] [--decisions 6000] [--repeat 3]

``benchmarks/referee_overhead.py`` measures the referee's overhead over a bare gRPC echo
(issue 15's target); this script explains the figure. It plays the same series
(``run_series_async`` on one event loop, ``N`` series at once) two ways:

- *over gRPC*, against ``benchmarks/minimal_bot.py --aio`` (as ``referee_overhead.py`` does);
- *in process*: the same loop against players that do, per decision, what the referee's side
  of the connection does with the bytes (the request encoded by the same function; the
  reply's bytes, made by the player and not counted, decoded by the same function), with no
  transport at all. What it costs is the referee's own work per decision.

Each piece of the referee's work (the engine's view, encoding the request, decoding the reply,
the legality gate and play, the clock, the move's record) is timed with the calling thread's
CPU clock (``time.thread_time``) by a wrapper around the function that does it; the wrappers
cost about a microsecond a call (two clock reads), which the pieces' figures include. The
loop thread's CPU and gRPC's own threads' CPU (the rest of the process) are printed apart.
The best run of ``--repeat`` is kept (by total CPU per decision).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine, Iterator
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from referee_overhead import ROOT as _BENCH_ROOT  # noqa: E402
from referee_overhead import SlotPair, _spawn, play_series, slot_pairs  # noqa: E402

import referee.client  # noqa: E402
import referee.match  # noqa: E402
from referee.client import AsyncBotClient, Reply  # noqa: E402
from referee.match import AsyncPlayer  # noqa: E402
from referee.protocol.messages import (  # noqa: E402
    AnyView,
    Clock,
    Decision,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
)
from referee.protocol.wire import encode_bot_message, encode_referee_message  # noqa: E402
from referee.rules import Game  # noqa: E402

PIECES: tuple[tuple[object, str, str], ...] = (
    (Game, "view", "the engine's view"),
    (referee.client, "encode_decision_request", "encoding the request"),
    (referee.client, "decode_bot_message", "decoding the reply"),
    (Game, "play", "the legality gate and play"),
    (referee.match, "charge", "charging the clock"),
    (referee.match, "played", "the move's record"),
)
"""What is timed: (owner, attribute, label). The game loop and the client call each by that
attribute, so wrapping it there times every call the referee makes."""

Spent = defaultdict[str, float]
"""Seconds (or calls) by label."""

BOT_SIDE = "the in-process player's own work (not counted)"


@contextlib.contextmanager
def timed_pieces() -> Iterator[Spent]:
    """Wrap every piece of :data:`PIECES` in a thread-CPU timer while inside; yields the
    seconds summed per label (and the calls per label, under ``label + " calls"``)."""
    spent: Spent = defaultdict(float)
    clock = time.thread_time
    originals: list[tuple[object, str, Any]] = []

    def timed(function: Callable[..., Any], label: str) -> Callable[..., Any]:
        calls = label + " calls"

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += clock() - start
                spent[calls] += 1

        return wrapper

    for owner, name, label in PIECES:
        original = getattr(owner, name)
        originals.append((owner, name, original))
        setattr(owner, name, timed(original, label))
    try:
        yield spent
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


class InProcessBot:
    """The minimal bot's answer (the first legal action, as text) without a transport: the
    request and the messages that get no reply are encoded as the client encodes them, and
    the reply's bytes are decoded as the client decodes them. Making the reply's bytes is
    the bot's work: it is timed apart (``spent[BOT_SIDE]``) and taken off."""

    def __init__(self, name: str, spent: Spent) -> None:
        self.name = name
        self._spent = spent
        self._next_id = 1

    async def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Accept any series."""
        return HandshakeReply(
            protocol_version=handshake.protocol_version, name=self.name, version="1", sdk="none"
        )

    async def send(self, message: RefereeMessage) -> None:
        """Encode it, as the client does before writing it."""
        encode_referee_message(message)

    async def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The first legal action, through the bytes both ways."""
        request_id = self._next_id
        self._next_id += 1
        vars(referee.client)["encode_decision_request"](request_id, game_number, view, clock)
        start = time.thread_time()
        data = encode_bot_message(
            Decision(request_id=request_id, action=str(view.legal_actions[0]))
        )
        self._spent[BOT_SIDE] += time.thread_time() - start
        message = vars(referee.client)["decode_bot_message"](data)
        assert isinstance(message, Decision) and message.request_id == request_id
        return Reply(message.action, 0.0005, request_id)


class _InProcessSlot:
    def __init__(self, name: str, spent: Spent) -> None:
        self.name = name
        self._player = InProcessBot(name, spent)

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        return self._player

    async def diagnose(self) -> GameEndReason | None:
        return None


CpuSpent = tuple[float, float]
"""The loop thread's and the whole process's CPU seconds of a measured stretch."""


def _cpu() -> CpuSpent:
    return time.thread_time(), time.process_time()


def _since(start: CpuSpent) -> CpuSpent:
    return time.thread_time() - start[0], time.process_time() - start[1]


async def _measured(
    pairs: Callable[[], list[SlotPair]], streams: int, decisions: int, spent: Spent
) -> CpuSpent:
    """A warm-up game for each of ``streams`` series, then at least ``decisions`` decisions
    measured (the timers' counter cleared where the measured stretch starts)."""
    await play_series(pairs(), 1, "warm-up")
    # The minimal bots' games are short (~65 decisions: the first legal action takes a lot).
    games = max(1, -(-decisions // (60 * streams)))
    spent.clear()
    start = _cpu()
    await play_series(pairs(), games, "bench")
    return _since(start)


async def in_process(streams: int, decisions: int, spent: Spent) -> CpuSpent:
    """:func:`_measured` with ``streams`` series on this loop against :class:`InProcessBot`."""

    def pairs() -> list[SlotPair]:
        return [(_InProcessSlot("a", spent), _InProcessSlot("b", spent)) for _ in range(streams)]

    return await _measured(pairs, streams, decisions, spent)


async def over_grpc(addresses: list[str], streams: int, decisions: int, spent: Spent) -> CpuSpent:
    """:func:`_measured` with ``streams`` series on this loop against the minimal bots at
    ``addresses``, one connection per seat (made before)."""
    clients = [AsyncBotClient(a) for _ in range(streams) for a in addresses]
    for client in clients:
        await client.wait_healthy(30)
    cpu = await _measured(lambda: slot_pairs(clients), streams, decisions, spent)
    for client in clients:
        await client.aclose()
    return cpu


Breakdown = dict[str, float]
"""Microseconds per decision by label, plus ``loop thread``, ``gRPC threads`` and ``total``."""


def _per_decision(spent: Spent, loop_cpu: float, process_cpu: float) -> Breakdown:
    decisions = spent["encoding the request calls"]
    bot = spent[BOT_SIDE]
    out = {label: spent[label] / decisions * 1e6 for _, _, label in PIECES}
    out["loop thread"] = (loop_cpu - bot) / decisions * 1e6
    out["gRPC threads"] = (process_cpu - loop_cpu) / decisions * 1e6
    out["total"] = (process_cpu - bot) / decisions * 1e6
    return out


def measure(
    run: Callable[[Spent], Coroutine[Any, Any, CpuSpent]], loop: asyncio.AbstractEventLoop
) -> Breakdown:
    """One run of ``run`` (given the timers' counter, which it clears where its measured
    stretch starts) under the timers."""
    with timed_pieces() as spent:
        loop_cpu, process_cpu = loop.run_until_complete(run(spent))
    return _per_decision(spent, loop_cpu, process_cpu)


def _table(columns: dict[str, Breakdown]) -> None:
    labels = [label for _, _, label in PIECES]
    width = max(len(label) for label in [*labels, "the rest of the loop thread"]) + 2
    print(f"{'µs of CPU per decision':<{width}}" + "".join(f"{c:>22}" for c in columns))
    rows = [*labels, "the rest of the loop thread", "loop thread", "gRPC threads", "total"]
    for row in rows:
        cells = []
        for b in columns.values():
            if row == "the rest of the loop thread":
                value = b["loop thread"] - sum(b[label] for label in labels)
            else:
                value = b[row]
            cells.append(f"{value:>22.1f}")
        print(f"{row:<{width}}" + "".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--decisions", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kryt-breakdown-"))
    addresses = [f"unix://{tmp / f'bot{i}.sock'}" for i in (1, 2)]
    bot = str(_BENCH_ROOT / "benchmarks" / "minimal_bot.py")
    procs = [_spawn([bot, a, "--aio"]) for a in addresses]
    print(
        f"best of {opts.repeat}, load average {os.getloadavg()[0]:.1f}; the pieces include"
        " their timers (~1 µs a call)"
    )
    loop = asyncio.new_event_loop()
    try:
        columns: dict[str, Breakdown] = {}
        for streams in opts.streams:
            over, local = [], []
            for _ in range(opts.repeat):
                over.append(measure(partial(over_grpc, addresses, streams, opts.decisions), loop))
                local.append(measure(partial(in_process, streams, opts.decisions), loop))
            columns[f"gRPC, {streams} stream(s)"] = min(over, key=lambda b: b["total"])
            columns[f"in process, {streams}"] = min(local, key=lambda b: b["total"])
        loop.run_until_complete(asyncio.sleep(0.2))
        loop.close()
        _table(columns)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
