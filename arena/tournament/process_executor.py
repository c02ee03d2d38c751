"""Series in referee processes: one per core, so ``--concurrency N`` uses up to N cores
(threads of one process would share one: the referee's Python work holds the GIL). This
process is one of them and spawns the others (workers). With more series at once than
cores, each process plays its share together, as tasks of one event loop
(:func:`~arena.tournament.runner.play_series_tasks`): a worker is handed them in batches of
that size. A worker spends ~0.4 s of CPU importing before it can play, so this process
plays up to all N series at once until the workers say they are ready.

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
- a worker that dies (a crash, the OOM killer) breaks the pool: the other workers stop
  their games (through the stop flag), and the series of every batch the pool failed come
  back ``interrupted`` with the reason and the games recorded, once those workers have
  ended, so the run ends with the resume command instead of a traceback; this process plays
  the series not yet handed out.
- workers are born with SIGINT, SIGTERM and SIGHUP blocked (ignored, then unblocked, once
  they start): a Ctrl-C during their imports is not theirs to act on.
- this process's own series stop as with ``-j 1``: the stop flag first, then every bot of
  this process is killed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TextIO

from arena.tournament.runner import (
    ACTIVE,
    NOT_STARTED,
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    close_databases,
    play_series_tasks,
)
from referee.record import GameRecord
from sandbox.backend import stop_live_bots
from sandbox.death import show_warning_line

NOT_STARTED_DEAD_REFEREE = "not started (a referee process died)"

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
"""What stops a run (``kryt tournament`` acts on each as on Ctrl-C); workers ignore them."""

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
        finished is returned (see :class:`~arena.tournament.executors.Executor`).

        This process is one of the referee processes, so N of them spawn N - 1 workers.
        A worker spends ~0.4 s of CPU importing before it can play: until it is ready,
        this process plays its series too, on an event loop of its own thread (up to the
        whole concurrency at once); each worker that becomes ready takes its share, one
        batch at a time, and this process keeps the rest."""
        if not tasks:
            return []
        referees = min(self.concurrency, self.processes, len(tasks))
        work = _Work(tasks, self.concurrency, share=self.concurrency // referees)
        # The callbacks run in a thread of their own, never on this process's event loop:
        # a slow one (a refit, a database read riding out an outage) would hold up the
        # other series' games there, and a bot's clock with them.
        reporter = _Reporter(on_game, on_series)
        game = reporter.game if on_game is not None else None
        outcomes: list[SeriesOutcome] = []
        collected = threading.Lock()

        def report(outcome: SeriesOutcome) -> None:
            with collected:
                outcomes.append(outcome)
            reporter.series(outcome)

        with _WarningsOnce() as shown, reporter:
            pool = _Pool(referees - 1, work, on_game=game, shown=shown)
            here: Future[None] = Future()
            local = threading.Thread(
                target=_play_here,
                args=(work, stop, game, report, here),
                name="kryt-series-loop",
                daemon=True,
            )
            try:
                pool.start()
                local.start()
                while pool.pending or not here.done():
                    if stop.is_set():
                        pool.stop()
                    waiting: set[Future[Any]] = {*pool.pending}
                    if not here.done():
                        waiting.add(here)
                    # Short waits while workers start: a ready one gets its batch at once.
                    timeout = 0.5 if pool.all_ready() else 0.02
                    done, _ = wait(waiting, timeout=timeout, return_when=FIRST_COMPLETED)
                    for outcome in pool.collect(done):
                        report(outcome)
                    failure = here.exception() if here.done() else None
                    if failure is not None:  # this process's loop: a lost database, or ours
                        raise failure
                    if reporter.failure is not None:
                        raise reporter.failure
                    if not stop.is_set():
                        pool.refill()
            except BaseException:
                stop.set()  # Ctrl-C: the games in progress are not recorded (resume replays them)
                pool.stop()
                # Stop first, then kill: a game disrupted by the kill sees the flag and is not
                # recorded (it is replayed by ``resume``).
                ACTIVE.close_all()
                raise
            finally:
                if local.ident is not None:
                    local.join()
                pool.close()
            for outcome in pool.lost_outcomes():
                report(outcome)
            # Left when the run stopped, or when the pool broke after this process's loop
            # had ended (while that loop runs, it plays what the pool cannot).
            why = NOT_STARTED if stop.is_set() else f"{NOT_STARTED_DEAD_REFEREE}; resume it"
            for outcome in work.not_started(why):
                report(outcome)
        if reporter.failure is not None:
            raise reporter.failure
        return outcomes


class _Work:
    """The series not yet handed to a referee, and how many of them this process may play
    at once: the whole concurrency, less ``share`` for each worker ready to play (all of it
    again once the pool has broken)."""

    def __init__(self, tasks: Sequence[SeriesTask], concurrency: int, *, share: int) -> None:
        self.concurrency = concurrency
        self.share = share
        self._left = deque(tasks)
        self._ready = 0
        self._broken = False
        self._lock = threading.Lock()

    def take(self, count: int) -> tuple[SeriesTask, ...]:
        """Up to ``count`` series (none when none is left)."""
        with self._lock:
            return tuple(self._left.popleft() for _ in range(min(count, len(self._left))))

    def give_back(self, batch: tuple[SeriesTask, ...]) -> None:
        """Put back series taken but never started, first in line."""
        with self._lock:
            self._left.extendleft(reversed(batch))

    def worker_ready(self) -> None:
        with self._lock:
            self._ready += 1

    def ready_workers(self) -> int:
        with self._lock:
            return 0 if self._broken else self._ready

    def broken(self) -> bool:
        with self._lock:
            return self._broken

    def pool_broken(self) -> None:
        with self._lock:
            self._broken = True

    def slots_here(self) -> int:
        """How many series this process may play at once now."""
        return self.concurrency - self.share * self.ready_workers()

    def not_started(self, why: str) -> list[SeriesOutcome]:
        """Every series never handed out, as ``interrupted`` for the reason ``why``."""
        with self._lock:
            left, self._left = list(self._left), deque()
        return [SeriesOutcome(task.series_id, "interrupted", 0, why) for task in left]


class _Reporter:
    """Calls ``on_game`` and ``on_series`` in a thread of its own, in the order reported
    (so, one at a time): the first exception one raises is kept in :attr:`failure` for the
    run to raise, and nothing more is called after it."""

    def __init__(
        self, on_game: GameCallback | None, on_series: Callable[[SeriesOutcome], None] | None
    ) -> None:
        self._on_game = on_game
        self._on_series = on_series
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="kryt-reporter", daemon=True)
        self.failure: BaseException | None = None

    def game(self, series_id: int, number: int, record: GameRecord) -> None:
        on_game = self._on_game
        if on_game is not None:
            self._calls.put(lambda: on_game(series_id, number, record))

    def series(self, outcome: SeriesOutcome) -> None:
        on_series = self._on_series
        if on_series is not None:
            self._calls.put(lambda: on_series(outcome))

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            if self.failure is None:
                try:
                    call()
                except BaseException as exc:  # raised by the run, in its own thread
                    self.failure = exc

    def __enter__(self) -> _Reporter:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        """Every call reported is made before the run returns; when the run raises, only
        for a while (a callback waiting on a lost database stops with the run's stop)."""
        self._calls.put(None)
        self._thread.join(None if kind is None else 10.0)


def _play_here(
    work: _Work,
    stop: threading.Event,
    on_game: GameCallback | None,
    report: Callable[[SeriesOutcome], None],
    done: Future[None],
) -> None:
    """This process's referee: series from ``work`` on one event loop, as many at once as
    :meth:`_Work.slots_here` allows, until none is left or the run stops."""
    try:
        asyncio.run(_serve_here(work, stop, on_game, report))
        done.set_result(None)
    except BaseException as exc:
        done.set_exception(exc)


async def _serve_here(
    work: _Work,
    stop: threading.Event,
    on_game: GameCallback | None,
    report: Callable[[SeriesOutcome], None],
) -> None:
    running: set[asyncio.Future[list[SeriesOutcome]]] = set()
    while True:
        while not stop.is_set() and len(running) < work.slots_here():
            taken = work.take(1)
            if not taken:
                break
            series = play_series_tasks(
                taken, concurrency=1, stop=stop, on_game=on_game, on_series=report
            )
            running.add(asyncio.ensure_future(series))
        if not running:
            return
        done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for finished in done:
            finished.result()  # a failure that ends the run (a lost database) is raised


class _WarningsOnce:
    """While a run lasts, each warning text is shown once, whichever referee process raised
    it: every referee that starts an untrusted bot without isolation warns about it."""

    def __init__(self) -> None:
        self._shown: set[str] = set()
        self._lock = threading.Lock()
        self._previous: Callable[..., None] | None = None

    def first_time(self, text: str) -> bool:
        with self._lock:
            if text in self._shown:
                return False
            self._shown.add(text)
            return True

    def _show(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        assert self._previous is not None
        if file is None and not self.first_time(str(message)):
            return
        self._previous(message, category, filename, lineno, file, line)

    def __enter__(self) -> _WarningsOnce:
        self._previous = warnings.showwarning
        warnings.showwarning = self._show
        return self

    def __exit__(self, *exc: object) -> None:
        if warnings.showwarning == self._show:
            assert self._previous is not None
            warnings.showwarning = self._previous


class _Pool:
    """The worker processes of a run (``size`` of them, none when 0): each, once ready,
    is given one batch of ``work.share`` series at a time; the games they report."""

    def __init__(
        self, size: int, work: _Work, *, on_game: GameCallback | None, shown: _WarningsOnce
    ) -> None:
        self.size = size
        self.work = work
        self.pending: set[Future[list[SeriesOutcome]]] = set()
        self.played: Counter[int] = Counter()
        """Games the workers recorded, by series (counted by the relay)."""
        self._batches: dict[Future[list[SeriesOutcome]], tuple[SeriesTask, ...]] = {}
        self._lost: list[tuple[tuple[SeriesTask, ...], str]] = []
        if size == 0:
            return
        # spawn, not fork: the parent has gRPC and database threads that a fork would copy
        # in an unknown state.
        context = multiprocessing.get_context("spawn")
        _start_resource_tracker()
        self._stop_flag = context.RawValue(ctypes.c_bool, False)
        self._games = context.Queue()
        self._relay = threading.Thread(
            target=_relay_games,
            args=(self._games, on_game, shown, work, self.played),
            name="kryt-game-relay",
            daemon=True,
        )
        self._relay.start()
        self._executor = ProcessPoolExecutor(
            size,
            mp_context=context,
            initializer=_start_worker,
            initargs=(self._stop_flag, self._games, os.getpid(), on_game is not None),
        )

    def start(self) -> None:
        """Start every worker now (the pool starts one per task submitted): each says when
        it is ready, through the relay.

        The workers are born with the signals that stop a run blocked: Ctrl-C reaches the
        whole process group, and one that came while a worker was still importing printed
        its KeyboardInterrupt traceback (SIGTERM, SIGHUP killed it). The worker ignores them
        before it unblocks them; this process's mask is restored at once (a signal that
        came meanwhile is delivered then, or to another thread)."""
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            for _ in range(self.size):
                future = self._executor.submit(_started)
                self._batches[future] = ()
                self.pending.add(future)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def all_ready(self) -> bool:
        """Every worker is ready, or none ever will be (the pool is broken)."""
        return self.work.broken() or self.work.ready_workers() >= self.size

    def refill(self) -> None:
        """Hand a batch to each ready worker without one (batches are not queued in the
        pool: a referee that becomes free takes the next, whichever it is)."""
        busy = sum(1 for batch in self._batches.values() if batch)
        while busy < self.work.ready_workers():
            batch = self.work.take(self.work.share)
            if not batch:
                return
            try:
                future = self._executor.submit(_play, batch)
            except BrokenProcessPool:
                # A worker died between batches (none of ours was running to say so): this
                # batch never started, and this process plays it with the rest.
                self.work.give_back(batch)
                self.work.pool_broken()
                return
            self._batches[future] = batch
            self.pending.add(future)
            busy += 1

    def collect(self, done: Iterable[Future[Any]]) -> list[SeriesOutcome]:
        """The outcomes of the finished batches among ``done``."""
        outcomes: list[SeriesOutcome] = []
        for future in done:
            if future not in self._batches:
                continue
            self.pending.discard(future)
            batch = self._batches.pop(future)
            error = None if future.cancelled() else future.exception()
            if isinstance(error, BrokenProcessPool):
                # A dead worker breaks the pool, and the pool fails the batches of every
                # worker; the others would play theirs on (they ignore the pool's SIGTERM):
                # they stop now, and what is left plays in this process. Their outcomes wait
                # for the workers to end, so that every game they recorded is counted.
                self.work.pool_broken()
                self.stop()
                self._lost.append((batch, str(error)))
                continue
            outcomes.extend(_outcomes(future, batch))
        return outcomes

    def lost_outcomes(self) -> list[SeriesOutcome]:
        """After :meth:`close`: the series of the batches the broken pool failed, as
        ``interrupted``, with the games their workers recorded."""
        return [
            SeriesOutcome(
                task.series_id,
                "interrupted",
                self.played[task.series_id],
                f"its referee process died ({why}); resume it",
            )
            for batch, why in self._lost
            for task in batch
        ]

    def stop(self) -> None:
        """Ask every worker to stop its games and bots."""
        if self.size:
            self._stop_flag.value = True

    def close(self) -> None:
        """Wait for the workers to end (after :meth:`stop`, at once) and the relay."""
        if self.size == 0:
            return
        for future in self.pending:
            future.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._games.put(None)
        self._relay.join(timeout=10)
        # A worker killed while writing may hold the queue's lock: never wait on the
        # queue's feeder for it when this process exits.
        self._games.cancel_join_thread()
        self._games.close()


def _started() -> list[SeriesOutcome]:
    """A worker's first task: nothing (submitting it makes the pool start the worker)."""
    return []


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


@dataclass(frozen=True, slots=True)
class _Ready:
    """A worker has imported what it needs and can play."""

    pid: int


def _relay_games(
    games: Any,
    on_game: GameCallback | None,
    shown: _WarningsOnce,
    work: _Work,
    played: Counter[int],
) -> None:
    """Count the workers' finished games (``played``) and hand them to ``on_game`` in this
    process, show their warnings, each once, and count the workers ready, until told to
    end."""
    while True:
        try:
            item = games.get()
        except (EOFError, OSError):
            return
        if item is None:
            return
        if isinstance(item, _Ready):
            work.worker_ready()
        elif isinstance(item, _WarningLine):
            if shown.first_time(item.message):
                show_warning_line(item.message, UserWarning, "", 0)
        else:
            series_id, number, record = item
            played[series_id] += 1
            if on_game is not None and record is not None:
                on_game(series_id, number, record)


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
    # The parent decides, through stop_flag (it stops on each of these as on Ctrl-C). They
    # were blocked from birth (see _Pool.start): ignored first, then unblocked, so one that
    # came during the imports is discarded.
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    warnings.showwarning = _send_warning  # shown by the runner, once for all workers
    _stop_flag = stop_flag
    _games = games if report_games else None
    _queue = games
    threading.Thread(
        target=_watch, args=(stop_flag, parent), name="kryt-worker-watch", daemon=True
    ).start()
    atexit.register(_exit_without_teardown)  # registered last, so it runs first
    if games is not None:
        games.put(_Ready(os.getpid()))


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
    """Stop this worker's games and bots when the run stops or its process disappears
    (watched after a stop too: an idle worker waits on the pool's queue for good once its
    parent is killed)."""
    while True:
        if stop_flag.value and not _local_stop.is_set():
            _local_stop.set()
            ACTIVE.close_all()
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
    """Every game is counted by the runner; its record is sent only when it wants them."""
    if _queue is not None:
        _queue.put((series_id, number, record if _games is not None else None))


def _play(batch: tuple[SeriesTask, ...]) -> list[SeriesOutcome]:
    """A batch of series in a worker, all at once on its event loop (imported there by name:
    module-level, picklable)."""
    return asyncio.run(
        play_series_tasks(batch, concurrency=len(batch), stop=_local_stop, on_game=_report_game)
    )
