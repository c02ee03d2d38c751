#!/usr/bin/env python3
"""Referee overhead per decision over a bare asyncio echo, at 1 and 64 concurrent streams.

    python benchmarks/referee_overhead.py [--streams 1 64] [--decisions 6000] [--repeat 3]
                                          [--transport uds|tcp]

Issue 15's target: *referee overhead per decision* = the referee's CPU per decision minus
the bare asyncio echo client's CPU per round trip, at the same number of concurrent streams,
in one run: at most 100 µs.

Every server is its own process, serving on gRPC's asyncio API (any number of streams):
- *bare*: ``N`` pairs of echo streams on one event loop of this process; each pair is asked
  in turn, as a referee asks its two bots, ``--decisions`` round trips in all. The client
  CPU per round trip is the floor of anything that talks gRPC from Python.
- *referee*: ``N`` series as tasks of one event loop (:func:`referee.series.run_series_async`
  over :class:`referee.client.AsyncBotClient`, one client and stream per seat) against
  ``benchmarks/minimal_bot.py --aio`` (raw protobuf, the first legal action: its own work
  is ~5 µs a message more than the echo server's). Everything the tournament's referee
  does per decision is in it: the engine's view, the request's encoding, the deadline, the
  reply's decoding, the legality gate, the clock, the move's record. Games are played until
  at least ``--decisions`` decisions are made.
- *replay*: the same ``N`` pairs of streams to the same minimal bots, writing the decision
  requests of recorded games (encoded as the referee encodes them, each seat playing the
  first legal action, as the minimal bot does) and reading each reply, with no other work,
  streams awaited directly as in the bare echo: what a referee that did nothing but talk
  would cost against these bots. It splits the overhead in two: *replay - bare* is the
  peer's part (a real bot and real message sizes instead of an echo server and 300 bytes),
  which no referee work can remove; *referee - replay* is the referee's own work, as it
  costs beside gRPC.

CPU is this process's (``time.process_time``: gRPC's own threads included); the servers' CPU is
printed for information, and so is the kernel's part of this process's CPU (system time, of
the best run: the transport's system calls; the rest is Python and gRPC in user space).
Each measurement is repeated and the best kept (the machine is shared; noise only adds).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


import referee as referee_package  # noqa: E402

# gRPC reads its settings when first imported: referee/__init__.py has set its defaults.
GRPC_SETTINGS = referee_package.grpc_settings()

import grpc  # noqa: E402

from referee.client import (  # noqa: E402
    CHANNEL_OPTIONS,
    AsyncBotClient,
    AsyncRemotePlayer,
    BotClient,
    RemotePlayer,
    default_handshake,
)
from referee.match import AsyncPlayer, Player  # noqa: E402
from referee.protocol.fast_encode import encode_decision_request  # noqa: E402
from referee.protocol.messages import (  # noqa: E402
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    Handshake,
    TimeControl,
)
from referee.protocol.wire import (  # noqa: E402
    PLAY_PATH,
    decode_bot_message,
    decode_referee_message,
    encode_referee_message,
)
from referee.rules import Game, View  # noqa: E402
from referee.series import (  # noqa: E402
    AsyncBotSlot,
    SeriesConfig,
    run_series,
    run_series_async,
)

ECHO_SERVICE = "bench.Echo"
ECHO_PATH = f"/{ECHO_SERVICE}/Play"
TARGET_US = 100.0


async def _echo(requests: AsyncIterator[bytes], context: object) -> AsyncIterator[bytes]:
    async for data in requests:
        yield data


async def serve_echo(address: str) -> None:
    """The bare server: echo every message of every stream (asyncio, unlimited streams)."""
    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(_echo)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(ECHO_SERVICE, {"Play": handler}),)
    )
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


Cost = tuple[float, float, float]
"""Per round trip or decision: this process's CPU seconds, the servers' CPU seconds, and the
part of this process's CPU spent in the kernel (system time: the transport's calls)."""


def _system_seconds() -> float:
    return os.times().system


Stream = grpc.aio.StreamStreamCall[bytes, bytes]
"""One bidirectional stream of raw bytes."""


async def _open_pairs(
    addresses: list[str], streams: int, path: str, hello: bytes | None
) -> tuple[list[grpc.aio.Channel], list[list[Stream]]]:
    """``streams`` pairs of streams, one to each address, each on its own channel; each
    stream says ``hello`` first and reads the answer, if one is given."""
    channels = []
    pairs = []
    for _ in range(streams):
        pair = []
        for address in addresses:
            channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
            await channel.channel_ready()
            channels.append(channel)
            call: Stream = channel.stream_stream(path, None, None)(None)
            if hello is not None:
                await call.write(hello)
                await call.read()
            pair.append(call)
        pairs.append(pair)
    return channels, pairs


async def _measure(
    channels: list[grpc.aio.Channel],
    pairs: list[list[Stream]],
    ask: Callable[[list[Stream], int], Awaitable[None]],
    per_pair: int,
    pids: list[int],
) -> Cost:
    """The cost of ``per_pair`` rounds of ``ask`` on every pair at once, per round; then
    the streams and channels are closed."""
    cpu, others, system = time.process_time(), _cpu_seconds(pids), _system_seconds()
    await asyncio.gather(*(ask(p, per_pair) for p in pairs))
    done = per_pair * len(pairs)
    cost = (
        (time.process_time() - cpu) / done,
        (_cpu_seconds(pids) - others) / done,
        (_system_seconds() - system) / done,
    )
    for pair in pairs:
        for call in pair:
            call.cancel()
    for channel in channels:
        await channel.close(None)
    return cost


async def bare(addresses: list[str], streams: int, rounds: int, pids: list[int]) -> Cost:
    """Client CPU per round trip of ``streams`` pairs of echo streams on this loop."""
    channels, pairs = await _open_pairs(addresses, streams, ECHO_PATH, None)
    payload = b"x" * 300  # about a decision request's size

    async def ask(pair: list[Stream], count: int) -> None:
        for i in range(count):
            call = pair[i % 2]
            await call.write(payload)
            await call.read()

    await asyncio.gather(*(ask(p, 100) for p in pairs))  # warm-up
    return await _measure(channels, pairs, ask, max(1, rounds // streams), pids)


def recorded_requests(decisions: int, seed: str) -> list[tuple[int, bytes]]:
    """(seat, request bytes) of whole games, at least ``decisions`` of them, in which every
    seat plays its first legal action (the minimal bot's choice), encoded as the referee
    encodes them (request ids counting up, the dealer alternating)."""
    clock = Clock(move_ms=10_000, bank_ms=60_000)
    requests: list[tuple[int, bytes]] = []
    number = 0
    while len(requests) < decisions:
        number += 1
        game = Game.new(f"{seed}-{number}", dealer=number % 2)
        while not game.over:
            seat = game.to_move
            assert seat is not None
            view = game.view(seat)
            requests.append((seat, encode_decision_request(len(requests) + 1, number, view, clock)))
            game.play(view.legal_actions[0])
    return requests


def check_reply(request: bytes, reply: object) -> None:
    """Raise AssertionError unless ``reply`` is the decision for ``request``: its request id,
    and the request's first legal action (the minimal bot's choice)."""
    asked = decode_referee_message(request)
    assert isinstance(asked, DecisionRequest) and isinstance(asked.view, View), asked
    assert isinstance(reply, bytes), f"no reply to request {asked.request_id}: {reply!r}"
    answer = decode_bot_message(reply)
    assert isinstance(answer, Decision), answer
    assert answer.request_id == asked.request_id, (answer, asked.request_id)
    assert str(answer.action) == str(asked.view.legal_actions[0]), answer


async def replay(
    addresses: list[str], streams: int, requests: list[tuple[int, bytes]], pids: list[int]
) -> Cost:
    """Client CPU per decision of ``streams`` pairs of streams to the bots, each replaying
    ``requests`` (no other work): the floor of a referee against these bots."""
    hello = encode_referee_message(default_handshake("replay", 1, 10_000, 60_000))
    channels, pairs = await _open_pairs(addresses, streams, PLAY_PATH, hello)

    async def ask(pair: list[Stream], count: int, check: bool = False) -> None:
        for i in range(count):
            seat, data = requests[i % len(requests)]
            call = pair[seat]
            await call.write(data)
            reply = await call.read()
            if check:
                check_reply(data, reply)

    # The warm-up checks that the bots answer what was asked; the measured rounds only read.
    await asyncio.gather(*(ask(p, 100, check=True) for p in pairs))
    return await _measure(channels, pairs, ask, max(1, len(requests) // streams), pids)


class _Slot:
    """One seat's bot for a whole series (already running; handshaken once)."""

    def __init__(self, client: AsyncBotClient, name: str) -> None:
        self._player = AsyncRemotePlayer(client, handshake_timeout=30)
        self.name = name
        self._ready = False

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        if not self._ready:
            await self._player.handshake(handshake)
            self._ready = True
        return self._player

    async def diagnose(self) -> GameEndReason | None:
        return None


SlotPair = tuple[AsyncBotSlot, AsyncBotSlot]


async def play_series(pairs: list[SlotPair], games: int, seed: str) -> int:
    """One series of ``games`` games for each pair of seats, all at once as tasks of this
    loop; the decisions made (a forfeit fails the benchmark)."""
    control = TimeControl(move_ms=10_000, bank_ms=60_000)

    async def series(index: int, slots: SlotPair) -> int:
        config = SeriesConfig(games=games, seed=f"{seed}-{index}", time_control=control)
        result = await run_series_async(config, slots)
        assert all(not g.ending.is_forfeit for g in result.games.values()), result
        return sum(len(g.moves) for g in result.games.values())

    return sum(await asyncio.gather(*(series(i, pair) for i, pair in enumerate(pairs))))


def slot_pairs(clients: list[AsyncBotClient]) -> list[SlotPair]:
    """Fresh seats (handshaken at their series' first game) over connections taken in twos."""
    return [(_Slot(clients[i], "a"), _Slot(clients[i + 1], "b")) for i in range(0, len(clients), 2)]


async def referee(addresses: list[str], streams: int, decisions: int, pids: list[int]) -> Cost:
    """Referee CPU per decision of ``streams`` series on this loop against minimal bots."""
    clients = [AsyncBotClient(a) for _ in range(streams) for a in addresses]
    for client in clients:
        await client.wait_healthy(30)
    await play_series(slot_pairs(clients), 1, "warm-up")
    # ~170 decisions a game: enough games that every stream makes its share.
    games = max(1, -(-decisions // (170 * streams)))
    cpu, others, system = time.process_time(), _cpu_seconds(pids), _system_seconds()
    made = await play_series(slot_pairs(clients), games, "bench")
    cost = (
        (time.process_time() - cpu) / made,
        (_cpu_seconds(pids) - others) / made,
        (_system_seconds() - system) / made,
    )
    for client in clients:
        await client.aclose()
    return cost


class _BlockingSlot:
    """:class:`_Slot` for the blocking series loop."""

    def __init__(self, client: BotClient, name: str) -> None:
        self._player = RemotePlayer(client, handshake_timeout=30)
        self.name = name
        self._ready = False

    def player(self, handshake: Handshake) -> Player:
        if not self._ready:
            self._player.handshake(handshake)
            self._ready = True
        return self._player

    def diagnose(self) -> GameEndReason | None:
        return None

    def close(self) -> None:
        pass


def blocking(addresses: list[str], decisions: int, pids: list[int]) -> Cost:
    """:func:`referee` through the blocking facades (``run_series`` over ``BotClient``, its
    loop run once per call): one series, as the referee played every series before."""
    clients = [BotClient(a) for a in addresses]
    for client in clients:
        client.wait_healthy(30)
    control = TimeControl(move_ms=10_000, bank_ms=60_000)

    def series(games: int, seed: str) -> int:
        slots = (_BlockingSlot(clients[0], "a"), _BlockingSlot(clients[1], "b"))
        result = run_series(SeriesConfig(games=games, seed=seed, time_control=control), slots)
        return sum(len(g.moves) for g in result.games.values())

    series(1, "warm-up")
    cpu, others, system = time.process_time(), _cpu_seconds(pids), _system_seconds()
    made = series(max(1, -(-decisions // 170)), "bench")
    cost = (
        (time.process_time() - cpu) / made,
        (_cpu_seconds(pids) - others) / made,
        (_system_seconds() - system) / made,
    )
    for client in clients:
        client.close()
    return cost


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--decisions", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--transport", choices=["uds", "tcp"], default="uds")
    parser.add_argument("--serve-echo", metavar="ADDRESS", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve_echo:
        asyncio.run(serve_echo(opts.serve_echo))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="kryt-overhead-"))
    names = ["echo1", "echo2", "bot1", "bot2"]
    if opts.transport == "uds":
        addresses = [f"unix://{tmp / f'{n}.sock'}" for n in names]
    else:
        base = 41000 + (os.getpid() % 500) * 4
        addresses = [f"127.0.0.1:{base + i}" for i in range(4)]
    here = str(Path(__file__).resolve())
    procs = [_spawn([here, "--serve-echo", a]) for a in addresses[:2]]
    procs += [
        _spawn([str(ROOT / "benchmarks" / "minimal_bot.py"), a, "--aio"]) for a in addresses[2:]
    ]
    echo_pids = [p.pid for p in procs[:2]]
    bot_pids = [p.pid for p in procs[2:]]
    print(
        f"{opts.transport}, best of {opts.repeat}, load average {os.getloadavg()[0]:.1f};"
        " µs of CPU per round trip (bare) or per decision (referee)"
    )
    print(f"gRPC: {GRPC_SETTINGS}")
    print(
        f"{'streams':>8}{'bare client':>13}{'referee':>9}{'overhead':>10}{'target':>8}"
        f"{'echo servers':>14}{'bots':>6}{'system (bare/referee)':>23}"
        f"{'replay':>8}{'peer':>6}{'own work':>10}"
    )
    failed = False
    before: list[Cost] = []
    recorded = recorded_requests(opts.decisions, "replay")
    try:
        loop = asyncio.new_event_loop()
        for streams in opts.streams:
            bares: list[Cost] = []
            refs: list[Cost] = []
            replays: list[Cost] = []
            for _ in range(opts.repeat):
                if streams == 1:
                    before.append(blocking(addresses[2:], opts.decisions, bot_pids))
                bares.append(
                    loop.run_until_complete(bare(addresses[:2], streams, opts.decisions, echo_pids))
                )
                refs.append(
                    loop.run_until_complete(
                        referee(addresses[2:], streams, opts.decisions, bot_pids)
                    )
                )
                replays.append(
                    loop.run_until_complete(replay(addresses[2:], streams, recorded, bot_pids))
                )
            b, r, p = min(bares), min(refs), min(replays)
            overhead = (r[0] - b[0]) * 1e6
            met = overhead <= TARGET_US
            failed |= not met
            print(
                f"{streams:>8}{b[0] * 1e6:>13.0f}{r[0] * 1e6:>9.0f}{overhead:>10.0f}"
                f"{'met' if met else 'missed':>8}{b[1] * 1e6:>14.0f}{r[1] * 1e6:>6.0f}"
                f"{f'{b[2] * 1e6:.0f} / {r[2] * 1e6:.0f}':>23}"
                f"{p[0] * 1e6:>8.0f}{(p[0] - b[0]) * 1e6:>6.0f}{(r[0] - p[0]) * 1e6:>10.0f}"
            )
        loop.run_until_complete(asyncio.sleep(0.2))  # gRPC's own tasks of the closed calls end
        loop.close()
        if before:
            print(
                f"the blocking facade (run_series over BotClient, one series): "
                f"{min(before)[0] * 1e6:.0f} µs of CPU per decision"
            )
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    state = "missed" if failed else "met"
    print(
        "replay: the referee's recorded requests written to the same bots with no other work;"
        " peer = replay - bare (a real bot and real sizes instead of an echo), own work ="
        " referee - replay"
    )
    print(f"target: overhead <= {TARGET_US:.0f} µs at every stream count: {state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
