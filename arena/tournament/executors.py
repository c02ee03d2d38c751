"""Where series run: an executor takes series tasks and plays them, reporting as they finish.

The local executor is the default. A referee process plays its series as tasks of one event
loop (:func:`~arena.tournament.runner.play_series_tasks`); with a concurrency above one it
runs a referee process per core (:mod:`.process_executor`), each playing its share of the
series at once, so that ``--concurrency N`` uses up to N cores. Bots are separate processes
or containers either way. A distributed executor implements the same :class:`Executor`
protocol.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol

from arena.tournament.runner import (
    ACTIVE,
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    play_series_tasks,
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
    """Series on this machine: ``concurrency`` at once. Above one, in referee processes (one
    per core, each playing its share of the series on its event loop); ``processes=False``:
    all of them on one event loop of this process (one core)."""

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
        # The loop runs in its own thread so that Ctrl-C reaches this one, which stops the
        # run the same way whatever the loop is doing.
        done: Future[list[SeriesOutcome]] = Future()

        def serve() -> None:
            try:
                done.set_result(
                    asyncio.run(
                        play_series_tasks(
                            tasks,
                            concurrency=self.concurrency,
                            stop=stop,
                            on_game=on_game,
                            on_series=on_series,
                        )
                    )
                )
            except BaseException as exc:
                done.set_exception(exc)

        loop_thread = threading.Thread(target=serve, name="kryt-series-loop", daemon=True)
        loop_thread.start()
        try:
            while not done.done():
                loop_thread.join(timeout=0.5)
            return done.result()
        except BaseException:
            # Stop first, then kill: a game disrupted by the kill sees the flag and is not
            # recorded (it is replayed by ``resume``).
            stop.set()
            ACTIVE.close_all()
            loop_thread.join()
            raise
