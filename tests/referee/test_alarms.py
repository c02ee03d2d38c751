"""The alarm thread behind decision deadlines (:mod:`referee.alarms`): loops keep no timer,
alarms ring in their loop's thread, never early, and a cancelled one never rings."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from referee.alarms import keeps_our_clock, ring_at
from referee.client import Deadline
from tests.referee.test_decision_deadline import CountingLoop


class OwnClockLoop(CountingLoop):
    """A loop whose clock is not ``time.monotonic`` (as uvloop's is its own)."""

    def time(self) -> float:
        return time.monotonic() + 1000.0


def test_an_alarm_rings_in_its_loops_thread_not_before_its_time() -> None:
    async def scenario() -> tuple[float, float, int]:
        loop = asyncio.get_running_loop()
        rung = loop.create_future()
        when = time.monotonic() + 0.05
        ring_at(loop, when, lambda: rung.set_result((time.monotonic(), threading.get_ident())))
        at, thread = await asyncio.wait_for(rung, 30)
        return when, at, thread

    loop = CountingLoop()
    try:
        when, at, thread = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert at >= when
    assert thread == threading.get_ident()  # the loop's thread, not the alarm thread's
    assert loop.timers == 1  # wait_for's own: the alarm added none


def test_a_cancelled_alarm_never_rings_and_a_sooner_one_set_later_rings_first() -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        rung: list[str] = []
        done = loop.create_future()
        now = time.monotonic()
        ring_at(loop, now + 0.4, lambda: rung.append("later"))
        cancelled = ring_at(loop, now + 0.1, lambda: rung.append("cancelled"))
        cancelled.cancel()
        # Set while the thread already sleeps toward the 0.4 s alarm: it must wake for it.
        ring_at(loop, now + 0.2, lambda: rung.append("sooner"))
        ring_at(loop, now + 0.6, lambda: done.set_result(None))
        await asyncio.wait_for(done, 30)
        return rung

    assert asyncio.run(scenario()) == ["sooner", "later"]


def test_an_alarm_of_a_closed_loop_is_dropped_and_others_still_ring() -> None:
    closed = asyncio.new_event_loop()
    ring_at(closed, time.monotonic() + 0.05, lambda: None)
    closed.close()

    async def scenario() -> bool:
        loop = asyncio.get_running_loop()
        rung = loop.create_future()
        ring_at(loop, time.monotonic() + 0.2, lambda: rung.set_result(True))
        return await asyncio.wait_for(rung, 30)

    assert asyncio.run(scenario())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
@pytest.mark.timeout(300)
def test_a_forked_child_has_a_working_alarm_thread() -> None:
    # The parent's thread is running (an alarm was set above in this process or here).
    asyncio.run(_ring_once(0.01))
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if an alarm rings within 30 s
        signal.alarm(120)  # a child stuck on a lock inherited from another thread dies
        try:
            os._exit(0 if asyncio.run(_ring_once(0.05)) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


async def _ring_once(after: float) -> bool:
    loop = asyncio.get_running_loop()
    rung = loop.create_future()
    ring_at(loop, time.monotonic() + after, lambda: rung.set_result(True))
    return await asyncio.wait_for(rung, 30)


async def _a_deadline_ends_a_sleep() -> str:
    """A 5 s sleep under a deadline 0.05 s away: "timeout" (or what ended it otherwise)."""
    loop = asyncio.get_running_loop()
    deadline = Deadline(loop)
    deadline.start(loop.time() + 0.05)
    try:
        await asyncio.sleep(5.0)
        return "done"
    except asyncio.CancelledError:
        return "timeout" if deadline.passed() else "cancelled"
    finally:
        deadline.stop()


def test_a_pending_deadline_keeps_no_timer_in_the_loop() -> None:
    loop = CountingLoop()
    try:
        outcome = loop.run_until_complete(_a_deadline_ends_a_sleep())
    finally:
        loop.close()
    assert outcome == "timeout"
    assert loop.timers == 1  # asyncio.sleep's own timer only: the deadline added none


def test_a_loop_with_a_clock_of_its_own_keeps_its_deadline_timers() -> None:
    loop = OwnClockLoop()
    assert not keeps_our_clock(loop) and keeps_our_clock(CountingLoop())
    try:
        outcome = loop.run_until_complete(_a_deadline_ends_a_sleep())
    finally:
        loop.close()
    assert outcome == "timeout"
    assert loop.timers == 2  # the sleep's and the deadline's, on the loop's own clock
