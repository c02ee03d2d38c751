"""Mutation review of :mod:`referee.alarms` (the deadline alarms) and :mod:`referee.synchronous`
(the blocking facade ``drive``).

What is asserted is what the modules' docstrings promise, derived from them and not from the
code's output:

- ``ring_at(loop, when, cb)`` calls ``cb()`` in ``loop``'s thread once ``time.monotonic()``
  reaches ``when``: never earlier (checked exactly, the callback reads the same clock), and
  "soon" after only with seconds of slack (a busy 2-core machine); an alarm set in the past
  rings at the loop's next turns, never inside ``ring_at`` itself; a cancelled alarm never
  rings, even when it was already handed to its loop; ``ring_at`` works from any thread and
  for many loops at once; a sooner alarm set while the thread sleeps toward a later one wakes
  it. Alarms of one loop ring in the order of their times (one heap, one thread, the loop's
  FIFO of callbacks), which is what the "sooner set later rings first" promise amounts to.
- One daemon thread per process ("one daemon thread"): an interpreter exits with an alarm
  pending, a forked child gets a working thread, a loop closed with alarms pending or a
  callback that raises stops nothing (the error goes to the loop's exception handler).
- Cancelled alarms do not pile up beyond ``_COMPACT_AT`` (its docstring): their callbacks are
  released, while live alarms set before the compaction still ring.
- ``keeps_our_clock`` is True for asyncio's loops and False for a loop with its own ``time``.
- ``drive`` returns the coroutine's value, lets its exceptions through, and raises
  LoopNeededError (a RuntimeError) after closing the coroutine when it suspends or asks for
  the running loop.

Process-wide effects (fork, interpreter exit, an alarm that breaks the thread) are checked in
a child interpreter, so the shared alarm thread of the test process is never put at risk.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import math
import random
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import referee.alarms
from referee.alarms import Alarm, keeps_our_clock, ring_at
from referee.synchronous import LoopNeededError, drive

pytestmark = pytest.mark.timeout(120)

ROOT = Path(referee.alarms.__file__).resolve().parents[1]
"""The tree the module under test comes from (a mutant's worktree when one is tested)."""

SOON = 10.0
"""Seconds within which an alarm that is due must have rung (a busy machine: generous)."""


def _run_child(script: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter that imports the tree under test."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _alarm_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kryt-alarms"]


class _Log:
    """What rang: (label, monotonic time, thread ident), in ringing order."""

    def __init__(self) -> None:
        self.rung: list[tuple[int, float, int]] = []

    def entry(self, label: int) -> Callable[[], None]:
        def ring() -> None:
            self.rung.append((label, time.monotonic(), threading.get_ident()))

        return ring


async def _until(predicate: Callable[[], bool], limit: float = 30.0) -> None:
    """Let the loop run until ``predicate()`` holds (or ``limit`` seconds pass)."""
    end = time.monotonic() + limit
    while not predicate() and time.monotonic() < end:
        await asyncio.sleep(0.01)


# --------------------------------------------------------------------------- not early


def test_many_alarms_ring_each_not_before_its_time_in_time_order_in_the_loops_thread() -> None:
    rng = random.Random(20261205)
    log = _Log()

    async def scenario() -> tuple[list[float], float]:
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        # Dense (a few ms apart, some within 50 ms of the next) and some in the past.
        whens = [now + rng.uniform(-0.2, 0.4) for _ in range(150)]
        for label, when in enumerate(whens):
            ring_at(loop, when, log.entry(label))
        all_set = time.monotonic()
        await _until(lambda: len(log.rung) == len(whens))
        return whens, all_set

    whens, all_set = asyncio.run(scenario())
    here = threading.get_ident()
    assert sorted(label for label, _, _ in log.rung) == list(range(len(whens)))
    for label, at, thread in log.rung:
        assert at >= whens[label], f"alarm {label} rang {whens[label] - at:.6f}s early"
        assert thread == here
    # One heap, one thread, one FIFO per loop: the alarms that were all pending at once ring
    # in the order of their times (one already past when set may ring before an earlier one
    # set after it).
    rung_whens = [whens[label] for label, _, _ in log.rung if whens[label] > all_set]
    assert len(rung_whens) > 50
    assert rung_whens == sorted(rung_whens)
    assert log.rung[-1][1] - max(max(whens), all_set) < SOON


def test_a_sooner_alarm_set_while_the_thread_sleeps_wakes_it_and_is_not_early() -> None:
    log = _Log()

    async def scenario() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        far = ring_at(loop, time.monotonic() + 60.0, log.entry(0))
        await asyncio.sleep(0.05)  # the thread now sleeps toward the far alarm (or sooner)
        when = time.monotonic() + 0.2
        set_at = time.monotonic()
        ring_at(loop, when, log.entry(1))
        await _until(lambda: bool(log.rung), limit=2 * SOON)
        far.cancel()
        return when, set_at

    when, set_at = asyncio.run(scenario())
    assert [label for label, _, _ in log.rung] == [1]
    at = log.rung[0][1]
    assert at >= when
    assert at - set_at < SOON  # woken for it, not at the 60 s alarm


def test_re_arming_from_inside_a_callback_and_from_another_thread() -> None:
    """An alarm set by a callback (as the deadline re-arms) and one set from a thread
    that runs no loop both ring in the loop's thread, not before their time."""
    log = _Log()
    whens: dict[int, float] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()

        def first() -> None:
            log.entry(0)()
            whens[1] = time.monotonic() + 0.1
            ring_at(loop, whens[1], log.entry(1))

        whens[0] = time.monotonic() + 0.05
        ring_at(loop, whens[0], first)

        def elsewhere() -> None:
            whens[2] = time.monotonic() + 0.15
            ring_at(loop, whens[2], log.entry(2))

        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
        await _until(lambda: len(log.rung) == 3)

    asyncio.run(scenario())
    here = threading.get_ident()
    assert sorted(label for label, _, _ in log.rung) == [0, 1, 2]
    for label, at, thread in log.rung:
        assert at >= whens[label]
        assert thread == here


def test_loops_in_several_threads_each_get_their_own_alarms() -> None:
    results: dict[int, tuple[int, list[tuple[int, float, int]], list[float]]] = {}
    errors: list[BaseException] = []

    def one_loop(index: int) -> None:
        rng = random.Random(index)
        log = _Log()

        async def scenario() -> list[float]:
            loop = asyncio.get_running_loop()
            now = time.monotonic()
            whens = [now + rng.uniform(-0.05, 0.3) for _ in range(40)]
            for label, when in enumerate(whens):
                ring_at(loop, when, log.entry(label))
            await _until(lambda: len(log.rung) == len(whens))
            return whens

        try:
            whens = asyncio.run(scenario())
            results[index] = (threading.get_ident(), log.rung, whens)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=one_loop, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert not errors
    assert len(_alarm_threads()) == 1  # one thread rings for every loop of the process
    for ident, rung, whens in results.values():
        assert sorted(label for label, _, _ in rung) == list(range(len(whens)))
        for label, at, rung_in in rung:
            assert at >= whens[label]
            assert rung_in == ident


# --------------------------------------------------------------------------- the past


def test_an_alarm_set_in_the_past_rings_soon_but_never_inside_ring_at() -> None:
    log = _Log()

    async def scenario() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        set_at = time.monotonic()
        ring_at(loop, set_at - 1000.0, log.entry(0))
        ran_inside = bool(log.rung)  # the loop has not turned since
        await _until(lambda: bool(log.rung), limit=2 * SOON)
        return ran_inside, set_at

    ran_inside, set_at = asyncio.run(scenario())
    assert not ran_inside
    assert [label for label, _, _ in log.rung] == [0]
    assert log.rung[0][1] - set_at < SOON
    assert log.rung[0][2] == threading.get_ident()


def test_a_due_alarm_wakes_a_loop_that_has_nothing_else_to_do() -> None:
    """The loop keeps no timer of its own: the thread must wake it (call_soon_threadsafe)."""
    loop = asyncio.new_event_loop()
    log = _Log()
    try:
        when = time.monotonic() + 0.1
        ring_at(loop, when, log.entry(0))
        ring_at(loop, when + 0.01, loop.stop)
        loop.call_later(3 * SOON, loop.stop)  # a watchdog only: it must not be what ends it
        started = time.monotonic()
        loop.run_forever()  # nothing else due before then: only the alarm thread wakes it
        took = time.monotonic() - started
    finally:
        loop.close()
    assert [label for label, _, _ in log.rung] == [0]
    assert log.rung[0][1] >= when
    assert took < SOON


# --------------------------------------------------------------------------- cancelling


def test_cancelled_alarms_never_ring_and_the_others_do() -> None:
    log = _Log()

    async def scenario() -> dict[int, float]:
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        whens = {label: now + 0.01 * label for label in range(40)}
        alarms = {label: ring_at(loop, when, log.entry(label)) for label, when in whens.items()}
        for label in range(0, 40, 3):
            alarms[label].cancel()
        # A sentinel after all of them: rung last (same thread, same loop, later time).
        done = loop.create_future()
        ring_at(loop, now + 0.6, lambda: done.set_result(None))
        await asyncio.wait_for(done, 30)
        await asyncio.sleep(0.05)
        return whens

    whens = asyncio.run(scenario())
    kept = [label for label in range(40) if label % 3]
    assert sorted(label for label, _, _ in log.rung) == kept
    for label, at, _ in log.rung:
        assert at >= whens[label]


def test_an_alarm_cancelled_after_its_thread_handed_it_to_the_loop_does_not_ring() -> None:
    """``cancel`` in the loop's thread wins even when the alarm is already queued there."""
    loop = asyncio.new_event_loop()
    log = _Log()
    try:
        alarm = ring_at(loop, time.monotonic() - 1.0, log.entry(0))
        # Block the loop's thread until the alarm thread has queued the call in the loop.
        ready = getattr(loop, "_ready", None)
        end = time.monotonic() + SOON
        while time.monotonic() < end:
            if ready is not None and len(ready) > 0:
                break
            time.sleep(0.01)
        alarm.cancel()
        loop.run_until_complete(asyncio.sleep(0.1))
    finally:
        loop.close()
    assert log.rung == []


def test_an_alarm_of_a_closed_loop_never_runs_and_the_thread_keeps_ringing() -> None:
    closed = asyncio.new_event_loop()
    log = _Log()
    ring_at(closed, time.monotonic() + 0.05, log.entry(0))
    ring_at(closed, time.monotonic() - 1.0, log.entry(1))
    closed.close()

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        when = time.monotonic() + 0.2
        ring_at(loop, when, log.entry(2))
        await _until(lambda: bool(log.rung), limit=2 * SOON)
        await asyncio.sleep(0.05)
        return when

    when = asyncio.run(scenario())
    assert [label for label, _, _ in log.rung] == [2]
    assert log.rung[0][1] >= when


# --------------------------------------------------------------------------- errors


def test_a_callback_that_raises_goes_to_the_loops_handler_and_stops_nothing() -> None:
    log = _Log()
    handled: list[BaseException | None] = []

    def boom() -> None:
        raise ValueError("from an alarm")

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: handled.append(context.get("exception")))
        now = time.monotonic()
        ring_at(loop, now + 0.05, boom)
        ring_at(loop, now + 0.05, boom)  # the same time: two entries, both handled
        ring_at(loop, now + 0.15, log.entry(0))
        await _until(lambda: bool(log.rung), limit=2 * SOON)
        return now + 0.15

    when = asyncio.run(scenario())
    assert len(handled) == 2
    assert all(isinstance(exc, ValueError) and str(exc) == "from an alarm" for exc in handled)
    assert [label for label, _, _ in log.rung] == [0]
    assert log.rung[0][1] >= when
    assert len(_alarm_threads()) == 1 and _alarm_threads()[0].is_alive()


# --------------------------------------------------------------------------- many cancelled


class _Noop:
    """A callback that can be watched with a weak reference."""

    def __call__(self) -> None:
        raise AssertionError("a cancelled alarm rang")


def test_cancelled_alarms_do_not_pile_up_and_live_ones_survive_the_compaction() -> None:
    log = _Log()
    many = 3 * referee.alarms._COMPACT_AT

    async def scenario() -> tuple[int, dict[int, float]]:
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        # Live alarms set before any compaction.
        whens = {label: now + 0.5 + 0.002 * label for label in range(100)}
        for label, when in whens.items():
            ring_at(loop, when, log.entry(label))
        # A guard sooner than the cancelled ones: the thread never reaches them by itself.
        guard = ring_at(loop, now + 1800.0, _Noop())
        watched: list[weakref.ref[_Noop]] = []
        for index in range(many):
            callback = _Noop()
            watched.append(weakref.ref(callback))
            ring_at(loop, now + 3600.0 + index, callback).cancel()
        del callback
        gc.collect()
        alive = sum(ref() is not None for ref in watched)
        await _until(lambda: len(log.rung) == len(whens))
        guard.cancel()
        return alive, whens

    alive, whens = asyncio.run(scenario())
    assert alive <= referee.alarms._COMPACT_AT, f"{alive} of {many} cancelled callbacks kept"
    assert sorted(label for label, _, _ in log.rung) == list(range(100))
    for label, at, _ in log.rung:
        assert at >= whens[label]


def test_alarms_still_ring_in_time_order_after_a_compaction() -> None:
    """Cancelled and live alarms interleaved in time and in setting order, enough of them
    for a compaction: what is left must still be one heap (time order, none early)."""
    rng = random.Random(1500)
    log = _Log()
    count = referee.alarms._COMPACT_AT + 500

    async def scenario() -> tuple[dict[int, float], set[int], float]:
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        whens = {label: now + 1.0 + rng.uniform(0.0, 0.5) for label in range(count)}
        live = set()
        for label, when in whens.items():
            alarm = ring_at(loop, when, log.entry(label))
            if label % 4:
                alarm.cancel()
            else:
                live.add(label)
        all_set = time.monotonic()
        await _until(lambda: len(log.rung) == len(live))
        await asyncio.sleep(0.05)
        return whens, live, all_set

    whens, live, all_set = asyncio.run(scenario())
    assert sorted(label for label, _, _ in log.rung) == sorted(live)
    for label, at, _ in log.rung:
        assert at >= whens[label]
    rung_whens = [whens[label] for label, _, _ in log.rung if whens[label] > all_set]
    assert len(rung_whens) > len(live) // 2
    assert rung_whens == sorted(rung_whens)


# --------------------------------------------------------------------------- the process


def test_an_interpreter_with_a_pending_alarm_exits_and_the_thread_is_a_daemon() -> None:
    child = _run_child(
        """
        import asyncio, time
        from referee.alarms import ring_at

        async def main():
            loop = asyncio.get_running_loop()
            rung = loop.create_future()
            ring_at(loop, time.monotonic() + 0.01, lambda: rung.set_result(None))
            await asyncio.wait_for(rung, 30)
            ring_at(loop, time.monotonic() + 3600.0, lambda: None)  # pending at exit

        asyncio.run(main())
        print("done")
        """,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "done"
    assert all(thread.daemon for thread in _alarm_threads())


def test_a_forked_child_rings_its_own_alarms() -> None:
    child = _run_child(
        """
        import asyncio, os, signal, time
        from referee.alarms import ring_at

        async def once(after):
            loop = asyncio.get_running_loop()
            rung = loop.create_future()
            when = time.monotonic() + after
            ring_at(loop, when, lambda: rung.set_result(time.monotonic() >= when))
            return await asyncio.wait_for(rung, 20)

        assert asyncio.run(once(0.01))  # the parent's thread runs
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # never outlive the test
            try:
                os._exit(0 if asyncio.run(once(0.05)) else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """,
        timeout=90,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "0"


def test_an_alarm_far_in_the_future_does_not_stop_the_others() -> None:
    child = _run_child(
        """
        import asyncio, math, time
        from referee.alarms import ring_at

        async def main():
            loop = asyncio.get_running_loop()
            far = ring_at(loop, math.inf, lambda: None)  # "never": it must only never ring
            farther = ring_at(loop, 1e300, lambda: None)  # past threading.TIMEOUT_MAX
            await asyncio.sleep(0.1)
            rung = loop.create_future()
            ring_at(loop, time.monotonic() + 0.05, lambda: rung.set_result(None))
            try:
                await asyncio.wait_for(rung, 5)
                print("rang")
            except TimeoutError:
                print("never rang")
            far.cancel()
            farther.cancel()

        asyncio.run(main())
        """,
        timeout=60,
    )
    assert child.stdout.strip() == "rang", child.stderr[-2000:]


def test_an_alarm_without_a_time_is_refused() -> None:
    """NaN compares false with everything: it would ring at once and disorder the heap."""
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="an alarm needs a time, got nan"):
            ring_at(loop, math.nan, lambda: None)
    finally:
        loop.close()


# --------------------------------------------------------------------------- clocks


def test_keeps_our_clock_for_asyncios_loops_only() -> None:
    class OwnClock(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return time.monotonic() + 1000.0

    class Subclass(asyncio.SelectorEventLoop):
        pass

    loops: list[asyncio.AbstractEventLoop] = [
        asyncio.new_event_loop(),
        Subclass(),
        OwnClock(),
    ]
    try:
        assert [keeps_our_clock(loop) for loop in loops] == [True, True, False]
        # The promise behind it: the loop's clock is the alarms' clock.
        before = time.monotonic()
        at = loops[0].time()
        assert before <= at <= time.monotonic()
    finally:
        for loop in loops:
            loop.close()


def test_an_alarm_object_keeps_its_time() -> None:
    loop = asyncio.new_event_loop()
    try:
        when = time.monotonic() + 3600.0
        alarm = ring_at(loop, when, _Noop())
        assert isinstance(alarm, Alarm) and alarm.when == when and not alarm.cancelled
        alarm.cancel()
        assert alarm.cancelled
    finally:
        loop.close()


# --------------------------------------------------------------------------- drive


def test_drive_returns_the_value_through_awaits_of_finished_coroutines() -> None:
    async def leaf(x: int) -> int:
        return x * 2

    async def middle(x: int) -> int:
        return await leaf(x) + await leaf(x + 1)

    async def top() -> tuple[int, None]:
        async def nothing() -> None:
            return None

        await nothing()
        return await middle(3), None

    assert drive(top()) == (6 + 8, None)


def test_drive_lets_the_coroutines_own_errors_through() -> None:
    async def bad_value() -> None:
        raise ValueError("bad")

    async def other_runtime_error() -> None:
        raise RuntimeError("something else went wrong")

    with pytest.raises(ValueError, match="bad"):
        drive(bad_value())
    with pytest.raises(RuntimeError, match="something else went wrong") as caught:
        drive(other_runtime_error())
    assert not isinstance(caught.value, LoopNeededError)


def test_drive_refuses_a_coroutine_that_asks_for_the_running_loop() -> None:
    async def wants_loop() -> None:
        asyncio.get_running_loop()

    with pytest.raises(LoopNeededError) as caught:
        drive(wants_loop())
    assert isinstance(caught.value, RuntimeError)
    assert "no running event loop" in str(caught.value)  # what it tripped on is told


def test_drive_closes_a_coroutine_that_suspends_and_names_it() -> None:
    cleaned: list[str] = []

    async def suspends_once() -> int:
        try:
            await asyncio.sleep(0)  # a bare yield to the loop
            return 1
        finally:
            cleaned.append("finally")

    coro: Coroutine[Any, Any, int] = suspends_once()
    with pytest.raises(LoopNeededError) as caught:
        drive(coro)
    assert cleaned == ["finally"]  # closed: its cleanup ran, nothing left suspended
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    assert "suspends_once" in str(caught.value)
    assert "event loop" in str(caught.value)
