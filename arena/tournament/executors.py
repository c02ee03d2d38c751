"""Where series run: an executor takes series tasks and plays them, reporting as they finish.

The local executor is the default: one series at a time in this process, or with a
concurrency above one a referee process per series slot (:mod:`.process_executor`), so
that N series use N cores. Bots are separate processes or containers either way. A
distributed executor implements the same :class:`Executor` protocol.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from arena.tournament.runner import (
    ACTIVE,
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    play_series_task,
)

SeriesCallback = Callable[[SeriesOutcome], None]


class Executor(Protocol):
    """Runs series tasks until all are done or ``stop`` is set."""

    def run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        stop: threading.Event,
        on_game: GameCallback | None = None,
        on_series: SeriesCallback | None = None,
    ) -> list[SeriesOutcome]:
        """Play every task; return their outcomes (interrupted ones when stopped)."""
        ...


class LocalExecutor:
    """Series on this machine: ``concurrency`` at once, in worker processes when that is
    more than one (``processes=False``: threads of this process, sharing one core)."""

    def __init__(self, concurrency: int, *, processes: bool | None = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self.processes = concurrency > 1 if processes is None else processes

    def run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        stop: threading.Event,
        on_game: GameCallback | None = None,
        on_series: SeriesCallback | None = None,
    ) -> list[SeriesOutcome]:
        """Play the tasks; Ctrl-C sets ``stop``, kills every bot and returns what finished."""
        if self.processes:
            from arena.tournament.process_executor import ProcessExecutor

            return ProcessExecutor(self.concurrency).run(
                tasks, stop=stop, on_game=on_game, on_series=on_series
            )
        outcomes: list[SeriesOutcome] = []
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="kryt-series")
        pending: set[Future[SeriesOutcome]] = {
            pool.submit(play_series_task, task, stop=stop, on_game=on_game) for task in tasks
        }
        try:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = future.result()
                    outcomes.append(outcome)
                    if on_series is not None:
                        on_series(outcome)
        except BaseException:
            # Stop first, then kill: a game disrupted by the kill sees the flag and is not
            # recorded (it is replayed by ``resume``).
            stop.set()
            for future in pending:
                future.cancel()
            ACTIVE.close_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return outcomes
