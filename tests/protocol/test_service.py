"""The gRPC service for real: a served bot answers real games over a Unix socket and TCP,
health checking, version mismatch, message size limits, and a misbehaving bot's faults."""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.client import (
    ANSWERED_KEPT,
    AsyncBotClient,
    BotClient,
    BotCrashedError,
    BotTimeoutError,
    BotUnreachableError,
    IncompatibleProtocolError,
    MalformedReplyError,
    RemotePlayer,
    UnexpectedReplyError,
)
from referee.protocol.messages import (
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    BotError,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    Shutdown,
    TimeControl,
)
from referee.protocol.wire import (
    PLAY_METHOD,
    PLAY_PATH,
    SERVICE,
    decode_referee_message,
    encode_bot_message,
)
from referee.record import REFEREE_VERSION
from referee.rules import Action, Game, View
from referee.series import game_seed
from sdk.bot import Bot, GameContext, GameResult, SeriesInfo
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.server import GRPC_OPTIONS
from sdk.tools.local import LocalPlayer, run_series
from tests.protocol.helpers import raw_server, served, serving

pytestmark = pytest.mark.timeout(120)

CLOCK = Clock(move_ms=1000, bank_ms=10_000)
PATIENT = 30.0
"""Seconds to wait for what is not under test (connecting, a handshake, a quick bot's reply):
generous, since CI shares a loaded machine."""


class RecordingBot(GreedyBot):
    """Greedy, and remembers every hook call."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def on_handshake(self, series: SeriesInfo) -> None:
        self.events.append(series)

    def on_game_start(self, game: GameContext) -> None:
        self.events.append(game)

    def act(self, view: View) -> Action:
        assert self.context is not None and view.seat == self.context.seat
        self.events.append(view)
        return super().act(view)

    def on_game_end(self, result: GameResult) -> None:
        self.events.append(result)


# Roomy enough that no move of a quick bot is forfeited on a loaded machine (not under test).
TIME_CONTROL = TimeControl(move_ms=10_000, bank_ms=60_000)


def _handshake(version: int = PROTOCOL_VERSION) -> Handshake:
    return Handshake(
        protocol_version=version,
        referee_version="test",
        games=3,
        opponent_name="opp",
        time_control=TimeControl(1000, 10_000),
    )


@pytest.mark.parametrize("transport", ["uds", "tcp"])
def test_a_served_bot_plays_real_games(transport: str) -> None:
    bot = RecordingBot()
    with served(bot, transport) as (address, server):
        if transport == "uds":
            assert address.startswith("unix://")
        else:
            assert address.startswith("127.0.0.1:") and not address.endswith(":0")
        client = BotClient(address)
        client.wait_healthy(PATIENT)
        remote = RemotePlayer(client, handshake_timeout=PATIENT)
        result = run_series(
            [remote, LocalPlayer(RandomBot(seed=3))],
            games=3,
            seed="wire",
            time_control=TIME_CONTROL,
        )
        client.shutdown("done", timeout=PATIENT)
        assert server.wait(PATIENT), "the server saw the Shutdown message"
    assert remote.name == "recordingbot"
    assert len(result.games) == 3 and not result.forfeits
    for number, record in result.games.items():  # the engine replays every game: all legal
        game = Game.replay(
            Game.new(seed=game_seed("wire", number)).deck or (),
            record.dealer,
            [m.action for m in record.moves],
        )
        assert game.over and game.outcome == record.winner
    series = [e for e in bot.events if isinstance(e, SeriesInfo)]
    starts = [e for e in bot.events if isinstance(e, GameContext)]
    ends = [e for e in bot.events if isinstance(e, GameResult)]
    views = [e for e in bot.events if isinstance(e, View)]
    assert series == [SeriesInfo("random", 3, TIME_CONTROL, REFEREE_VERSION, 1)]
    assert [s.game_number for s in starts] == [1, 2, 3] == [e.game_number for e in ends]
    assert all(s.seat == 0 and s.opponent_name == "random" for s in starts)
    assert [e.winner for e in ends] == [result.games[n].winner for n in (1, 2, 3)]
    assert ends[-1].score == result.score(0)
    # The deal is never revealed (rules.md: nothing of another hand or the stock, at any time).
    assert all(e.deck == () and e.view is not None and e.view.over for e in ends)
    assert views and all(v.legal_actions and v.to_move == 0 for v in views)


def test_health_service_reports_serving() -> None:
    with served(GreedyBot(), "uds") as (address, _), grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE):
            answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=PATIENT)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as err:
            stub.Check(health_pb2.HealthCheckRequest(service="nope"), timeout=PATIENT)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_unreachable_bot_is_reported_after_the_timeout() -> None:
    client = BotClient("unix:///nonexistent/kryt.sock")
    start = time.monotonic()
    with pytest.raises(BotUnreachableError, match=r"not healthy after 0\.3s"):
        client.wait_healthy(0.3)
    assert time.monotonic() - start < 10  # gave up at its timeout, not some longer one
    client.close()


def test_referee_rejects_a_bot_speaking_another_version() -> None:
    def behaviour(message: RefereeMessage) -> list[BotMessage | bytes]:
        return [HandshakeReply(protocol_version=99, name="old", version="0.1", sdk="ancient")]

    with (
        raw_server(behaviour) as address,
        BotClient(address) as client,
        pytest.raises(IncompatibleProtocolError) as err,
    ):
        client.handshake(_handshake(), timeout=PATIENT)
    text = str(err.value)
    assert "speaks protocol version 99" in text and f"referee speaks {PROTOCOL_VERSION}" in text
    # The bot is the newer side: upgrading its SDK is no advice.
    assert "this referee is older than the bot" in text and "upgrade" not in text, text
    assert err.value.reason is GameEndReason.STARTUP_FAILURE and "old" in err.value.offending


def test_sdk_bot_answers_with_its_version_so_a_newer_referee_rejects_it() -> None:
    with (
        served(GreedyBot(), "uds") as (address, _),
        BotClient(address) as client,
        pytest.raises(IncompatibleProtocolError, match="speaks protocol version 1") as err,
    ):
        client.handshake(_handshake(version=2), timeout=PATIENT)
    assert "(upgrade the bot's SDK: kryt-sdk-python" in str(err.value), str(err.value)


def test_messages_over_the_size_limit_are_refused() -> None:
    with served(GreedyBot(), "uds") as (address, _), grpc.insecure_channel(address) as channel:
        play = channel.stream_stream(PLAY_PATH, None, None)
        call = play(iter([b"\x00" * (MAX_REQUEST_BYTES + 1)]), timeout=PATIENT)
        with pytest.raises(grpc.RpcError) as err:
            list(call)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def _view() -> View:
    return Game.new(seed=11, dealer=1).view(0)


def _decide(client: BotClient, timeout: float = PATIENT) -> str:
    return str(client.decide(_view(), CLOCK, game_number=1, timeout=timeout).action)


def _fine(message: RefereeMessage) -> list[BotMessage | bytes]:
    if isinstance(message, Handshake):
        return [HandshakeReply(PROTOCOL_VERSION, "raw", "1", "test")]
    if isinstance(message, DecisionRequest):
        return [Decision(message.request_id, str(message.view.legal_actions[0]))]
    return []


def test_a_second_reply_is_detected() -> None:
    def twice(message: RefereeMessage) -> list[BotMessage | bytes]:
        return _fine(message) * (2 if isinstance(message, DecisionRequest) else 1)

    with raw_server(twice) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        assert _decide(client) == str(_view().legal_actions[0])
        time.sleep(0.2)  # let the duplicate arrive
        with pytest.raises(UnexpectedReplyError, match="a second reply to request"):
            _decide(client)


def test_a_reply_to_another_request_is_detected() -> None:
    def wrong_id(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, DecisionRequest):
            return [Decision(message.request_id + 7, "take")]
        return _fine(message)

    with raw_server(wrong_id) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        with pytest.raises(
            UnexpectedReplyError, match=r"a reply to request (\d+), not to the pending"
        ) as caught:
            _decide(client)
        # It names both ids: the one the bot echoed is 7 more than the pending one.
        found = re.search(r"request (\d+), not to the pending (\d+)", str(caught.value))
        assert found is not None and int(found[1]) == int(found[2]) + 7


def test_a_reply_before_any_request_is_detected() -> None:
    def eager(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            return [*_fine(message), Decision(1, "take")]
        return _fine(message)

    with raw_server(eager) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        time.sleep(0.2)
        with pytest.raises(UnexpectedReplyError) as err:
            _decide(client)
    assert err.value.reason is GameEndReason.MALFORMED_REPLY
    assert "take" in err.value.offending


def test_timeout_then_the_late_reply_is_discarded_not_blamed() -> None:
    seen: list[int] = []
    release = threading.Event()

    def slow_first(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, DecisionRequest):
            seen.append(message.request_id)
            if len(seen) == 1:
                release.wait(PATIENT)  # answers only after the referee has given up
        return _fine(message)

    with raw_server(slow_first) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        start = time.monotonic()
        try:
            with pytest.raises(BotTimeoutError) as err:
                _decide(client, timeout=0.1)
            # The reply was held back, so only the 0.1 s timeout can have ended the wait;
            # the bound says it was that timeout, not some longer default.
            assert time.monotonic() - start < 10
        finally:
            release.set()
        assert err.value.reason is GameEndReason.TIMEOUT
        # The late reply precedes the next one on the stream: no need to wait for it.
        reply = client.decide(_view(), CLOCK, game_number=1, timeout=PATIENT)
        assert len(seen) == 2 and seen[0] != seen[1]
        assert reply.request_id == seen[1]
        assert [d.request_id for d in client.discarded] == [seen[0]]


def test_request_ids_are_unpredictable() -> None:
    seen: list[int] = []

    def record(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, DecisionRequest):
            seen.append(message.request_id)
        return _fine(message)

    with raw_server(record) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        for _ in range(20):
            _decide(client)
    assert len(set(seen)) == 20
    assert all(0 < i < 2**31 for i in seen)  # exact in every language, JavaScript included
    assert len({b - a for a, b in itertools.pairwise(seen)}) > 1  # not a counter


@pytest.mark.parametrize(
    ("reply", "error", "text"),
    [
        (b"\xff\xff\xff", MalformedReplyError, "not a kryt.v1.BotMessage"),
        (BotError("boom in act"), BotCrashedError, "boom in act"),
    ],
)
def test_malformed_replies_and_reported_errors(
    reply: BotMessage | bytes, error: type[Exception], text: str
) -> None:
    def bad(message: RefereeMessage) -> list[BotMessage | bytes]:
        return [reply] if isinstance(message, DecisionRequest) else _fine(message)

    with raw_server(bad) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        with pytest.raises(error, match=text):
            _decide(client)


def test_a_bot_that_hangs_up_is_a_crash() -> None:
    def hang_up(message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, DecisionRequest):
            raise RuntimeError("bot died")
        return _fine(message)

    with raw_server(hang_up) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        with pytest.raises(BotCrashedError, match=r"connection to bot lost") as caught:
            _decide(client)
        assert client.closed
        with pytest.raises(BotCrashedError, match="closed"):
            _decide(client)
    # The detail is told to both bots and shown on pages: a sandbox's socket path (the
    # runner's private directory and label) is not in it.
    shown = str(caught.value)
    assert "unix:" not in shown and address.removeprefix("unix:") not in shown


def test_exceptions_in_bot_code_become_bot_errors_and_the_bot_keeps_serving() -> None:
    class Flaky(Bot):
        calls = 0

        def act(self, view: View) -> str:
            self.calls += 1
            if self.calls == 1:
                raise ValueError("first move bug")
            return "take" if self.calls == 2 else 42  # type: ignore[return-value]

    with served(Flaky(), "uds") as (address, _), BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        with pytest.raises(BotCrashedError, match="ValueError: first move bug"):
            _decide(client)
        assert _decide(client) == "take"  # illegal here, but judging it is the referee's job
        with pytest.raises(BotCrashedError, match="act\\(\\) returned 42"):
            _decide(client)


def test_close_from_another_thread_stops_the_client() -> None:
    """Ctrl-C closes every bot from the main thread while series threads own the clients."""
    handshaken, closed = threading.Event(), threading.Event()
    outcome: list[object] = []

    def series_thread(address: str) -> None:
        client = BotClient(address)
        client.handshake(_handshake(), timeout=PATIENT)
        outcome.append(client)
        handshaken.set()
        closed.wait(PATIENT)
        try:
            _decide(client)
        except BotCrashedError as exc:
            outcome.append(exc)
        client.close()  # the owner's close finishes the clean-up
        outcome.append("done")

    with served(GreedyBot(), "uds") as (address, _):
        worker = threading.Thread(target=series_thread, args=(address,))
        worker.start()
        assert handshaken.wait(PATIENT)
        client = outcome[0]
        assert isinstance(client, BotClient)
        client.close()
        assert client.closed
        closed.set()
        worker.join(PATIENT)
    assert not worker.is_alive()
    assert isinstance(outcome[1], BotCrashedError) and "closed" in str(outcome[1])
    assert outcome[2] == "done"


def test_a_client_made_in_async_code_works_there() -> None:
    """A notebook runs an event loop in its main thread: the client does its I/O elsewhere."""

    async def in_a_notebook(address: str) -> tuple[str, str, bool]:
        with BotClient(address) as client:
            client.handshake(_handshake(), timeout=PATIENT)
            first = _decide(client)
            second = await asyncio.to_thread(_decide, client)  # any thread may use it
        return first, second, client.closed

    with served(GreedyBot(), "uds") as (address, _):
        first, second, closed = asyncio.run(in_a_notebook(address))
    assert first == second == str(GreedyBot().act(_view()))
    assert closed


def test_a_client_made_outside_async_code_says_so_when_used_inside() -> None:
    async def misuse(client: BotClient) -> None:
        client.handshake(_handshake(), timeout=PATIENT)

    with (
        served(GreedyBot(), "uds") as (address, _),
        BotClient(address) as client,
        pytest.raises(RuntimeError, match="made outside async code"),
    ):
        asyncio.run(misuse(client))


def test_a_bot_that_stops_reading_its_stream_is_a_crash_not_a_hang() -> None:
    release = threading.Event()

    def deaf(message: RefereeMessage) -> list[BotMessage | bytes]:
        if not isinstance(message, Handshake):
            release.wait(30)  # never reads again
        return _fine(message)

    with raw_server(deaf) as address:
        try:
            with BotClient(address) as client:
                client.handshake(_handshake(), timeout=PATIENT)
                start = time.monotonic()
                with pytest.raises(BotCrashedError, match="stopped reading its stream"):
                    for _ in range(1000):  # flow control fills up after a few MB
                        client.send(Shutdown(reason="x" * 60_000), timeout=1.0)
                assert time.monotonic() - start < 20
                assert client.closed
        finally:
            release.set()


def test_a_bot_stuck_in_its_own_code_does_not_hold_stop_forever() -> None:
    """The SDK serves from one event loop; a bot that never returns holds it, so stop() gives
    up after its grace plus a second instead of hanging the process that serves it."""
    release, stuck = threading.Event(), threading.Event()

    class Stuck(Bot):
        def act(self, view: View) -> str:
            stuck.set()
            release.wait(60)
            return "take"

    with served(Stuck(), "uds") as (address, server), BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        with pytest.raises(BotTimeoutError):
            _decide(client, timeout=0.3)
        # The referee's 0.3 s may pass before a busy machine delivers the request: stop only
        # once the bot really holds the loop, or stop() would rightly end at once.
        assert stuck.wait(PATIENT), "the bot never got the decision request"
        started = time.monotonic()
        server.stop(grace=0.2)
        elapsed = time.monotonic() - started
        release.set()
    assert elapsed < 20, f"stop() took {elapsed:.1f} s"
    assert elapsed >= 1.0, "stop() cannot have finished while the bot held the loop"


def test_the_answered_requests_kept_are_bounded() -> None:
    """A long series' connection keeps only the latest answered ids, and still names a
    duplicate of the latest reply as a second reply."""
    asked = itertools.count(1)
    decisions = ANSWERED_KEPT + 40

    def twice_at_the_end(message: RefereeMessage) -> list[BotMessage | bytes]:
        replies = _fine(message)
        if isinstance(message, DecisionRequest) and next(asked) == decisions:
            return replies * 2
        return replies

    with raw_server(twice_at_the_end) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        for _ in range(decisions):
            _decide(client)
        assert len(client.connection._answered) == ANSWERED_KEPT
        time.sleep(0.2)  # let the duplicate arrive
        with pytest.raises(UnexpectedReplyError, match="a second reply to request"):
            _decide(client)


def test_a_bot_that_ends_its_stream_after_the_handshake_is_said_to_have_closed_it() -> None:
    """Ending the stream cleanly (status OK) is named as such, not as a lost connection
    with an empty status ("lost: OK: ")."""

    def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        for data in requests:
            for out in _fine(decode_referee_message(data)):
                yield out if isinstance(out, bytes) else encode_bot_message(out)
            return  # after the handshake: a clean end of the stream

    handler = grpc.stream_stream_rpc_method_handler(play)

    async def main(address: str) -> str:
        async with AsyncBotClient(address) as client:
            await client.handshake(_handshake(), timeout=PATIENT)
            start = GameStart(1, 0, 1, SeriesScore(), "opp", TimeControl(1000, 10_000), 100)
            with pytest.raises(BotCrashedError) as caught:
                # Whether the write or the read meets the end first is a race: both say so.
                await client.send(start)
                await client.decide(_view(), CLOCK, game_number=1, timeout=PATIENT)
            return str(caught.value)

    with serving(SERVICE, {PLAY_METHOD: handler}, options=GRPC_OPTIONS) as address:
        message = asyncio.run(main(address))
    assert "closed the stream" in message and "OK" not in message, message


def test_a_handshake_reply_without_a_protocol_version_says_it_was_not_set() -> None:
    def behaviour(message: RefereeMessage) -> list[BotMessage | bytes]:
        return [HandshakeReply(protocol_version=0, name="js", version="1", sdk="hand-js")]

    with (
        raw_server(behaviour) as address,
        BotClient(address) as client,
        pytest.raises(IncompatibleProtocolError, match=r"version 0 \(0: the reply does not set"),
    ):
        client.handshake(_handshake(), timeout=PATIENT)
