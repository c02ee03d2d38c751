"""What a bot sends over the wire, round 4: raw gRPC bots (no SDK) against the referee.

- A health service answering a status number that no ``ServingStatus`` names is a bot that
  is not serving (a start-up failure), not an exception out of the series.
- A four-seat table where the defender may cover four led sixes in thousands of ways has a
  decision request over the old 64 KiB limit, under the default settings: requests may now
  be as large as any view can be (4 MiB). A request of the referee's own over its limit
  voids the game: gRPC would refuse the message and break the stream, which read as the
  mover's crash, so an innocent bot lost to everyone.
- What a bot sent (a ``BotError`` text, a gRPC status detail, handshake fields) reaches the
  organiser's log escaped, never as raw terminal escape sequences.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import pytest

import referee.client
from referee.client import (
    AsyncBotClient,
    AsyncRemotePlayer,
    BotClient,
    BotCrashedError,
    BotFault,
    BotUnreachableError,
    MalformedReplyError,
)
from referee.match import AsyncPlayer, play_game_async
from referee.protocol.messages import (
    MAX_REPLY_BYTES,
    PROTOCOL_VERSION,
    BotError,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from referee.protocol.wire import PLAY_METHOD, SERVICE, encode_referee_message
from referee.record import GameRecord
from referee.rules import ClassicView, Game
from referee.series import BotStartError, SeriesConfig, run_series_async
from referee.table import run_table_series_async, table_handshake
from tests.protocol.helpers import Behaviour, raw_server, serving

pytestmark = pytest.mark.timeout(120)

ROOMY = TimeControl(move_ms=2000, bank_ms=10_000)


def _hello(message: Handshake) -> HandshakeReply:
    return HandshakeReply(PROTOCOL_VERSION, "raw", "1", "raw protobuf", ("default", "classic"))


# ---------------------------------------------------------------------------- health


@contextmanager
def _odd_health_server() -> Iterator[str]:
    """A bot whose health ``Check`` answers ``HealthCheckResponse(status=99)`` (an open enum:
    protobuf keeps the number)."""

    def check(request: bytes, context: grpc.ServicerContext) -> bytes:
        return b"\x08\x63"

    handler = grpc.unary_unary_rpc_method_handler(check)
    with serving("grpc.health.v1.Health", {"Check": handler}) as address:
        yield address


def test_a_health_status_no_enum_names_is_not_serving_rather_than_an_exception() -> None:
    with _odd_health_server() as address, BotClient(address) as client:
        with pytest.raises(BotUnreachableError, match=r"not healthy after 0\.5s: status 99"):
            client.wait_healthy(0.5)
        with pytest.raises(BotUnreachableError, match="status 99"):
            client.wait_healthy(0.3, alive=lambda: True)


# ---------------------------------------------------------------------------- size limit

# A four-seat classic game, dealer 0, where seat 0 takes every lead until seat 3 leads the
# four sixes to it: seat 0 then holds 25 cards and may cover them in 2,365 ways, a decision
# request of about 76 KB. Every action is legal; nothing a bot did is wrong.
BIG_DECK = [
    *("QH", "AC", "QD", "9C", "KH", "JC", "6C", "8S", "7C", "JH", "AS", "6H", "7S", "TC"),
    *("KC", "KS", "9H", "8D", "6D", "9D", "8H", "TH", "JS", "7D", "TS", "QC", "TD", "AD"),
    *("QS", "JD", "7H", "6S", "AH", "KD", "9S", "8C"),
]
BIG_SCRIPT = [
    *("lead 7C", "cover 7C:JC", "lead JH", "cover JH:AS", "lead 6C", "take", "lead TC"),
    *("cover TC:AC", "lead KC KS", "take", "lead 6C 6H", "take", "lead 8H", "cover 8H:9H"),
    *("lead KC KS", "take", "lead 6H", "take", "lead TS", "take", "lead 6C 6D", "take"),
    *("lead QC QD", "take", "lead TD", "take", "lead 8D", "take", "lead JD", "take"),
    *("lead 7H", "take", "lead 6S", "take", "lead AD AH", "take", "lead KD KH", "take"),
    *("lead 8C", "take", "lead QH", "take", "lead 9S", "take", "lead 7S", "take", "lead QS"),
    *("take", "lead 6C 6D 6H 6S"),
]


def _big_game(
    told: tuple[int, ...], sizes: list[int] | None = None
) -> tuple[GameRecord, list[bool], list[list[GameEnd]]]:
    """The scripted four-seat game to the big position, then every seat plays its first
    legal action: the record, whether each connection closed, and each seat's GameEnds
    (waited for, up to a minute, at the seats ``told``: a bot reads its GameEnd after the
    referee has sent it). ``sizes`` gets the length of every request seat 0 was sent."""
    seats = 4
    ends: list[list[GameEnd]] = [[] for _ in range(seats)]

    def scripted(seat: int) -> Behaviour:
        def behaviour(message: RefereeMessage) -> list[BotMessage | bytes]:
            if isinstance(message, Handshake):
                return [_hello(message)]
            if isinstance(message, DecisionRequest):
                view = message.view
                assert isinstance(view, ClassicView)
                if seat == 0 and sizes is not None:
                    sizes.append(len(encode_referee_message(message)))
                played = len(view.history)
                action = BIG_SCRIPT[played] if played < len(BIG_SCRIPT) else view.legal_actions[0]
                return [Decision(message.request_id, str(action))]
            if isinstance(message, GameEnd):
                ends[seat].append(message)
            return []

        return behaviour

    config = SeriesConfig(games=1, seed=1, ruleset="classic", players=seats)
    names = [f"raw{s}" for s in range(seats)]

    async def main(addresses: list[str]) -> tuple[GameRecord, list[bool]]:
        clients = [AsyncBotClient(a) for a in addresses]
        try:
            players: list[AsyncPlayer] = []
            for seat, client in enumerate(clients):
                player = AsyncRemotePlayer(client)
                await player.handshake(table_handshake(config, names, seat))
                players.append(player)
            record = await play_game_async(
                players,
                number=1,
                deck=BIG_DECK,
                dealer=0,
                scores=[SeriesScore()] * seats,
                time_control=ROOMY,
                turn_limit=config.turn_limit,
                ruleset="classic",
            )
            deadline = time.monotonic() + 60
            while not all(ends[seat] for seat in told) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            return record, [c.closed for c in clients]
        finally:
            for client in clients:
                await client.aclose()

    with (
        raw_server(scripted(0)) as a0,
        raw_server(scripted(1)) as a1,
        raw_server(scripted(2)) as a2,
        raw_server(scripted(3)) as a3,
    ):
        record, closed = asyncio.run(main([a0, a1, a2, a3]))
    return record, closed, ends


def test_a_view_over_the_reply_limit_reaches_the_bot_and_the_game_goes_on() -> None:
    # Requests may be as large as every view can be (MAX_REQUEST_BYTES, 4 MiB); replies are
    # held to 64 KiB. The bots here are served with the SDK's gRPC options.
    sizes: list[int] = []
    record, closed, ends = _big_game((0, 1, 2, 3), sizes)
    assert max(sizes) > MAX_REPLY_BYTES, max(sizes)
    assert len(record.moves) > len(BIG_SCRIPT)
    assert record.forfeit is None and record.ending is not GameEndReason.VOID, record
    assert closed == [False] * 4
    assert [[e.reason for e in seat_ends] for seat_ends in ends] == [[record.ending]] * 4


def test_a_request_over_the_size_limit_voids_the_game_instead_of_forfeiting_the_mover(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The big position's request (2,365 legal actions, ~76 KB) over a limit lowered to
    # 64 KiB stands in for a view past 4 MiB, which no legal position reaches.
    monkeypatch.setattr(referee.client, "MAX_REQUEST_BYTES", 64 * 1024)
    record, closed, ends = _big_game((1, 2, 3))
    # Every scripted action was played; the next request is ours to fail: a void, no forfeit.
    assert len(record.moves) == len(BIG_SCRIPT)
    assert record.forfeit is None, record.forfeit
    assert record.ending is GameEndReason.VOID and record.loser is None and not record.pairwise
    assert "over the protocol's 65536-byte limit" in record.void_reason
    assert "2365 legal actions" in record.void_reason
    # Nothing oversized was put on a stream: every connection is still open.
    assert closed == [False] * 4
    # The seats whose GameEnd fits were told the game was void (the mover's own final view
    # holds the same 2,365 actions: it is not sent).
    for seat in (1, 2, 3):
        assert [e.reason for e in ends[seat]] == [GameEndReason.VOID]


# ---------------------------------------------------------------------------- the log

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m[bold red]I WIN[/]\r\u202e"


class _ArenaLikeSeat:
    """A bot behind an AsyncBotClient, handshaken once, a failed handshake a start failure
    (what the arena's sandbox slot does)."""

    def __init__(self, address: str, name: str) -> None:
        self.client = AsyncBotClient(address)
        self._player = AsyncRemotePlayer(self.client, handshake_timeout=10)
        self.name = name
        self._ready = False

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        if not self._ready:
            try:
                await self._player.handshake(handshake)
            except BotFault as exc:
                raise BotStartError(f"{self.name} failed the handshake: {exc}") from None
            self._ready = True
        return self._player

    async def diagnose(self) -> GameEndReason | None:
        return None


def _fine(message: RefereeMessage) -> list[BotMessage | bytes]:
    if isinstance(message, Handshake):
        return [_hello(message)]
    if isinstance(message, DecisionRequest):
        return [Decision(message.request_id, str(message.view.legal_actions[0]))]
    return []


def _refuses(message: RefereeMessage) -> list[BotMessage | bytes]:
    if isinstance(message, Handshake):
        return [BotError(HOSTILE)]
    return []


@pytest.mark.parametrize("seats", [2, 3])
def test_what_a_bot_sent_reaches_the_organisers_log_escaped(
    seats: int, caplog: pytest.LogCaptureFixture
) -> None:
    if seats == 2:
        config = SeriesConfig(games=2, seed=5, time_control=ROOMY)
    else:
        config = SeriesConfig(games=2, seed=5, time_control=ROOMY, ruleset="classic", players=3)

    async def main(addresses: list[str]) -> dict[int, GameRecord]:
        slots = [_ArenaLikeSeat(a, f"bot{i}") for i, a in enumerate(addresses)]
        try:
            if seats == 2:
                return dict((await run_series_async(config, (slots[0], slots[1]))).games)
            return dict((await run_table_series_async(config, slots)).games)
        finally:
            for slot in slots:
                await slot.client.aclose()

    with (
        caplog.at_level(logging.WARNING),
        raw_server(_refuses) as bad,
        raw_server(_fine) as good1,
        raw_server(_fine) as good2,
    ):
        games = asyncio.run(main([bad, good1, good2][:seats]))
    assert len(games) == 2
    for record in games.values():
        forfeit = record.forfeit
        assert forfeit is not None and forfeit.seat == 0
        assert forfeit.reason is GameEndReason.STARTUP_FAILURE
        assert HOSTILE in forfeit.detail  # the record keeps it as sent (shown escaped)
    assert "forfeits" in caplog.text and "I WIN" in caplog.text
    for raw in ("\x1b", "\x9b", "\x07", "\r", "\u202e"):
        assert raw not in caplog.text, raw


# ---------------------------------------------------------------------------- statuses


@contextmanager
def _aborting_server(code: grpc.StatusCode, details: str) -> Iterator[str]:
    """A bot whose Play stream ends at once with ``code`` and ``details``."""

    def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        next(requests, None)
        context.abort(code, details)
        yield b""  # never reached: a generator, as a stream-stream handler must be

    handler = grpc.stream_stream_rpc_method_handler(play)
    with serving(SERVICE, {PLAY_METHOD: handler}) as address:
        yield address


def test_a_bot_ending_its_stream_with_resource_exhausted_crashed() -> None:
    # Only gRPC's own refusal of an oversized message is a malformed reply; a status the bot
    # chose is a crash, as any other (protocol.md).
    handshake = table_handshake(SeriesConfig(games=1, seed=1), ["a", "b"], 0)
    with (
        _aborting_server(grpc.StatusCode.RESOURCE_EXHAUSTED, "quota") as address,
        BotClient(address) as client,
        pytest.raises(BotCrashedError, match="RESOURCE_EXHAUSTED: quota"),
    ):
        client.handshake(handshake, timeout=30)


def test_a_reply_over_the_reply_limit_is_malformed() -> None:
    def behaviour(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            return [_hello(message)]
        if isinstance(message, DecisionRequest):
            return [Decision(message.request_id, "take" + " " * (MAX_REPLY_BYTES + 10))]
        return []

    config = SeriesConfig(games=1, seed=1)
    with raw_server(behaviour) as address, BotClient(address) as client:
        client.handshake(table_handshake(config, ["a", "b"], 0), timeout=30)
        view = Game.new(seed=3, dealer=0).view(0)
        with pytest.raises(MalformedReplyError, match=f"over the {MAX_REPLY_BYTES}-byte limit"):
            client.decide(view, Clock(10_000, 10_000), game_number=1, timeout=30)
