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
  every process of the service): ``kryt tournament`` stops on it as on Ctrl-C.
- kill -9 of this process: each worker watches its parent and, once it is gone, stops its
  bots and exits (within about half a second).
- a worker that dies (a crash, the OOM killer): its series come back ``interrupted`` with
  the reason, so the run ends with the resume command instead of a traceback.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any

from arena.tournament.runner import ACTIVE, GameCallback, SeriesOutcome, SeriesTask
from sandbox.death import show_warning_line

PARENT_POLL_SECONDS = 0.5

# Set in each worker by _start_worker (module globals are per process).
_stop_flag: ProcessEvent | None = None
_games: Any = None
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
        stop_flag = context.Event()
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
                    stop_flag.set()
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
                stop_flag.set()
            for future in pending:
                future.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            games.put(None)
            relay.join(timeout=10)
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


def _relay_games(games: Any, on_game: GameCallback | None) -> None:
    """Hand the workers' finished games to ``on_game`` in this process, until told to end."""
    while True:
        try:
            item = games.get()
        except (EOFError, OSError):
            return
        if item is None:
            return
        if on_game is not None:
            on_game(*item)


def _start_worker(stop_flag: ProcessEvent, games: Any, parent: int, report_games: bool) -> None:
    """Runs once in each worker process before its first task."""
    global _stop_flag, _games
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides, through stop_flag
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    warnings.showwarning = show_warning_line  # one warning: line, as the runner prints
    _stop_flag = stop_flag
    _games = games if report_games else None
    threading.Thread(
        target=_watch, args=(stop_flag, parent), name="kryt-worker-watch", daemon=True
    ).start()


def _watch(stop_flag: ProcessEvent, parent: int) -> None:
    """Stop this worker's games and bots when the run stops or its process disappears."""
    while True:
        if stop_flag.wait(PARENT_POLL_SECONDS):
            _local_stop.set()
            ACTIVE.close_all()
            return
        if os.getppid() != parent:  # the runner was killed: leave nothing running
            _local_stop.set()
            ACTIVE.close_all()
            os._exit(1)


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
