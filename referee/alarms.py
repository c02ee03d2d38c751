"""Alarms for event loops, rung from one thread of their own.

A decision's deadline is seconds away and almost never rings, yet a timer kept in an
asyncio loop costs on every turn of that loop: the loop reads its clock twice and hands
the kernel a timeout for each ``select``. A referee playing one series turns its loop about
six times a decision, so a loop with a timer spent 10-15 µs more CPU a decision than one
without (``benchmarks/referee_overhead.py``, interleaved runs at one stream). Here the
alarms wait in a heap served by one daemon thread, which sleeps until the soonest and then
hands the callback to its loop with ``call_soon_threadsafe``: the loops keep no timer, and
the thread wakes only when an alarm is due or a sooner one is set.

    alarm = ring_at(loop, loop.time() + 5.0, callback)   # callback() runs in loop's thread
    alarm.cancel()                                       # in the loop's thread: never runs

The clock is ``time.monotonic``, the clock of asyncio's own loops; :func:`keeps_our_clock`
tells whether a loop uses it (a loop with a clock of its own must keep its timers itself).
An alarm rings at its time or later, never earlier; how much later is how long the thread
and then the loop take to be scheduled (a fraction of a millisecond on a quiet machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["Alarm", "keeps_our_clock", "ring_at"]

_COMPACT_AT: Final = 1024
"""Heap size beyond which cancelled alarms are dropped at once rather than when due."""


class Alarm:
    """One pending call of ``callback`` in its loop's thread at ``when`` (``time.monotonic``)."""

    __slots__ = ("_callback", "_loop", "cancelled", "when")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, when: float, callback: Callable[[], object]
    ) -> None:
        self._loop = loop
        self.when = when
        self._callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        """The callback will not run (call it in the loop's thread, as the callback runs)."""
        self.cancelled = True

    def _due(self) -> None:
        # In the loop's thread, where cancel() is called: no race with a cancel.
        if not self.cancelled:
            self.cancelled = True
            self._callback()


_LONGEST_WAIT = 3600.0
"""Seconds the alarm thread sleeps at most before it looks at its heap again."""


class _AlarmThread:
    """The heap of pending alarms and the one thread that rings them (per process)."""

    def __init__(self) -> None:
        self._lock = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, alarm: Alarm) -> None:
        with self._lock:
            heap = self._heap
            if len(heap) >= _COMPACT_AT:
                heap[:] = [entry for entry in heap if not entry[2].cancelled]
                heapq.heapify(heap)
            heapq.heappush(heap, (alarm.when, next(self._order), alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="kryt-alarms", daemon=True)
                self._thread.start()
            elif heap[0][2] is alarm:
                self._lock.notify()  # sooner than what the thread sleeps for

    def _serve(self) -> None:
        lock, heap = self._lock, self._heap
        while True:
            with lock:
                while True:
                    while heap and heap[0][2].cancelled:
                        heapq.heappop(heap)
                    if not heap:
                        lock.wait()
                        continue
                    wait = heap[0][0] - time.monotonic()
                    if wait > 0:
                        # Bounded: Condition.wait raises OverflowError past TIMEOUT_MAX (an
                        # alarm centuries ahead, or at infinity), which would end this thread
                        # and with it every alarm of the process.
                        lock.wait(min(wait, _LONGEST_WAIT))
                        continue
                    alarm = heapq.heappop(heap)[2]
                    break
            # Outside the lock: the loop's thread may be adding an alarm meanwhile.
            with contextlib.suppress(RuntimeError):  # that loop is closed: nothing to ring
                alarm._loop.call_soon_threadsafe(alarm._due)


_alarms = _AlarmThread()


def _after_fork_in_child() -> None:
    # The thread is not copied by fork, and its lock may have been held: start afresh
    # (the parent's alarms belong to the parent's loops).
    global _alarms
    _alarms = _AlarmThread()


os.register_at_fork(after_in_child=_after_fork_in_child)


def ring_at(loop: asyncio.AbstractEventLoop, when: float, callback: Callable[[], object]) -> Alarm:
    """Call ``callback()`` in ``loop``'s thread once ``time.monotonic()`` reaches ``when``,
    unless the alarm is cancelled first (``math.inf``: never). Callable from any thread;
    raises ValueError for a ``when`` that is not a number (NaN), which would ring at once
    and disorder the alarms around it."""
    if when != when:
        raise ValueError(f"an alarm needs a time, got {when!r}")
    alarm = Alarm(loop, when, callback)
    _alarms.add(alarm)
    return alarm


def keeps_our_clock(loop: asyncio.AbstractEventLoop) -> bool:
    """True when ``loop.time()`` is ``time.monotonic()`` (asyncio's own loops), the clock of
    :func:`ring_at`."""
    return type(loop).time is asyncio.BaseEventLoop.time
