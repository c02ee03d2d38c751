"""Series in worker processes: one referee process per core, so ``--concurrency N`` uses up
to N cores (threads of one process would share one: the referee's Python work holds the GIL).
With more series at once than cores, each process plays its share together, as tasks of one
event loop (:func:`~arena.tournament.runner.play_series_tasks`): it is handed them in
batches of that size.

A series task is plain data that names its database (the same tasks travel to Dask workers),
so a worker needs nothing from this process but the task. What a worker sends back:
its games as they end (for the progress bar and the live lines) and its series' outcomes.

No orphans, whatever happens to this process:
- Ctrl-C (SIGINT reaches the whole foreground process group): workers ignore it; this
  process sets the shared stop flag, each worker stops its games and its bots, and the
  outcomes come back as ``interrupted``. Workers ignore SIGTERM too (systemd sends it to
  every process of the service) and SIGHUP (a closed terminal sends it to the whole
  session): ``kryt tournament`` stops on them as on Ctrl-C.
- The stop flag is a shared byte, set without a lock and read by each worker's watcher
  every :data:`WATCH_SECONDS`: a ``multiprocessing.Event`` waits, when set, for every
  worker that was waiting on it to wake, so one worker killed while waiting hung the
  runner for good (and its heartbeat kept the tournament's lease).
- kill -9 of this process: each worker watches its parent and, once it is gone, stops its
  bots and exits (within about half a second).
- a worker that dies (a crash, the OOM killer): its series come back ``interrupted`` with
  the reason, so the run ends with the resume command instead of a traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TextIO

from arena.tournament.runner import (
    ACTIVE,
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    close_databases,
)
from sandbox.backend import stop_live_bots
from sandbox.death import show_warning_line

WATCH_SECONDS = 0.1
"""How often a worker looks at the stop flag and whether its parent is still there."""

# Set in each worker by _start_worker (module globals are per process).
_stop_flag: ctypes.c_bool | None = None
_games: Any = None
_queue: Any = None
_local_stop = threading.Event()


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class ProcessExecutor:
    """Series in worker processes: ``concurrency`` at once, in at most one process per core
    (``processes``: how many at most; default, the cores available)."""

    def __init__(self, concurrency: int, *, processes: int | None = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if processes is not None and processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        self.concurrency = concurrency
        self.processes = processes or available_cores()

    def run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        stop: threading.Event,
        on_game: GameCallback | None = None,
        on_series: Callable[[SeriesOutcome], None] | None = None,
    ) -> list[SeriesOutcome]:
        """Play the tasks; Ctrl-C sets ``stop``, every worker stops its bots, and what
        finished is returned (see :class:`~arena.tournament.executors.Executor`)."""
        if not tasks:
            return []
        # spawn, not fork: the parent has gRPC and database threads that a fork would copy
        # in an unknown state.
        context = multiprocessing.get_context("spawn")
        _start_resource_tracker()
        stop_flag = context.RawValue(ctypes.c_bool, False)
        games = context.Queue()
        outcomes: list[SeriesOutcome] = []
        relay = threading.Thread(
            target=_relay_games, args=(games, on_game), name="kryt-game-relay", daemon=True
        )
        relay.start()
        workers = min(self.concurrency, self.processes, len(tasks))
        each = -(-self.concurrency // workers)  # series at once in one process
        batches = [tuple(tasks[i : i + each]) for i in range(0, len(tasks), each)]
        pool = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(stop_flag, games, os.getpid(), on_game is not None),
        )
        futures: dict[Future[list[SeriesOutcome]], tuple[SeriesTask, ...]] = {
            pool.submit(_play, batch): batch for batch in batches
        }
        pending = set(futures)
        try:
            while pending:
                if stop.is_set():
                    stop_flag.value = True
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    for outcome in _outcomes(future, futures[future]):
                        outcomes.append(outcome)
                        if on_series is not None:
                            on_series(outcome)
        except BaseException:
            stop.set()  # Ctrl-C: the games in progress are not recorded (resume replays them)
            raise
        finally:
            if stop.is_set():
                stop_flag.value = True
            for future in pending:
                future.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            games.put(None)
            relay.join(timeout=10)
            # A worker killed while writing may hold the queue's lock: never wait on the
            # queue's feeder for it when this process exits.
            games.cancel_join_thread()
            games.close()
        return outcomes


def _outcomes(
    future: Future[list[SeriesOutcome]], batch: tuple[SeriesTask, ...]
) -> list[SeriesOutcome]:
    """The outcomes of a finished batch; a dead worker is ours: its series can be resumed."""
    if future.cancelled():
        return [
            SeriesOutcome(task.series_id, "interrupted", 0, "not started (the run stopped)")
            for task in batch
        ]
    try:
        return future.result()
    except BrokenProcessPool as exc:
        return [
            SeriesOutcome(
                task.series_id, "interrupted", 0, f"its referee process died ({exc}); resume it"
            )
            for task in batch
        ]


@dataclass(frozen=True, slots=True)
class _WarningLine:
    """A warning a worker raised, for this process to show (once, whichever worker sent it:
    every worker that starts a bot warns about it, as a single process does once)."""

    message: str


def _relay_games(games: Any, on_game: GameCallback | None) -> None:
    """Hand the workers' finished games to ``on_game`` in this process and show their
    warnings, each once, until told to end."""
    shown: set[str] = set()
    while True:
        try:
            item = games.get()
        except (EOFError, OSError):
            return
        if item is None:
            return
        if isinstance(item, _WarningLine):
            if item.message not in shown:
                shown.add(item.message)
                show_warning_line(item.message, UserWarning, "", 0)
        elif on_game is not None:
            on_game(*item)


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (a process of its own, in this process's
    group, which the queue's semaphores need) ignoring SIGHUP, as it ignores SIGINT and
    SIGTERM: a closed terminal killed it, and it was relaunched with a traceback per
    semaphore. An ignored signal stays ignored in the program it runs."""
    from multiprocessing import resource_tracker

    if threading.current_thread() is not threading.main_thread():
        resource_tracker.ensure_running()  # signals can only be set on the main thread
        return
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        resource_tracker.ensure_running()
    finally:
        signal.signal(signal.SIGHUP, previous)


def _start_worker(stop_flag: ctypes.c_bool, games: Any, parent: int, report_games: bool) -> None:
    """Runs once in each worker process before its first task."""
    global _stop_flag, _games, _queue
    # The parent decides, through stop_flag (it stops on each of these as on Ctrl-C).
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    warnings.showwarning = _send_warning  # shown by the runner, once for all workers
    _stop_flag = stop_flag
    _games = games if report_games else None
    _queue = games
    threading.Thread(
        target=_watch, args=(stop_flag, parent), name="kryt-worker-watch", daemon=True
    ).start()
    atexit.register(_exit_without_teardown)  # registered last, so it runs first


def _exit_without_teardown() -> None:
    """A worker's last step: end the process once what matters is closed, skipping the
    interpreter's teardown of every module it imported (SQLAlchemy, pydantic, gRPC), which
    took ~0.15 s that every run at ``--concurrency`` above one waited for at its end.

    When atexit handlers run, multiprocessing has already flushed the queue of finished
    games (its finalizers run first). The exit status is always 0: the pool never reads
    it (it watches each worker's sentinel and the message a worker sends when it ends)."""
    stop_live_bots()
    close_databases()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _watch(stop_flag: ctypes.c_bool, parent: int) -> None:
    """Stop this worker's games and bots when the run stops or its process disappears."""
    while True:
        if stop_flag.value:
            _local_stop.set()
            ACTIVE.close_all()
            return
        if os.getppid() != parent:  # the runner was killed: leave nothing running
            _local_stop.set()
            ACTIVE.close_all()
            os._exit(1)
        time.sleep(WATCH_SECONDS)


def _send_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """This worker's :data:`warnings.showwarning`: the runner shows it (see _WarningLine)."""
    if _queue is None or file is not None:
        show_warning_line(message, category, filename, lineno, file, line)
        return
    _queue.put(_WarningLine(str(message)))


def _report_game(series_id: int, number: int, record: object) -> None:
    if _games is not None:
        _games.put((series_id, number, record))


def _play(batch: tuple[SeriesTask, ...]) -> list[SeriesOutcome]:
    """A batch of series in a worker, all at once on its event loop (imported there by name:
    module-level, picklable)."""
    import asyncio

    from arena.tournament.runner import play_series_tasks

    return asyncio.run(
        play_series_tasks(batch, concurrency=len(batch), stop=_local_stop, on_game=_report_game)
    )
