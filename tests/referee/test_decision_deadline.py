"""The decision deadline of :class:`referee.client.AsyncBotClient` (its :class:`Deadline`):
one alarm per client, moved only when a deadline comes sooner, with the semantics of
``asyncio.timeout_at`` around each decision (a timeout at the deadline, a late reply
discarded by the next request, a cancel of the task still a cancel)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from referee.client import AsyncBotClient, BotTimeoutError, Deadline, Reply
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

T = TypeVar("T")

CLOCK = Clock(move_ms=1000, bank_ms=10_000)
HANDSHAKE = Handshake(
    protocol_version=PROTOCOL_VERSION,
    referee_version="test",
    games=1,
    opponent_name="x",
    time_control=TimeControl(move_ms=1000, bank_ms=10_000),
)


HOLD = -1.0
"""A delay that lasts until the test calls ``release()``: a reply that must come after the
referee gave up does so however busy the machine (a fixed delay could lose that race)."""


class Sleepy:
    """A raw bot that answers the first legal action, after the delay (seconds) set for the
    request's number (0: at once; HOLD: until released); remembers every request id it saw."""

    def __init__(self, delays: dict[int, float]) -> None:
        self.delays = delays
        self.seen: list[int] = []
        self.lock = threading.Lock()
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()

    async def wait_seen(self, count: int) -> None:
        """Until the bot has seen ``count`` requests (a busy machine may deliver them late)."""
        deadline = time.monotonic() + 30
        while len(self.seen) < count:
            assert time.monotonic() < deadline, f"the bot saw {len(self.seen)} request(s)"
            await asyncio.sleep(0.01)

    def __call__(self, message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            return [HandshakeReply(PROTOCOL_VERSION, "sleepy", "1", "test")]
        if isinstance(message, DecisionRequest):
            with self.lock:
                self.seen.append(message.request_id)
                n = len(self.seen)
            delay = self.delays.get(n, 0.0)
            if delay == HOLD:
                self.released.wait(30)
            else:
                time.sleep(delay)
            return [Decision(message.request_id, str(message.view.legal_actions[0]))]
        return []


async def _client(address: str) -> AsyncBotClient:
    client = AsyncBotClient(address)
    await client.handshake(HANDSHAKE, timeout=30)
    return client


def _decide(client: AsyncBotClient, timeout: float) -> asyncio.Task[Reply]:
    view = Game.new(seed=5, dealer=1).view(0)
    return asyncio.create_task(client.decide(view, CLOCK, game_number=1, timeout=timeout))


def test_a_shorter_deadline_after_a_longer_one_still_times_out_on_time() -> None:
    """The alarm set for a long deadline is moved to the sooner one."""
    bot = Sleepy({2: HOLD})

    async def scenario() -> tuple[float, BotTimeoutError, int]:
        client = await _client(address)
        try:
            await _decide(client, timeout=30.0)  # arms the alarm 30 s away
            start = time.monotonic()
            with pytest.raises(BotTimeoutError) as err:
                await _decide(client, timeout=0.15)
            took = time.monotonic() - start
            await bot.wait_seen(2)  # for the request id in the message
            task = asyncio.current_task()
            assert task is not None
            return took, err.value, task.cancelling()
        finally:
            bot.release()
            await client.aclose()

    with raw_server(bot) as address:
        took, error, cancelling = asyncio.run(scenario())
    # The reply was held back: only an alarm can have ended the wait, and well before the
    # 30 s one armed first (the bound is loose: a busy machine may ring it late).
    assert 0.15 <= took < 10
    assert error.reason is GameEndReason.TIMEOUT
    assert str(error) == f"no decision within 0.150s (request {bot.seen[1]})"
    assert cancelling == 0  # the deadline's cancel is taken back, as asyncio.timeout does


def test_an_alarm_left_from_a_shorter_deadline_does_not_end_a_longer_decision() -> None:
    """The alarm rings at an earlier decision's deadline and is set again for the pending
    one: a decision that takes longer than that earlier deadline is not cut short."""
    bot = Sleepy({2: 3.0})

    async def scenario() -> tuple[str, float]:
        client = await _client(address)
        try:
            # Answered at once (2 s leave room for a busy machine); the alarm stays 2 s away.
            await _decide(client, timeout=2.0)
            start = time.monotonic()
            reply = await _decide(client, timeout=30.0)  # the bot takes 3 s: past the 2 s
            return str(reply.action), time.monotonic() - start
        finally:
            await client.aclose()

    with raw_server(bot) as address:
        action, took = asyncio.run(scenario())
    assert action != "" and took >= 2.95


def test_a_late_reply_is_discarded_by_the_next_request_on_the_loop() -> None:
    bot = Sleepy({1: HOLD})

    async def scenario() -> tuple[int, list[int]]:
        client = await _client(address)
        try:
            try:
                with pytest.raises(BotTimeoutError):
                    await _decide(client, timeout=0.1)
            finally:
                bot.release()  # the reply comes late, after the timeout
            # The late reply precedes the next one on the stream: the next request finds it.
            reply = await _decide(client, timeout=30.0)
            return reply.request_id, [d.request_id for d in client.discarded]
        finally:
            await client.aclose()

    with raw_server(bot) as address:
        answered, discarded = asyncio.run(scenario())
    assert len(bot.seen) == 2 and answered == bot.seen[1] and discarded == [bot.seen[0]]


def test_cancelling_a_waiting_decision_is_a_cancel_not_a_timeout() -> None:
    bot = Sleepy({1: HOLD})

    async def scenario() -> tuple[bool, list[int], int, int]:
        client = await _client(address)
        try:
            # Cancelled 0.1 s in, long before its 3 s deadline (room for a busy machine).
            pending = _decide(client, timeout=3.0)
            await asyncio.sleep(0.1)
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            # The cancelled decision's alarm rings at 3 s with nothing pending, then its
            # reply comes unasked (a cancel is no timeout: it is not discarded as late).
            await asyncio.sleep(3.5)
            bot.release()
            stray: list[int] = []
            deadline = time.monotonic() + 30
            while not stray:
                assert time.monotonic() < deadline, "the held reply never came"
                await asyncio.sleep(0.01)
                stray = [m.request_id for m in client.unsolicited() if isinstance(m, Decision)]
            reply = await _decide(client, timeout=30.0)
            task = asyncio.current_task()
            assert task is not None
            return pending.cancelled(), stray, reply.request_id, task.cancelling()
        finally:
            bot.release()
            await client.aclose()

    with raw_server(bot) as address:
        cancelled, stray, answered, cancelling = asyncio.run(scenario())
    assert cancelled and stray == [bot.seen[0]] and answered == bot.seen[1]
    assert cancelling == 0


# ---------------------------------------------------------------------------- Deadline alone


class CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that counts the timers scheduled on it."""

    timers = 0

    def call_at(  # type: ignore[override]  # counts, then calls the same method
        self, when: float, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        self.timers += 1
        return super().call_at(when, callback, *args, context=context)


def _run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> tuple[T, int]:
    loop = CountingLoop()
    try:
        return loop.run_until_complete(scenario()), loop.timers
    finally:
        loop.close()


async def _wait(deadline: Deadline, when: float, seconds: float) -> str:
    """Sleep ``seconds`` under a deadline at ``when``: "done", "timeout" or "cancelled"."""
    deadline.start(when)
    try:
        await asyncio.sleep(seconds)
        return "done"
    except asyncio.CancelledError:
        if deadline.passed():
            return "timeout"
        return "cancelled"
    finally:
        deadline.stop()


def test_a_deadline_cancels_the_wait_and_takes_its_cancel_back() -> None:
    async def scenario() -> tuple[str, float, int]:
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop)
        start = loop.time()
        outcome = await _wait(deadline, start + 0.05, 5.0)
        task = asyncio.current_task()
        assert task is not None
        return outcome, loop.time() - start, task.cancelling()

    (outcome, took, cancelling), _ = _run(scenario)
    # The upper bound only tells the alarm from the 5 s sleep (loose for a busy machine).
    assert outcome == "timeout" and 0.05 <= took < 4.0 and cancelling == 0


def test_one_timer_serves_many_waits_under_later_deadlines() -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop)
        outcomes = [await _wait(deadline, loop.time() + 30.0 + i, 0) for i in range(1000)]
        deadline.close()
        return outcomes

    outcomes, timers = _run(scenario)
    assert outcomes == ["done"] * 1000
    assert timers <= 2  # asyncio.timeout_at would have scheduled 1000


def test_a_sooner_deadline_moves_the_alarm_and_a_later_one_is_waited_for() -> None:
    async def scenario() -> tuple[str, str, float]:
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop)
        assert await _wait(deadline, loop.time() + 30.0, 0) == "done"  # alarm 30 s away
        sooner = await _wait(deadline, loop.time() + 0.05, 5.0)  # moved: times out
        # A yield under an alarm 1 s away (a shorter one could ring in a busy machine's
        # pause before the yield returns).
        assert await _wait(deadline, loop.time() + 1.0, 0) == "done"
        start = loop.time()
        # Past the old alarm (1 s) but within this wait's own deadline (10 s).
        later = await _wait(deadline, start + 10.0, 2.0)
        return sooner, later, loop.time() - start

    (sooner, later, took), _ = _run(scenario)
    assert sooner == "timeout" and later == "done" and took >= 2.0


def test_a_cancel_from_outside_is_not_taken_for_the_deadline() -> None:
    async def scenario() -> tuple[str, str, int]:
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop)
        task = asyncio.current_task()
        assert task is not None
        loop.call_later(0.02, task.cancel)
        before = await _wait(deadline, loop.time() + 5.0, 5.0)
        task.uncancel()
        # Cancelled from outside at the very time the deadline passes (both timers are due
        # in the same iteration of the loop, before the task runs again): the cancel wins.
        when = loop.time() + 0.05
        loop.call_at(when, task.cancel)
        both = await _wait(deadline, when, 5.0)
        return before, both, task.cancelling()

    (before, both, cancelling), _ = _run(scenario)
    assert before == "cancelled" and both == "cancelled"
    assert cancelling == 1  # the outside cancel is still counted; the deadline's was taken back


def test_an_alarm_after_the_wait_ended_cancels_nothing() -> None:
    async def scenario() -> str:
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop)
        # An alarm 1 s away (room for a busy machine's pause before the yield returns).
        assert await _wait(deadline, loop.time() + 1.0, 0) == "done"
        await asyncio.sleep(1.5)  # the alarm rings with nothing pending
        return "slept"

    outcome, _ = _run(scenario)
    assert outcome == "slept"
