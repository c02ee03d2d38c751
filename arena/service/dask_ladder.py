"""Ladder series on a Dask cluster (``kryt arena serve --executor dask``).

The server keeps scheduling, leases and rating refits; each series it launches becomes one
Dask task running :func:`play_ladder_on_worker`, which opens the database itself, starts
both bots in the worker's own sandboxes and commits every game with the bots' output, like a
tournament series on :class:`arena.tournament.dask_executor.DaskExecutor` (whose connection,
LocalCluster and worker sweep this reuses). A worker lost mid-series is retried by the
scheduler; the series resumes from the database, so nothing is lost or counted twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from arena.db import open_database
from arena.db.url import backend_of, mask_url
from arena.service.play import LadderOutcome, play_ladder_series
from arena.service.settings import ServiceSettings
from arena.tournament.dask_executor import (
    DaskExecutor,
    DaskExecutorError,
    _on_this_machine,
    dask,
    stop_watch,
)

__all__ = ["DaskLadder", "play_ladder_on_worker"]


def play_ladder_on_worker(
    series_id: int,
    database_url: str,
    settings: ServiceSettings,
    label_prefix: str,
    stop_name: str,
    claimed_by: str | None = None,
) -> LadderOutcome:
    """The Dask task: play what is missing of one ladder series on this worker.

    Module-level over plain data, so it pickles by reference. A stop of the server (the
    scheduler's Event ``stop_name``) reaches the series between games.
    """
    with stop_watch(stop_name, f"ladder-{series_id}") as stop:
        if stop is None:
            return LadderOutcome(series_id, "interrupted", 0, "stopped before it started")
        db = open_database(database_url, create=False)
        try:
            return play_ladder_series(
                series_id,
                db=db,
                settings=settings,
                label_prefix=label_prefix,
                stop=stop,
                claimed_by=claimed_by,
            )
        finally:
            db.close()


class DaskLadder:
    """Submits ladder series to a Dask cluster and reports each outcome to a callback."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        database_url: str,
        label_prefix: str,
        claimed_by: str | None = None,
    ) -> None:
        """``claimed_by``: the server holding the series' leases (its games are recorded
        only while it does, see :func:`~arena.service.play.play_ladder_series`)."""
        ladder = settings.ladder
        self._settings = settings
        self._url = database_url
        self._label = label_prefix
        self._claimed_by = claimed_by
        self.executor = DaskExecutor(
            ladder.scheduler or None, workers=ladder.dask_workers, retries=2
        )
        self._stop_name = f"kryt-ladder-stop-{id(self):x}-{threading.get_native_id()}"
        self._futures: dict[int, Any] = {}
        """Series submitted whose ``done`` callback has not returned yet."""
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)

    def prepare(self) -> int:
        """Connect, check every worker can run the sandbox, sweep what dead servers left on
        the workers; returns how many sandboxes were removed."""
        scheduler = self._settings.ladder.scheduler or None
        if backend_of(self._url) == "sqlite" and not _on_this_machine(scheduler):
            raise DaskExecutorError(
                f"workers of the scheduler at {scheduler} cannot reach the SQLite file "
                f"{mask_url(self._url)}; use a PostgreSQL database for a cluster of machines"
            )
        sandbox = self._settings.sandbox
        self.executor.worker_sandboxes(sandbox.backend, sandbox.allow_unsafe)
        dask.Event(self._stop_name, client=self.executor.client).clear()
        return self.executor.sweep_workers(self._label)

    def reach(self) -> None:
        """Raise when the cluster cannot be reached; a client that closed itself (its
        scheduler stayed away longer than distributed tries to reconnect) is replaced by a
        new connection first."""
        self.executor.forget_closed_client()
        self.executor.client  # noqa: B018 - connects

    def submit(self, series_id: int, done: Callable[[int, LadderOutcome | None], None]) -> None:
        """Play a series on the cluster; ``done(series_id, outcome or None on failure)``.
        Raises when the cluster cannot be reached (see :meth:`reach`)."""
        self.reach()
        future = self.executor.client.submit(
            play_ladder_on_worker,
            series_id,
            self._url,
            self._settings,
            self._label,
            self._stop_name,
            self._claimed_by,
            key=f"ladder-series-{series_id}-{threading.get_native_id()}-{id(self):x}",
            pure=False,
            retries=2,
        )
        with self._lock:
            self._futures[series_id] = future

        def finished(f: Any) -> None:
            try:
                outcome: LadderOutcome | None = f.result()
            except BaseException:
                outcome = None
            try:
                done(series_id, outcome)
            finally:  # only now is the series settled (its end recorded): see stop()
                with self._lock:
                    self._futures.pop(series_id, None)
                    self._settled.notify_all()

        future.add_done_callback(finished)

    def stop(self, timeout: float) -> None:
        """Ask running series to stop after their current game, wait (at most ``timeout``
        seconds) until each one's end is recorded, then disconnect.

        The wait is for the ``done`` callbacks, not only the tasks: distributed runs the
        callbacks one after another on a thread of its own, and a client closed while one
        is still queued would turn that series' outcome into a failure."""
        try:
            try:
                dask.Event(self._stop_name, client=self.executor.client).set()
            except Exception:  # the scheduler is gone: its series resume when the lease ends
                return
            deadline = time.monotonic() + timeout
            with self._lock:
                while self._futures and (left := deadline - time.monotonic()) > 0:
                    self._settled.wait(left)
        finally:
            self.executor.close()
