"""The decision deadline of :class:`referee.client.AsyncBotClient`: one alarm per client,
moved only when a deadline comes sooner, with the semantics of ``asyncio.timeout_at``
around each decision (a timeout at the deadline, a late reply discarded by the next request,
a cancel of the task still a cancel)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from referee.client import AsyncBotClient, BotTimeoutError, Reply
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.rules import Game
from tests.protocol.helpers import raw_server

pytestmark = pytest.mark.timeout(60)

CLOCK = Clock(move_ms=1000, bank_ms=10_000)
HANDSHAKE = Handshake(
    protocol_version=PROTOCOL_VERSION,
    referee_version="test",
    games=1,
    opponent_name="x",
    time_control=TimeControl(move_ms=1000, bank_ms=10_000),
)


class Sleepy:
    """A raw bot that answers the first legal action, after the delay (seconds) set for the
    request's number (0: at once); remembers every request id it saw."""

    def __init__(self, delays: dict[int, float]) -> None:
        self.delays = delays
        self.seen: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            return [HandshakeReply(PROTOCOL_VERSION, "sleepy", "1", "test")]
        if isinstance(message, DecisionRequest):
            with self.lock:
                self.seen.append(message.request_id)
                n = len(self.seen)
            time.sleep(self.delays.get(n, 0.0))
            return [Decision(message.request_id, str(message.view.legal_actions[0]))]
        return []


async def _client(address: str) -> AsyncBotClient:
    client = AsyncBotClient(address)
    await client.handshake(HANDSHAKE, timeout=10)
    return client


def _decide(client: AsyncBotClient, timeout: float) -> asyncio.Task[Reply]:
    view = Game.new(seed=5, dealer=1).view(0)
    return asyncio.create_task(client.decide(view, CLOCK, game_number=1, timeout=timeout))


def test_a_shorter_deadline_after_a_longer_one_still_times_out_on_time() -> None:
    """The alarm set for a long deadline is moved to the sooner one."""
    bot = Sleepy({2: 0.6})

    async def scenario() -> tuple[float, BotTimeoutError, int]:
        client = await _client(address)
        try:
            await _decide(client, timeout=30.0)  # arms the alarm 30 s away
            start = time.monotonic()
            with pytest.raises(BotTimeoutError) as err:
                await _decide(client, timeout=0.15)
            took = time.monotonic() - start
            task = asyncio.current_task()
            assert task is not None
            return took, err.value, task.cancelling()
        finally:
            await client.aclose()

    with raw_server(bot) as address:
        took, error, cancelling = asyncio.run(scenario())
    assert 0.15 <= took < 0.5
    assert error.reason is GameEndReason.TIMEOUT
    assert str(error) == f"no decision within 0.150s (request {bot.seen[1]})"
    assert cancelling == 0  # the deadline's cancel is taken back, as asyncio.timeout does


def test_an_alarm_left_from_a_shorter_deadline_does_not_end_a_longer_decision() -> None:
    """The alarm rings at an earlier decision's deadline and is set again for the pending
    one: a decision that takes longer than that earlier deadline is not cut short."""
    bot = Sleepy({2: 0.5})

    async def scenario() -> tuple[str, float]:
        client = await _client(address)
        try:
            await _decide(client, timeout=0.2)  # answered at once; the alarm stays 0.2 s away
            start = time.monotonic()
            reply = await _decide(client, timeout=10.0)  # the bot takes 0.5 s: past 0.2
            return str(reply.action), time.monotonic() - start
        finally:
            await client.aclose()

    with raw_server(bot) as address:
        action, took = asyncio.run(scenario())
    assert action != "" and took >= 0.45


def test_a_late_reply_is_discarded_by_the_next_request_on_the_loop() -> None:
    bot = Sleepy({1: 0.4})

    async def scenario() -> tuple[int, list[int]]:
        client = await _client(address)
        try:
            with pytest.raises(BotTimeoutError):
                await _decide(client, timeout=0.1)
            await asyncio.sleep(0.5)  # the late reply arrives meanwhile
            reply = await _decide(client, timeout=5.0)
            return reply.request_id, [d.request_id for d in client.discarded]
        finally:
            await client.aclose()

    with raw_server(bot) as address:
        answered, discarded = asyncio.run(scenario())
    assert len(bot.seen) == 2 and answered == bot.seen[1] and discarded == [bot.seen[0]]


def test_cancelling_a_waiting_decision_is_a_cancel_not_a_timeout() -> None:
    bot = Sleepy({1: 0.5})

    async def scenario() -> tuple[bool, list[int], int, int]:
        client = await _client(address)
        try:
            pending = _decide(client, timeout=0.3)
            await asyncio.sleep(0.1)
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            # The cancelled decision's alarm rings at 0.3 s with nothing pending, and its
            # reply comes unasked (a cancel is no timeout: it is not discarded as late).
            await asyncio.sleep(0.6)
            stray = [m.request_id for m in client.unsolicited() if isinstance(m, Decision)]
            reply = await _decide(client, timeout=5.0)
            task = asyncio.current_task()
            assert task is not None
            return pending.cancelled(), stray, reply.request_id, task.cancelling()
        finally:
            await client.aclose()

    with raw_server(bot) as address:
        cancelled, stray, answered, cancelling = asyncio.run(scenario())
    assert cancelled and stray == [bot.seen[0]] and answered == bot.seen[1]
    assert cancelling == 0
