"""Series on a Dask cluster: one task per series, results in the shared database.

Each series is one ``dask.distributed`` task running :func:`play_series_task` on a worker, so
a worker only needs the package installed and access to the database: it fetches both
submissions from there, starts them in its own sandboxes and commits every game itself. The
coordinator (this process) only submits tasks, collects their outcomes as they complete, and
reads progress from the database.

Worker loss: the scheduler re-runs a task whose worker died on another worker, and
:func:`play_series_task` resumes from the database, so a game committed before the loss is
not played again (the database's unique keys are the truth) and one in progress is replayed.

A lost database connection (a PostgreSQL restart): the coordinator's own reads (opening the
database, the games already recorded as the run starts, a series' games as it ends) are
retried as the run's other database work is (``KRYT_DATABASE_RETRY_SECONDS``, one note when it
is lost and one when it is back; the run's stop ends the wait); a progress poll is skipped
meanwhile instead (see :meth:`GameProgress.poll`).

Ctrl-C reaches every process of the terminal's process group, the processes of a local
cluster too (and systemd sends SIGTERM to every process of a service): the workers of a local
cluster ignore both (:func:`dask_setup`), so only the coordinator handles them. It stops the
run and closes the cluster, with distributed's own shutdown messages silenced.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from multiprocessing import resource_tracker
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import distributed
from dask import config as _dask_config
from sqlalchemy.exc import DBAPIError

from arena.db import (
    Database,
    DatabaseUnavailableError,
    counted_games,
    counted_numbers,
    open_database,
    running_counted_numbers,
    stored_record,
)
from arena.db.engine import lost_connection, outage_notes, retry_lost_connection, retry_seconds
from arena.db.url import backend_of, mask_url
from arena.tournament.executors import SeriesCallback
from arena.tournament.runner import (
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    play_series_task,
)
from arena.tournament.scheduler_address import scheduler_address_problem
from sandbox import choose_backend, sweep_leftovers

log = logging.getLogger(__name__)

# distributed's API is only partly annotated (Client, Event, as_completed are not), so it is
# used through this one untyped handle; everything crossing into our code is typed here.
dask: Any = distributed
dask_config: Any = _dask_config

WATCH_SECONDS = 2.0
"""How long a worker's stop watcher long-polls the scheduler before checking its series ended
(a set stop reaches it at once; this only bounds how long the watcher outlives the series)."""


QUIET_LEVEL = logging.CRITICAL + 1
"""The level distributed's loggers are set to when they must say nothing at all."""

WORKER_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""What the processes of a local cluster ignore: the coordinator stops the run on them."""

QUIET_CONFIG = "kryt-quiet-workers"
"""Dask configuration key, set for the workers of a quiet local cluster (see :func:`dask_setup`)."""


def silence_distributed() -> Callable[[], None]:
    """Make distributed's loggers in this process say nothing; returns the function that
    restores their levels."""
    names = ["distributed"] + [
        name for name in list(logging.root.manager.loggerDict) if name.startswith("distributed.")
    ]
    loggers = [logging.getLogger(name) for name in names]
    levels = [(logger, logger.level) for logger in loggers]
    for logger in loggers:
        logger.setLevel(QUIET_LEVEL)

    def restore() -> None:
        for logger, level in levels:
            logger.setLevel(level)

    return restore


@contextmanager
def signals_held() -> Iterator[None]:
    """For the block (a local cluster starting): the processes started meanwhile ignore
    SIGINT and SIGTERM from birth, and those signals reach this process once the block ends.

    Only an ignored signal stays ignored in a new program, so this process ignores them
    for the block; its main thread blocks them too, as do the threads started meanwhile
    (they inherit the mask), so a signal that arrives meanwhile waits, pending, instead of
    being dropped, and is handled as usual (KeyboardInterrupt) when the block ends. Nothing
    is changed off the main thread (signal handlers belong to it)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    # Starting multiprocessing's resource tracker unblocks these signals in the thread that
    # starts it: started now, before they are blocked, it leaves every thread of the block
    # blocking them.
    resource_tracker.ensure_running()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(WORKER_SIGNALS))
    handlers = {signum: signal.signal(signum, signal.SIG_IGN) for signum in WORKER_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, run in each worker process of a local cluster this module starts
    (``preload=[this module]``), in the worker's main thread as it starts.

    Ctrl-C (and SIGTERM from systemd) reaches every process of the process group: the
    worker ignores both, as the referee processes of the local executor do, and the
    coordinator stops the run and closes the cluster. The worker processes started with
    the cluster ignore both from birth already (:func:`signals_held`); this covers a worker
    the nanny restarts later. With :data:`QUIET_CONFIG` set, distributed's loggers of the
    worker say nothing (the coordinator reports what matters in its own lines)."""
    if threading.current_thread() is threading.main_thread():
        for signum in WORKER_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
    if dask_config.get(QUIET_CONFIG, False):
        silence_distributed()


class DaskExecutorError(ValueError):
    """The Dask executor was set up or called wrongly (the message says how)."""


class SchedulerUnavailableError(ConnectionError):
    """No Dask scheduler answered at the given address."""


REFUSED_SECONDS = 2.0
"""How long a scheduler's address may refuse connections (one starting at the same moment
may not listen yet) before a run says nothing listens there. distributed retries a refused
connection until its whole connect timeout (``Client(timeout=...)``, by default
``distributed.comm.timeouts.connect``): it cannot tell an empty port from a slow scheduler."""

_TCP_SCHEMES = frozenset({"tcp", "tls", "ws", "wss"})
"""distributed's address schemes that are a TCP host and port (``inproc``, ``ucx``... are not)."""


def _refused(address: str, seconds: float) -> str | None:
    """Why nothing listens at the scheduler address ``address`` (every TCP connection for
    ``seconds`` refused, unroutable, or to a host name that does not resolve), or None when
    a connection is accepted, is still unanswered (a slow network: distributed's connect
    timeout decides), or the address is not a TCP host and port."""
    try:
        scheme, location = dask.comm.parse_address(address)
        host, port = dask.comm.parse_host_port(location)
    except (ValueError, TypeError):
        return None  # distributed itself says what is wrong with it
    if scheme not in _TCP_SCHEMES:
        return None
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection((host, port), timeout=max(0.05, seconds)):
                return None
        except TimeoutError:
            return None
        except OSError as exc:  # refused, no route, no such host (yet): tried until the deadline
            if time.monotonic() + 0.1 >= deadline:
                reason = exc.strerror or type(exc).__name__
                return f"{reason} (tried for {seconds:g} s)"
        time.sleep(0.1)


def _connect(dask: Any, address: str, timeout: float) -> Any:
    """A client of the scheduler at ``address``, or SchedulerUnavailableError: within about
    :data:`REFUSED_SECONDS` when nothing listens there (the connection is refused), else
    within about ``timeout`` seconds, whatever answers: nothing, a service that accepts and
    never speaks (distributed's own timeout waits for ever then), another protocol (an HTTP
    port read as Dask frames asks for exabytes), or a ``tls://`` address without TLS
    settings. A scheduler that accepts the connection has the whole ``timeout`` to answer."""
    refused = _refused(address, min(REFUSED_SECONDS, timeout))
    if refused is not None:
        raise SchedulerUnavailableError(f"no Dask scheduler listens at {address}: {refused}")
    outcome: list[Any] = []

    def connect() -> None:
        try:
            outcome.append(dask.Client(address, timeout=timeout))
        except BaseException as exc:  # every outcome is reported to the caller below
            outcome.append(exc)

    # A daemon thread: one stuck in a silent server must not keep the process alive.
    worker = threading.Thread(target=connect, name="kryt-dask-connect", daemon=True)
    worker.start()
    worker.join(timeout + 5.0)
    if not outcome:
        raise SchedulerUnavailableError(
            f"no Dask scheduler answered at {address} within {timeout:g} s (something accepts"
            f" connections there but does not speak Dask's protocol)"
        )
    result = outcome[0]
    if isinstance(result, OSError | TimeoutError):
        raise SchedulerUnavailableError(
            f"no Dask scheduler answered at {address} within {timeout:g} s: {result}"
        ) from result
    if isinstance(result, Exception):
        first = (str(result).splitlines() or [""])[0][:200]
        raise SchedulerUnavailableError(
            f"{address} is not a Dask scheduler this run can use ({type(result).__name__}: {first})"
        ) from result
    if isinstance(result, BaseException):
        raise result
    return result


def _first_line(error: BaseException) -> str:
    """``Type: first line of the message`` (clipped) of a worker's error, for one line."""
    text = (str(error).splitlines() or [""])[0][:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# ---------------------------------------------------------------------------- worker side


@contextmanager
def stop_watch(stop_name: str, label: str) -> Iterator[threading.Event | None]:
    """On a worker: a local Event set once the run's scheduler Event ``stop_name`` is set
    (None when it already is), for a series to poll between and after games.

    The scheduler's Event is long-polled by a thread so that a stop reaches a running series
    within one game; the thread ends when the block does."""
    remote = dask.Event(stop_name, client=dask.get_client())
    if remote.is_set():
        yield None
        return
    local = threading.Event()
    ended = threading.Event()

    def watch() -> None:
        while not ended.is_set():
            try:
                if remote.wait(timeout=WATCH_SECONDS):
                    local.set()
                    return
            except Exception:  # scheduler unreachable: the worker is being torn down anyway
                ended.wait(WATCH_SECONDS)

    threading.Thread(target=watch, name=f"kryt-stop-{label}", daemon=True).start()
    try:
        yield local
    finally:
        ended.set()


def play_on_worker(task: SeriesTask, stop_name: str) -> SeriesOutcome:
    """The Dask task: play one series on this worker, stopping when the run's Event is set.

    A module-level function over plain data, so that it pickles by reference; the worker
    imports it from the installed package.
    """
    with stop_watch(stop_name, str(task.series_id)) as stop:
        if stop is None:
            return SeriesOutcome(task.series_id, "interrupted", 0, "stopped before it started")
        return play_series_task(task, stop=stop)


def describe_sandbox(preference: str, allow_unsafe: bool) -> str:
    """Which sandbox backend this machine would use, or ``error: ...`` (run on each worker)."""
    try:
        return choose_backend(preference, allow_unsafe).describe()
    except Exception as exc:  # reported per worker, not raised: one bad machine is news
        return f"error: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------- progress


_ONE_TRY = threading.Event()
_ONE_TRY.set()
"""A ``cancel`` that is already set: :meth:`Database.retrying_call` then tries once, tells
a lost connection as every retried read does (the database's one note per outage), and
raises it without waiting."""


class GameProgress:
    """Counted games of a run's series as seen in the database (workers commit them there).

    ``poll`` reports games of series that are running; ``close`` reports the rest of a
    series whose outcome arrived and forgets it. Each game is reported once; games that were
    already counted when the run began are not reported (as with the local executor).

    The reads of the constructor and of ``close`` ride out a lost database connection
    (:meth:`~arena.db.Database.retrying_call`; setting ``cancel``, the run's stop, ends the
    wait with the DatabaseUnavailableError); ``poll`` is skipped while it is lost.
    """

    def __init__(
        self,
        db: Database,
        tasks: Sequence[SeriesTask],
        *,
        cancel: threading.Event | None = None,
    ) -> None:
        self.db = db
        self.cancel = cancel
        self.tournaments = sorted({t.tournament_id for t in tasks})
        self.open = {t.series_id for t in tasks}
        self.initial = db.retrying_call(
            lambda: self._numbers(self.open),
            what="reading the games already recorded in the run's series",
            cancel=cancel,
        )
        self.seen: dict[int, set[int]] = {sid: set(n) for sid, n in self.initial.items()}

    def _numbers(self, series_ids: Iterable[int]) -> dict[int, set[int]]:
        with self.db.read_session() as session:
            return counted_numbers(series_ids, session=session)

    def _running_numbers(self) -> dict[int, set[int]]:
        with self.db.read_session() as session:
            found = running_counted_numbers(self.tournaments, session=session)
        return {sid: n for sid, n in found.items() if sid in self.open}

    def _report(self, numbers: dict[int, set[int]], on_game: GameCallback | None) -> None:
        fresh = {sid: sorted(n - self.seen.get(sid, set())) for sid, n in numbers.items()}
        fresh = {sid: n for sid, n in fresh.items() if n}
        if not fresh:
            return
        with self.db.read_session() as session:
            for series_id, wanted in sorted(fresh.items()):
                for game in counted_games(series_id, wanted, session=session):
                    self.seen.setdefault(series_id, set()).add(game.number)
                    if on_game is not None:
                        players = tuple(str(s) for s in game.seat_ids)
                        on_game(series_id, game.number, stored_record(game, players))

    def poll(self, on_game: GameCallback | None) -> None:
        """Report the games committed since the last poll in series that are running.

        Skipped, not retried, while the database connection is lost (the database's note
        tells the outage once): waiting would hold up the run's loop (the outcomes that
        arrive, a stop, a lost scheduler), and nothing is lost, as the next poll or
        :meth:`close` reports the games this one did not (each game once)."""
        try:
            self.db.retrying_call(
                lambda: self._report(self._running_numbers(), on_game),
                what="polling the run's progress (skipped until it is back)",
                cancel=_ONE_TRY,
            )
        except (DatabaseUnavailableError, DBAPIError) as exc:
            if not lost_connection(exc):
                raise

    def close(self, series_id: int, on_game: GameCallback | None) -> int:
        """Report the series' games not reported yet, forget it; return games played now.
        Retried across a lost connection (reading and reporting again reports each game
        once)."""
        if series_id not in self.open:
            return 0

        def read_and_report() -> dict[int, set[int]]:
            numbers = self._numbers([series_id])
            self._report(numbers, on_game)
            return numbers

        numbers = self.db.retrying_call(
            read_and_report, what=f"reading the games of series {series_id}", cancel=self.cancel
        )
        self.open.discard(series_id)
        self.seen.pop(series_id, None)
        return len(numbers.get(series_id, set()) - self.initial.pop(series_id, set()))


# ---------------------------------------------------------------------------- coordinator


def _on_this_machine(scheduler: str | None) -> bool:
    """True for a LocalCluster or a scheduler on a loopback address (workers share files)."""
    if scheduler is None:
        return True
    host = urlsplit(scheduler).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


class DaskExecutor:
    """Series as tasks on a Dask cluster (implements :class:`~.executors.Executor`).

    ``scheduler`` is the address of a running scheduler (``tcp://HOST:8786``); with None, a
    LocalCluster of ``workers`` processes (``threads_per_worker`` series each) is started on
    first use. The connection is kept for later runs until :meth:`close` (or use ``with``).
    ``worker_store``, if given, replaces the tasks' submission store path on the workers (by
    default they unpack submissions to the coordinator's store path, which must then be
    writable on every worker machine). ``quiet`` (a command line without ``--verbose``):
    distributed's own log messages (warnings, the tracebacks it logs when a scheduler goes
    away or a cluster shuts down) are silenced in this process from the first connection on,
    for good (a cluster's last words can come as the process exits), and in the workers of
    its local cluster; the run reports what matters. Without ``quiet`` they are silenced from
    an interrupted run until :meth:`close` has shut the cluster down.
    """

    def __init__(
        self,
        scheduler: str | None = None,
        *,
        workers: int = 2,
        threads_per_worker: int = 1,
        retries: int = 2,
        poll_seconds: float = 0.5,
        stop_grace_seconds: float = 60.0,
        connect_timeout: float = 30.0,
        worker_store: str | None = None,
        quiet: bool = False,
    ) -> None:
        problem = None if scheduler is None else scheduler_address_problem(scheduler)
        if problem is not None:
            raise DaskExecutorError(f"{scheduler!r} is not a Dask scheduler address: {problem}")
        for name, value in (("workers", workers), ("threads_per_worker", threads_per_worker)):
            if value < 1:
                raise DaskExecutorError(f"{name} must be >= 1, got {value}")
        if retries < 0:
            raise DaskExecutorError(f"retries must be >= 0, got {retries}")
        for name, seconds in (
            ("poll_seconds", poll_seconds),
            ("stop_grace_seconds", stop_grace_seconds),
            ("connect_timeout", connect_timeout),
        ):
            if not seconds > 0:
                raise DaskExecutorError(f"{name} must be > 0, got {seconds}")
        self.scheduler = scheduler
        self.workers = workers
        self.threads_per_worker = threads_per_worker
        self.retries = retries
        self.poll_seconds = poll_seconds
        self.stop_grace_seconds = stop_grace_seconds
        self.connect_timeout = connect_timeout
        self.worker_store = worker_store
        self.quiet = quiet
        self._cluster: Any = None
        self._client: Any = None
        self._restore_logs: Callable[[], None] | None = None
        self.scheduler_lost = False
        """Set when a run lost its connection to the scheduler (its series are unfinished)."""

    # -- connection

    @property
    def client(self) -> Any:
        """The connected client (connecting, or starting the LocalCluster, on first use)."""
        if self._client is None:
            if self.quiet:
                self._silence()
            if self.scheduler is None:
                # Ctrl-C never reaches a worker, not even while it starts (it ignores the
                # signal from birth), and reaches this process once the cluster is up.
                with signals_held():
                    self._cluster = dask.LocalCluster(
                        n_workers=self.workers,
                        threads_per_worker=self.threads_per_worker,
                        processes=True,
                        dashboard_address=None,
                        # Its HTTP server (health, metrics) on any free loopback port: the
                        # default 8787 may be taken (another cluster), which prints a warning.
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                        preload=[__name__],
                        config={QUIET_CONFIG: self.quiet},
                    )
                    self._client = dask.Client(self._cluster)
            else:
                self._client = _connect(dask, self.scheduler, self.connect_timeout)
        return self._client

    def close(self) -> None:
        """Disconnect (and stop the LocalCluster if this executor started one); distributed's
        loggers silenced for the shutdown are back to their levels afterwards (unless
        ``quiet``)."""
        try:
            if self._client is not None:
                self._client.close()
                self._client = None
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None
        finally:
            if self._restore_logs is not None and not self.quiet:
                self._restore_logs()
                self._restore_logs = None

    def forget_closed_client(self) -> None:
        """Drop a client that closed itself (its scheduler was lost for longer than
        distributed tries to reconnect), and its LocalCluster: the next use of
        :attr:`client` connects (or starts one) anew."""
        if self._client is not None and self._client.status in ("closing", "closed", "failed"):
            self.close()

    def _silence(self) -> None:
        """Silence distributed's loggers in this process (until :meth:`close` unless quiet)."""
        if self._restore_logs is None:
            self._restore_logs = silence_distributed()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- worker preparation

    def worker_sandboxes(self, preference: str, allow_unsafe: bool) -> dict[str, str]:
        """Each worker's sandbox backend (``worker address -> description``).

        Raises DaskExecutorError naming every worker that cannot run the configured sandbox,
        or when no worker is connected, so a run fails before anything is submitted.
        """
        answers = self._ask_workers(
            describe_sandbox,
            preference,
            allow_unsafe,
            failure=f"Dask workers of {self._where()} cannot run this project's code"
            " (install it on them, the same version as here)",
        )
        if not answers:
            raise DaskExecutorError(f"no Dask worker is connected to {self._where()}")
        found = {w: str(a) for w, a in answers.items()}
        bad = {w: d for w, d in found.items() if d.startswith("error:")}
        if bad:
            lines = "; ".join(f"{w}: {d}" for w, d in sorted(bad.items()))
            raise DaskExecutorError(f"sandbox {preference!r} unavailable on workers: {lines}")
        return found

    def sweep_workers(self, label_prefix: str) -> int:
        """Remove sandboxes left on every worker by an earlier crashed run; return the count."""
        answers = self._ask_workers(
            sweep_leftovers, label_prefix, failure="Dask workers could not sweep their leftovers"
        )
        return sum(a for a in answers.values() if isinstance(a, int))

    def _ask_workers(
        self, function: Callable[..., object], *args: object, failure: str
    ) -> dict[str, object]:
        """``function(*args)`` on every connected worker (``worker address -> answer``).

        A worker that raises (one that cannot import this project, say) is named with its
        error in one DaskExecutorError line starting with ``failure``, rather than the first
        error ending the run with a traceback."""
        answers: dict[str, object] = self.client.run(function, *args, on_error="return")
        broken = {w: a for w, a in answers.items() if isinstance(a, BaseException)}
        if broken:
            lines = "; ".join(f"{w}: {_first_line(a)}" for w, a in sorted(broken.items()))
            raise DaskExecutorError(f"{failure}: {lines}")
        return answers

    def _where(self) -> str:
        return self.scheduler or "the local cluster"

    # -- running

    def run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        stop: threading.Event,
        on_game: GameCallback | None = None,
        on_series: SeriesCallback | None = None,
    ) -> list[SeriesOutcome]:
        """Play the tasks on the cluster; ``on_series`` as each ends, ``on_game`` from polls.

        When ``stop`` is set, running series stop after their current game (which is not
        recorded) and report ``interrupted``; what has not reported within the grace period
        is cancelled. Ctrl-C does the same without waiting and re-raises. The coordinator's
        database reads ride out a lost connection (:class:`GameProgress`; opening the
        database too); setting ``stop`` ends such a wait with the DatabaseUnavailableError.
        """
        if not tasks:
            return []
        urls = {t.database_url for t in tasks}
        if len(urls) != 1:
            raise DaskExecutorError(f"tasks name {len(urls)} databases; run them separately")
        ids = [t.series_id for t in tasks]
        if len(set(ids)) != len(ids):
            raise DaskExecutorError(f"a series is given twice: {sorted(ids)}")
        url = urls.pop()
        if backend_of(url) == "sqlite" and not _on_this_machine(self.scheduler):
            raise DaskExecutorError(
                f"workers of the scheduler at {self.scheduler} cannot reach the SQLite file "
                f"{mask_url(url)}; use a PostgreSQL database for a cluster of machines"
            )
        # Retried across a lost connection as a worker's opening is (one note each way, in
        # the notes of the database's URL); the stop ends the wait.
        db = retry_lost_connection(
            lambda: open_database(url, create=False),
            what="opening it",
            window=retry_seconds(),
            notes=outage_notes(mask_url(url)),
            cancel=stop,
        )
        try:
            return self._run(tasks, db=db, stop=stop, on_game=on_game, on_series=on_series)
        finally:
            db.close()

    def _submit(
        self, tasks: Sequence[SeriesTask], stop_name: str
    ) -> tuple[list[Any], dict[str, SeriesTask]]:
        """One future per series; keys are unique per run, so a resumed run never gets a
        result the scheduler still remembers from an earlier one."""
        token = stop_name.rpartition("-")[2]
        futures: list[Any] = []
        submitted: dict[str, SeriesTask] = {}
        for task in tasks:
            shipped = replace(task, store=self.worker_store) if self.worker_store else task
            key = f"kryt-series-t{task.tournament_id}-s{task.series_id}-{token}"
            future = self.client.submit(
                play_on_worker, shipped, stop_name, key=key, pure=False, retries=self.retries
            )
            futures.append(future)
            submitted[str(future.key)] = task
        return futures, submitted

    def _run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        db: Database,
        stop: threading.Event,
        on_game: GameCallback | None,
        on_series: SeriesCallback | None,
    ) -> list[SeriesOutcome]:
        progress = GameProgress(db, tasks, cancel=stop)
        stop_name = f"kryt-stop-{uuid.uuid4().hex[:12]}"
        remote_stop = dask.Event(stop_name, client=self.client)
        futures, submitted = self._submit(tasks, stop_name)
        # On this client's loop: by default as_completed waits on the loop of the process's
        # latest client, and another client closed meanwhile (a second executor, a check)
        # would take every result of this run with it.
        pending = dask.as_completed(futures, loop=self.client.loop)
        outcomes: list[SeriesOutcome] = []

        def collect(future: Any) -> None:
            outcome = self._outcome(future, submitted[str(future.key)])
            if outcome is None:
                # Its result died with the worker that held it; the scheduler runs the
                # series again (a resume: no recorded game is played twice). Wait for that.
                pending.add(future)
                return
            played = progress.close(outcome.series_id, on_game)
            if outcome.games_played != played:
                # A retried task reports only its last attempt; the database has them all.
                outcome = replace(outcome, games_played=played)
            outcomes.append(outcome)
            if on_series is not None:
                on_series(outcome)

        def report_unfinished(reason: str) -> None:
            # Every series gets its outcome (the Executor's promise), with the games the
            # database holds for it.
            reported = {o.series_id for o in outcomes}
            for future in futures:
                task = submitted[str(future.key)]
                if task.series_id not in reported:
                    played = progress.close(task.series_id, on_game)
                    outcome = SeriesOutcome(task.series_id, "interrupted", played, reason)
                    outcomes.append(outcome)
                    if on_series is not None:
                        on_series(outcome)

        cancelled: str | None = None
        try:
            next_poll = time.monotonic()
            grace_until: float | None = None
            while not pending.is_empty():
                if self._disconnected():
                    # The client cancels every future when the scheduler goes away; collect
                    # them below as interrupted, and stop waiting for anything else.
                    self.scheduler_lost = True
                    break
                if stop.is_set() and grace_until is None:
                    remote_stop.set()
                    grace_until = time.monotonic() + self.stop_grace_seconds
                if grace_until is not None and time.monotonic() > grace_until:
                    log.warning("cancelling %d series that did not stop in time", pending.count())
                    self.client.cancel(futures)
                    cancelled = "cancelled: did not stop within the grace period"
                    break
                if pending.has_ready():
                    for future in pending.next_batch(block=False):
                        collect(future)
                    continue
                if on_game is not None and time.monotonic() >= next_poll:
                    progress.poll(on_game)
                    next_poll = time.monotonic() + self.poll_seconds
                # Short ticks keep an outcome's latency low without a thread per future
                # (not stop.wait: once stop is set that would spin through the grace period).
                time.sleep(0.02)
        except BaseException:
            stop.set()
            # Cancelling while the client goes away makes distributed log tracebacks (closed
            # comms, cancelled keys): the run says what happened in one line.
            self._silence()
            try:
                # Left set on the scheduler (not forgotten): a series still running on a
                # worker (cancelling does not stop a running task) must see it, and a
                # watcher between two long polls would miss a set-then-clear.
                remote_stop.set()
                self.client.cancel(futures)
            except Exception:  # the scheduler may be gone; its workers stop with it
                log.debug("could not stop the run's series on the cluster", exc_info=True)
            raise
        if self._disconnected():
            self.scheduler_lost = True
        if self.scheduler_lost:
            log.error("lost the Dask scheduler at %s during the run", self._where())
            report_unfinished("lost the Dask scheduler")
        elif cancelled is not None:
            # Cancelled series may still be running: the Event stays set (see above).
            report_unfinished(cancelled)
        else:
            self._forget(remote_stop)
        return outcomes

    def _disconnected(self) -> bool:
        """True when the client is no longer connected to the scheduler."""
        return self._client is not None and self._client.status not in (
            "running",
            "newly-created",
        )

    def _forget(self, remote_stop: Any) -> None:
        """Drop this run's Event from the scheduler's memory.

        Setting the Event first releases the stop watchers still long-polling it (their
        series are over), so none is left waiting on the scheduler; clearing it then lets
        the scheduler delete it.
        """
        try:
            remote_stop.set()
            remote_stop.clear()
        except Exception:  # the scheduler may be gone; nothing is left to free then
            log.debug("could not release %s", remote_stop.name, exc_info=True)

    def _outcome(self, future: Any, task: SeriesTask) -> SeriesOutcome | None:
        """The task's outcome; a task that failed even after its retries is ``aborted``.

        None when the result is no longer there: the worker holding it died between the
        series' end and this read, so the future is ``lost`` (or ``pending`` again while
        the scheduler recomputes it) and will complete once more.
        """
        if future.status in ("lost", "pending"):
            log.info(
                "series %s: its result was lost with its worker; running it again", task.series_id
            )
            return None
        if future.status == "finished":
            outcome = future.result()
            assert isinstance(outcome, SeriesOutcome)
            return outcome
        if future.status == "cancelled":
            if self._disconnected():
                self.scheduler_lost = True
                return SeriesOutcome(task.series_id, "interrupted", 0, "lost the Dask scheduler")
            return SeriesOutcome(task.series_id, "interrupted", 0, "cancelled on the cluster")
        error = future.exception()
        log.error("series %s failed on the cluster: %r", task.series_id, error)
        return SeriesOutcome(
            task.series_id, "aborted", 0, f"failed on the cluster: {type(error).__name__}: {error}"
        )
