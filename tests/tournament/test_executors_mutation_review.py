"""Tests from a mutation review of the series executors (``arena/tournament/dask_executor.py``,
``process_executor.py``, ``executors.py`` and the scheduler address they check).

Each test pins a behaviour that a mutant of ours changed without any fast test noticing, and
runs in this process: the Dask cluster, the pool of referee processes and the database are
replaced by small fakes (a client, its futures and ``as_completed``; a process pool whose
workers are futures this test resolves; a database answering from a dict), so that the
bookkeeping they feed is checked without starting a cluster or a process. The expected values
come from docs/scaling.md (failures, outcomes, the scheduler address, the workers' checks),
docs/architecture.md and docs/configuration.md (``-j N``: referee processes, their shares) and
the modules' documented contracts (every series gets one outcome, each game and series
callback is made once, in order, before the run returns).
"""

from __future__ import annotations

import ctypes
import logging
import math
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, TextIO

import pytest
from dask import config as dask_config

from arena.db import DatabaseUnavailableError
from arena.tournament import dask_executor, executors, process_executor
from arena.tournament.dask_executor import (
    QUIET_CONFIG,
    QUIET_LEVEL,
    DaskExecutor,
    DaskExecutorError,
    GameProgress,
    SchedulerUnavailableError,
)
from arena.tournament.executors import LocalExecutor
from arena.tournament.process_executor import (
    NOT_STARTED_DEAD_REFEREE,
    ProcessExecutor,
    _Pool,
    _Ready,
    _Reporter,
    _WarningLine,
    _WarningsOnce,
    _Work,
)
from arena.tournament.runner import NOT_STARTED, SeriesOutcome, SeriesTask
from arena.tournament.scheduler_address import scheduler_address_problem

pytestmark = pytest.mark.timeout(60)

WAIT_S = 20.0
"""The longest any wait of these tests may take on a busy machine."""


def _task(series_id: int, url: str = "sqlite:///k.db") -> SeriesTask:
    return SeriesTask(
        database_url=url, tournament_id=7, series_id=series_id, config={}, store="/srv/a"
    )


def _finished(task: SeriesTask, games: int = 1) -> SeriesOutcome:
    return SeriesOutcome(task.series_id, "finished", games)


def _once_each(outcomes: Sequence[SeriesOutcome], ids: Iterable[int]) -> None:
    """Every series has exactly one outcome."""
    assert sorted(o.series_id for o in outcomes) == sorted(ids)


# ---------------------------------------------------------------------------- scheduler address


@pytest.mark.parametrize("address", ["wss://sched.example:443", "ucx://10.0.0.5:13337"])
def test_every_scheme_of_distributed_is_an_address(address: str) -> None:
    """scaling.md: only "an unknown scheme" is a typo; ``wss`` (a host and a port) and
    ``ucx`` are schemes distributed speaks."""
    assert scheduler_address_problem(address) is None


# ---------------------------------------------------------------------------- quiet, signals


def test_silencing_distributed_says_nothing_until_restored(distributed_levels: None) -> None:
    """scaling.md: distributed's own messages are silenced (``--verbose`` shows them):
    its loggers sit above CRITICAL, and the restore gives each its level back."""
    logger = logging.getLogger("distributed.worker")
    before = logger.level
    logger.setLevel(logging.INFO)
    try:
        restore = dask_executor.silence_distributed()
        assert logging.getLogger("distributed").level == QUIET_LEVEL
        assert logger.level == QUIET_LEVEL > logging.CRITICAL
        restore()
        assert logger.level == logging.INFO
    finally:
        logger.setLevel(before)


@pytest.fixture
def distributed_levels() -> Iterator[None]:
    """distributed's loggers get their levels back after the test (silencing sets them)."""
    names = ["distributed"] + [
        n for n in logging.root.manager.loggerDict if n.startswith("distributed.")
    ]
    kept = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in kept.items():
        logging.getLogger(name).setLevel(level)


@contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    kept = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)


def test_while_a_local_cluster_starts_ctrl_c_waits_and_then_interrupts() -> None:
    """scaling.md: the workers of a local cluster ignore SIGINT and SIGTERM from birth, even
    while it starts; the coordinator gets a Ctrl-C of that moment once the cluster is up
    (KeyboardInterrupt), with its own handlers back."""
    assert threading.current_thread() is threading.main_thread()
    with _signal_handlers_kept():
        before = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
        with pytest.raises(KeyboardInterrupt), dask_executor.signals_held():
            for number in (signal.SIGINT, signal.SIGTERM):
                assert signal.getsignal(number) == signal.SIG_IGN  # what a new worker gets
            main = threading.main_thread().ident
            assert main is not None
            signal.pthread_kill(main, signal.SIGINT)  # Ctrl-C while the cluster starts
            time.sleep(0.05)
        after = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
        assert after == before


def test_a_worker_of_a_local_cluster_ignores_ctrl_c_and_sigterm_and_is_quiet_when_asked(
    distributed_levels: None,
) -> None:
    """scaling.md: a worker the nanny restarts ignores both signals once it has started, and
    its distributed loggers say nothing only for a quiet run."""
    logger = logging.getLogger("distributed")
    level = logger.level
    with _signal_handlers_kept():
        dask_executor.dask_setup(None)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    assert logger.level == level  # not quiet: distributed's messages stay
    with _signal_handlers_kept(), dask_config.set({QUIET_CONFIG: True}):
        dask_executor.dask_setup(None)
    assert logger.level == QUIET_LEVEL


# ---------------------------------------------------------------------------- connecting


@contextmanager
def _refusing() -> Iterator[str]:
    """A loopback address whose port is bound, not listening: every connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"tcp://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def _listening() -> Iterator[str]:
    """A loopback address that accepts connections (and never speaks)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield f"tcp://127.0.0.1:{sock.getsockname()[1]}"


def test_a_refused_address_is_told_with_the_time_it_was_tried() -> None:
    """scaling.md's line ``Connection refused (tried for 2 s)`` says how long it was tried:
    a connect timeout shorter than that is the time tried."""
    with _refusing() as address, pytest.raises(SchedulerUnavailableError) as caught:
        dask_executor._connect(dask_executor.dask, address, 0.3)
    assert str(caught.value) == (
        f"no Dask scheduler listens at {address}: Connection refused (tried for 0.3 s)"
    )


def test_a_connection_that_times_out_is_left_to_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A connection still unanswered is no refusal: distributed's connect timeout decides
    (a slow or distant scheduler has its whole timeout)."""

    def unanswered(*args: object, **kwargs: object) -> socket.socket:
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", unanswered)
    assert dask_executor._refused("tcp://10.255.255.1:8786", 0.2) is None


class _Distributed:
    """What ``_connect`` uses of distributed: its Client, here a function of the test."""

    def __init__(self, client: Callable[..., object]) -> None:
        self.client = client
        self.calls: list[tuple[tuple[object, ...], dict[str, object]]] = []

    def Client(self, *args: object, **kwargs: object) -> object:
        self.calls.append((args, kwargs))
        return self.client()


def test_the_client_gets_the_connect_timeout_and_is_returned() -> None:
    """scaling.md: a scheduler that accepts the connection has the whole connect timeout."""
    client = object()
    fake = _Distributed(lambda: client)
    with _listening() as address:
        assert dask_executor._connect(fake, address, 7.5) is client
    assert fake.calls == [((address,), {"timeout": 7.5})]


def test_a_scheduler_that_cannot_be_reached_or_is_no_scheduler_is_one_line() -> None:
    """scaling.md: an unreachable scheduler is one line naming it; any other failure of the
    connection says what it was in its first line, never a traceback."""

    def unreachable() -> object:
        raise OSError(113, "No route to host")

    def garbled() -> object:
        raise ValueError("frames ask for 9 EiB\n" + "x" * 500)

    with _listening() as address:
        with pytest.raises(SchedulerUnavailableError) as lost:
            dask_executor._connect(_Distributed(unreachable), address, 0.5)
        with pytest.raises(SchedulerUnavailableError) as wrong:
            dask_executor._connect(_Distributed(garbled), address, 0.5)
    assert str(lost.value).startswith(f"no Dask scheduler answered at {address} within 0.5 s")
    assert str(wrong.value) == (
        f"{address} is not a Dask scheduler this run can use (ValueError: frames ask for 9 EiB)"
    )


def test_ctrl_c_while_connecting_stays_ctrl_c() -> None:
    """configuration.md: Ctrl-C at any moment is ``interrupted`` (exit 130), not a service
    that is unreachable (exit 3)."""

    def interrupted() -> object:
        raise KeyboardInterrupt

    with _listening() as address, pytest.raises(KeyboardInterrupt):
        dask_executor._connect(_Distributed(interrupted), address, 0.5)


# ---------------------------------------------------------------------------- the executor


def test_settings_at_their_bounds() -> None:
    """A run without retries is allowed (``allowed-failures``-style runs, scaling.md); a
    duration that is no number greater than 0 is refused."""
    assert DaskExecutor(None, retries=0).retries == 0
    with pytest.raises(DaskExecutorError, match="poll_seconds must be > 0, got nan"):
        DaskExecutor(None, poll_seconds=math.nan)
    with pytest.raises(DaskExecutorError, match="stop_grace_seconds must be > 0, got nan"):
        DaskExecutor(None, stop_grace_seconds=math.nan)
    with pytest.raises(DaskExecutorError, match="connect_timeout must be > 0, got nan"):
        DaskExecutor(None, connect_timeout=math.nan)


@pytest.mark.parametrize(
    ("scheduler", "here"),
    [
        (None, True),
        ("tcp://localhost:8786", True),
        ("tcp://127.0.0.2:8786", True),
        ("tcp://[::1]:8786", True),
        ("tcp://10.0.0.5:8786", False),
    ],
)
def test_sqlite_is_refused_only_for_a_scheduler_on_another_machine(
    scheduler: str | None, here: bool
) -> None:
    """scaling.md: SQLite is refused for a remote scheduler (its workers cannot reach the
    file); a local cluster or a loopback scheduler shares this machine's files."""
    assert dask_executor._on_this_machine(scheduler) is here


class _Client:
    """A connected client of a fake cluster: ``run`` answers from ``answers``, ``submit``
    makes :class:`_DaskFuture` objects, ``cancel`` is noted."""

    def __init__(self, answers: dict[str, object] | None = None) -> None:
        self.answers = answers or {}
        self.status = "running"
        self.loop = object()
        self.submitted: list[dict[str, Any]] = []
        self.cancelled: list[list[Any]] = []
        self.closed = 0
        self.plan: dict[int, list[str]] = {}
        self.results: dict[int, object] = {}

    def run(self, function: object, *args: object, on_error: str) -> dict[str, object]:
        assert on_error == "return"
        return dict(self.answers)

    def submit(self, function: object, task: SeriesTask, stop_name: str, **kw: Any) -> Any:
        self.submitted.append({"task": task, "stop_name": stop_name, **kw})
        return _DaskFuture(kw["key"], task, list(self.plan.get(task.series_id, ["finished"])), self)

    def cancel(self, futures: list[Any]) -> None:
        self.cancelled.append(list(futures))

    def close(self) -> None:
        self.closed += 1
        self.status = "closed"


class _DaskFuture:
    """A future of the fake cluster: it goes through the statuses of ``plan`` (one step
    each time ``as_completed`` is given it back); ``running`` is not ready yet."""

    def __init__(self, key: str, task: SeriesTask, plan: list[str], client: _Client) -> None:
        self.key = key
        self.task = task
        self.plan = plan
        self.client = client

    @property
    def status(self) -> str:
        return self.plan[0]

    def result(self) -> object:
        assert self.status == "finished"
        return self.client.results.get(self.task.series_id, _finished(self.task))

    def exception(self) -> BaseException:
        return ValueError(f"boom in {self.task.series_id}")


class _AsCompleted:
    """distributed's ``as_completed`` over :class:`_DaskFuture` objects."""

    def __init__(self, futures: list[_DaskFuture], loop: object) -> None:
        self.futures = list(futures)
        self.ready_now: Callable[[_DaskFuture], bool] = lambda f: f.status != "running"

    def is_empty(self) -> bool:
        return not self.futures

    def count(self) -> int:
        return len(self.futures)

    def has_ready(self) -> bool:
        return any(self.ready_now(f) for f in self.futures)

    def next_batch(self, block: bool) -> list[_DaskFuture]:
        ready = [f for f in self.futures if self.ready_now(f)]
        self.futures = [f for f in self.futures if f not in ready]
        return ready

    def add(self, future: _DaskFuture) -> None:
        future.plan.pop(0)  # the scheduler ran it again
        self.futures.append(future)


class _Event:
    """distributed's Event: what is done to it is noted."""

    made: ClassVar[list[_Event]] = []
    flags: ClassVar[dict[str, threading.Event]] = {}

    def __init__(self, name: str, client: object = None) -> None:
        self.name = name
        self.done: list[str] = []
        self.flag = _Event.flags.setdefault(name, threading.Event())
        _Event.made.append(self)

    def set(self) -> None:
        self.done.append("set")
        self.flag.set()

    def clear(self) -> None:
        self.done.append("clear")
        self.flag.clear()

    def is_set(self) -> bool:
        return self.flag.is_set()

    def wait(self, timeout: float) -> bool:
        return self.flag.wait(timeout)


@dataclass
class _Fake:
    """The cluster of a test: the client, the events and the last ``as_completed``."""

    client: _Client
    ready_now: Callable[[_DaskFuture], bool] = lambda f: f.status != "running"
    on_start: Callable[[], None] = lambda: None
    """Called once the run has read the games recorded before it (its futures submitted)."""

    def Event(self, name: str, client: object = None) -> _Event:
        return _Event(name, client)

    def make_as_completed(self, futures: list[_DaskFuture], loop: object) -> _AsCompleted:
        pending = _AsCompleted(futures, loop)
        pending.ready_now = lambda future: self.ready_now(future)
        self.on_start()
        return pending


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> _Fake:
    fake = _Fake(_Client())
    namespace = type(
        "FakeDistributed",
        (),
        {
            "Event": staticmethod(fake.Event),
            "as_completed": staticmethod(fake.make_as_completed),
            "get_client": staticmethod(lambda: fake.client),
        },
    )
    monkeypatch.setattr(dask_executor, "dask", namespace)
    _Event.made = []
    _Event.flags = {}
    return fake


def _executor(client: _Client, **kwargs: Any) -> DaskExecutor:
    executor = DaskExecutor("tcp://sched.example:8786", **kwargs)
    executor._client = client
    return executor


def test_each_worker_that_cannot_run_the_project_is_named_with_its_first_line() -> None:
    """scaling.md: "a worker that cannot import this project (each named, with its error's
    first line) is one line" (sorted by worker; a message-less error by its type)."""
    executor = _executor(
        _Client(
            {
                "tcp://w2:1": ModuleNotFoundError("No module named 'arena'\nsecond line"),
                "tcp://w1:1": RuntimeError(""),
                "tcp://w3:1": "process: ok",
            }
        )
    )
    with pytest.raises(DaskExecutorError) as caught:
        executor.worker_sandboxes("docker", False)
    assert str(caught.value) == (
        "Dask workers of tcp://sched.example:8786 cannot run this project's code (install it"
        " on them, the same version as here): tcp://w1:1: RuntimeError;"
        " tcp://w2:1: ModuleNotFoundError: No module named 'arena'"
    )


def test_no_worker_or_one_without_the_sandbox_fails_before_anything_runs() -> None:
    """scaling.md: a scheduler without workers, or a worker without the sandbox (named), is
    one line before anything is submitted; a sweep counts what every worker removed."""
    with pytest.raises(DaskExecutorError, match="no Dask worker is connected to tcp://sched"):
        _executor(_Client({})).worker_sandboxes("docker", False)
    bad = _Client({"tcp://w1:1": "docker: ok", "tcp://w2:1": "error: RuntimeError: no engine"})
    with pytest.raises(DaskExecutorError) as caught:
        _executor(bad).worker_sandboxes("docker", False)
    assert str(caught.value) == (
        "sandbox 'docker' unavailable on workers: tcp://w2:1: error: RuntimeError: no engine"
    )
    good = _Client({"tcp://w1:1": "docker: ok", "tcp://w2:1": "docker: ok"})
    assert _executor(good).worker_sandboxes("docker", False) == good.answers
    assert _executor(_Client({"tcp://w1:1": 2, "tcp://w2:1": 3})).sweep_workers("kryt-") == 5


def test_the_connection_is_made_once_and_kept_until_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """scaling.md: a local cluster of ``workers`` processes (``threads_per_worker`` series
    each; quiet workers for a quiet run), or a client of ``scheduler`` within
    ``connect_timeout``; kept for later runs until :meth:`close`."""
    made: list[dict[str, Any]] = []
    connected: list[tuple[str, float]] = []

    class Distributed:
        @staticmethod
        def LocalCluster(**kwargs: Any) -> object:
            made.append(kwargs)
            return _Client()

        @staticmethod
        def Client(cluster: object) -> _Client:
            return _Client()

    def connect(dask: object, address: str, timeout: float) -> _Client:
        connected.append((address, timeout))
        return _Client()

    monkeypatch.setattr(dask_executor, "dask", Distributed)
    monkeypatch.setattr(dask_executor, "_connect", connect)
    local = DaskExecutor(None, workers=3, threads_per_worker=2)
    first = local.client
    assert local.client is first
    assert len(made) == 1
    assert (made[0]["n_workers"], made[0]["threads_per_worker"]) == (3, 2)
    assert made[0]["config"] == {QUIET_CONFIG: False}
    local.close()
    assert first.closed == 1 and local._client is None
    remote = DaskExecutor("tcp://sched.example:8786", connect_timeout=4.5)
    assert remote.client is remote.client
    assert connected == [("tcp://sched.example:8786", 4.5)]


def test_a_quiet_executor_is_silent_from_its_first_connection_and_stays_so(
    monkeypatch: pytest.MonkeyPatch, distributed_levels: None
) -> None:
    """``quiet``: distributed's messages are silenced from the first connection on, for
    good (a cluster's last words can come as the process exits)."""
    logger = logging.getLogger("distributed")
    monkeypatch.setattr(dask_executor, "_connect", lambda *args: _Client())
    executor = DaskExecutor("tcp://sched.example:8786", quiet=True)
    assert executor.client is not None
    assert logger.level == QUIET_LEVEL
    executor.close()
    assert logger.level == QUIET_LEVEL


@pytest.mark.parametrize("status", ["closing", "closed", "failed"])
def test_a_client_that_closed_itself_is_forgotten(status: str) -> None:
    """A client whose scheduler was lost for good is dropped: the next use connects anew."""
    client = _Client()
    executor = _executor(client)
    client.status = status
    executor.forget_closed_client()
    assert executor._client is None


# ---------------------------------------------------------------------------- progress


class _Db:
    """A database of counted games, ``games[series] = {numbers}``; reads answer from it."""

    def __init__(self, games: dict[int, set[int]]) -> None:
        self.games = games
        self.polls = 0
        self.fail: BaseException | None = None

    def retrying_call(self, call: Callable[[], Any], *, what: str, cancel: object) -> Any:
        if self.fail is not None:
            raise self.fail
        return call()

    @contextmanager
    def read_session(self) -> Iterator[None]:
        yield None

    def close(self) -> None:
        pass


@pytest.fixture
def db(monkeypatch: pytest.MonkeyPatch) -> _Db:
    fake = _Db({})

    def counted_numbers(ids: Iterable[int], *, session: None) -> dict[int, set[int]]:
        return {sid: set(fake.games[sid]) for sid in ids if fake.games.get(sid)}

    def running_counted_numbers(tournaments: list[int], *, session: None) -> dict[int, set[int]]:
        fake.polls += 1
        return {sid: set(n) for sid, n in fake.games.items() if n}

    @dataclass
    class Game:
        number: int
        seat_ids: tuple[int, int] = (1, 2)

    def counted_games(series_id: int, wanted: list[int], *, session: None) -> list[Game]:
        return [Game(n) for n in wanted]

    monkeypatch.setattr(dask_executor, "counted_numbers", counted_numbers)
    monkeypatch.setattr(dask_executor, "running_counted_numbers", running_counted_numbers)
    monkeypatch.setattr(dask_executor, "counted_games", counted_games)
    monkeypatch.setattr(dask_executor, "stored_record", lambda game, players: game.number)
    return fake


class _Games:
    """An ``on_game`` that notes ``(series, number)``."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def __call__(self, series_id: int, number: int, record: object) -> None:
        self.seen.append((series_id, number))


def test_progress_reports_each_new_game_once_and_counts_only_this_runs(db: _Db) -> None:
    """scaling.md and GameProgress: each game is reported once, through a poll or at the
    series' end; games counted before the run are not reported nor counted as played now;
    a series of another run (same tournament) is not this run's."""
    db.games = {1: {1, 2}, 2: set(), 99: {1}}
    games = _Games()
    progress = GameProgress(db, [_task(1), _task(2)])  # type: ignore[arg-type]
    progress.poll(games)
    assert games.seen == []
    db.games[1] |= {3}
    db.games[2] |= {1}
    progress.poll(games)
    progress.poll(games)
    assert sorted(games.seen) == [(1, 3), (2, 1)]
    db.games[2] |= {2}
    assert progress.close(2, games) == 2
    assert progress.close(2, games) == 0  # forgotten: nothing reported or counted again
    assert progress.close(1, games) == 1
    assert sorted(games.seen) == [(1, 3), (2, 1), (2, 2)]


def test_a_progress_poll_is_skipped_only_for_a_lost_connection(db: _Db) -> None:
    """scaling.md: a poll is skipped while the connection is lost; any other database
    failure (a full disk) is no outage and ends the run."""
    progress = GameProgress(db, [_task(1)])  # type: ignore[arg-type]
    db.fail = DatabaseUnavailableError("disk full")
    with pytest.raises(DatabaseUnavailableError, match="disk full"):
        progress.poll(_Games())


# ---------------------------------------------------------------------------- a Dask run


def _run(
    executor: DaskExecutor,
    tasks: list[SeriesTask],
    *,
    db: _Db,
    stop: threading.Event | None = None,
    on_game: Callable[[int, int, object], None] | None = None,
) -> tuple[list[SeriesOutcome], list[SeriesOutcome]]:
    """The run's outcomes and what ``on_series`` was given."""
    reported: list[SeriesOutcome] = []
    outcomes = executor._run(
        tasks,
        db=db,  # type: ignore[arg-type]
        stop=stop or threading.Event(),
        on_game=on_game,
        on_series=reported.append,
    )
    return outcomes, reported


def test_a_dask_run_reports_every_series_once_with_the_games_the_database_holds(
    cluster: _Fake, db: _Db
) -> None:
    """scaling.md: one task per series (retried ``retries`` times), each outcome with the
    games recorded (a retried task reports only its last attempt); a failed task is
    ``aborted``; a result lost with its worker is run again and reported once; the run's
    Event is released and forgotten at its end. Keys are unique per run."""
    client = cluster.client
    tasks = [_task(n) for n in (1, 2, 3, 4)]
    client.plan = {2: ["lost", "finished"], 3: ["pending", "finished"], 4: ["error"]}
    client.results[1] = SeriesOutcome(1, "finished", 1)
    cluster.on_start = lambda: db.games.update({1: {1, 2, 3}})
    executor = _executor(client, retries=5, worker_store="/var/lib/kryt")
    outcomes, reported = _run(executor, tasks, db=db)
    assert reported == outcomes
    _once_each(outcomes, [1, 2, 3, 4])
    by_id = {o.series_id: o for o in outcomes}
    assert by_id[1] == SeriesOutcome(1, "finished", 3)
    assert (by_id[2].status, by_id[3].status) == ("finished", "finished")
    why = "failed on the cluster: ValueError: boom in 4"
    assert by_id[4] == SeriesOutcome(4, "aborted", 0, why)
    assert {s["retries"] for s in client.submitted} == {5}
    assert {s["task"].store for s in client.submitted} == {"/var/lib/kryt"}
    (event,) = _Event.made
    token = event.name.rpartition("-")[2]
    assert all(s["key"].endswith(f"-{token}") for s in client.submitted)
    assert event.done == ["set", "clear"]
    assert not client.cancelled and not executor.scheduler_lost


def test_a_dask_run_polls_progress_while_its_series_play(cluster: _Fake, db: _Db) -> None:
    """scaling.md: the coordinator shows progress by polling the database (every
    ``poll_seconds``) while the series play; each game is reported once."""
    client = cluster.client
    client.plan = {1: ["running", "finished"]}
    games = _Games()
    ended_after_a_poll: list[bool] = []
    started = time.monotonic()

    def ready(future: _DaskFuture) -> bool:
        took = time.monotonic() - started
        if future.status == "running" and ((games.seen and took > 0.3) or took > 3.0):
            ended_after_a_poll.append(bool(games.seen))
            future.plan.pop(0)
        return future.status != "running"

    cluster.ready_now = ready
    cluster.on_start = lambda: db.games.update({1: {1}})  # recorded by the worker
    outcomes, _ = _run(_executor(client, poll_seconds=60.0), [_task(1)], db=db, on_game=games)
    assert ended_after_a_poll == [True]
    assert games.seen == [(1, 1)]
    assert db.polls == 1  # one poll at the start; the next one is 60 s later
    assert outcomes == [SeriesOutcome(1, "finished", 1)]


def test_series_that_outlive_the_stop_grace_are_cancelled_and_each_reported_once(
    cluster: _Fake, db: _Db
) -> None:
    """scaling.md: a stop sets the run's Event; series that do not stop within the grace
    period are cancelled and still reported, once each (``interrupted``, ``cancelled: did
    not stop within the grace period``), a finished one with its own outcome."""
    client = cluster.client
    client.plan = {2: ["running"], 3: ["running"]}
    cluster.on_start = lambda: db.games.update({2: {1}})
    stop = threading.Event()
    stop.set()
    executor = _executor(client, stop_grace_seconds=0.2)
    outcomes, reported = _run(executor, [_task(1), _task(2), _task(3)], db=db, stop=stop)
    assert reported == outcomes
    _once_each(outcomes, [1, 2, 3])
    why = "cancelled: did not stop within the grace period"
    assert outcomes[0] == SeriesOutcome(1, "finished", 0)
    assert set(outcomes[1:]) == {
        SeriesOutcome(2, "interrupted", 1, why),
        SeriesOutcome(3, "interrupted", 0, why),
    }
    (event,) = _Event.made
    assert event.done == ["set"]  # left set: cancelled series may still run
    assert len(client.cancelled) == 1


def test_a_lost_scheduler_reports_every_unfinished_series_interrupted(
    cluster: _Fake, db: _Db
) -> None:
    """scaling.md: when the scheduler is lost, every running series is ``interrupted``
    (``lost the Dask scheduler``), with the games committed."""
    client = cluster.client
    client.plan = {2: ["running"]}
    cluster.on_start = lambda: db.games.update({2: {1, 2}})
    executor = _executor(client)
    calls = {"n": 0}

    def ready(future: _DaskFuture) -> bool:
        calls["n"] += 1
        if calls["n"] > 3:
            client.status = "closed"
        return future.status != "running"

    cluster.ready_now = ready
    outcomes, reported = _run(executor, [_task(1), _task(2)], db=db)
    assert reported == outcomes
    assert outcomes == [
        SeriesOutcome(1, "finished", 0),
        SeriesOutcome(2, "interrupted", 2, "lost the Dask scheduler"),
    ]
    assert executor.scheduler_lost


def test_a_client_not_yet_running_is_not_a_lost_scheduler(cluster: _Fake, db: _Db) -> None:
    client = cluster.client
    client.status = "newly-created"
    outcomes, _ = _run(_executor(client), [_task(1)], db=db)
    assert outcomes == [SeriesOutcome(1, "finished", 0)]


def test_ctrl_c_during_a_dask_run_stops_and_cancels_its_series(cluster: _Fake, db: _Db) -> None:
    """scaling.md: Ctrl-C sets the run's stop Event (running series stop after their game)
    and cancels the queued series, then the run re-raises it."""
    client = cluster.client
    client.plan = {2: ["running"]}
    stop = threading.Event()

    def on_series(outcome: SeriesOutcome) -> None:
        raise KeyboardInterrupt

    executor = _executor(client)
    with pytest.raises(KeyboardInterrupt):
        executor._run(
            [_task(1), _task(2)],
            db=db,  # type: ignore[arg-type]
            stop=stop,
            on_game=None,
            on_series=on_series,
        )
    assert stop.is_set()
    (event,) = _Event.made
    assert event.done == ["set"]
    assert len(client.cancelled) == 1 and len(client.cancelled[0]) == 2
    executor.close()  # distributed's loggers, silenced for the shutdown, are back


def test_a_series_on_a_worker_stops_when_the_run_does(
    cluster: _Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scaling.md: a stop reaches running series (they stop after their current game); a
    series whose run had already stopped does not start."""
    seen: list[bool] = []

    def play(task: SeriesTask, *, stop: threading.Event) -> SeriesOutcome:
        seen.append(stop.wait(WAIT_S))
        return SeriesOutcome(task.series_id, "interrupted", 0, "stopped")

    monkeypatch.setattr(dask_executor, "play_series_task", play)
    monkeypatch.setattr(dask_executor, "WATCH_SECONDS", 0.05)
    remote = _Event("kryt-stop-abc")
    threading.Timer(0.2, remote.set).start()
    assert dask_executor.play_on_worker(_task(1), "kryt-stop-abc").status == "interrupted"
    assert seen == [True]
    assert dask_executor.play_on_worker(_task(2), "kryt-stop-abc") == SeriesOutcome(
        2, "interrupted", 0, "stopped before it started"
    )
    assert seen == [True]


# ---------------------------------------------------------------------------- referee processes


def test_local_executor_uses_referee_processes_only_above_one() -> None:
    """configuration.md: ``-j`` above 1 plays in referee processes; 1 on one event loop;
    a concurrency below 1 is refused."""
    assert LocalExecutor(1).processes is False
    assert LocalExecutor(2).processes is True
    with pytest.raises(ValueError, match="concurrency must be >= 1, got 0"):
        LocalExecutor(0)
    with pytest.raises(ValueError, match="processes must be >= 1, got 0"):
        ProcessExecutor(2, processes=0)
    assert ProcessExecutor(2, processes=2).run([], stop=threading.Event()) == []


class _Series:
    """``play_series_tasks`` of this process's loop: each series finishes at once (after
    ``hold``), noting how many play at once."""

    def __init__(self, hold: Callable[[], None] | None = None, fail: bool = False) -> None:
        self.hold = hold
        self.fail = fail
        self.now = 0
        self.peak = 0
        self.concurrency: list[int] = []

    async def __call__(
        self,
        tasks: Iterable[SeriesTask],
        *,
        concurrency: int,
        stop: threading.Event,
        on_game: Callable[[int, int, Any], None] | None = None,
        on_series: Callable[[SeriesOutcome], None] | None = None,
    ) -> list[SeriesOutcome]:
        import asyncio

        self.concurrency.append(concurrency)
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.05)
            if self.hold is not None:
                await asyncio.to_thread(self.hold)
            if self.fail:
                raise DatabaseUnavailableError("database lost")
            outcomes = [_finished(t) for t in tasks]
            for outcome in outcomes:
                if on_game is not None:
                    on_game(outcome.series_id, 1, "record")
                if on_series is not None:
                    on_series(outcome)
            return outcomes
        finally:
            self.now -= 1


def test_the_local_executor_hands_its_settings_and_callbacks_to_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--concurrency N``: N series at once; every series' outcome reaches ``on_series``."""
    series = _Series()
    monkeypatch.setattr(executors, "play_series_tasks", series)
    reported: list[SeriesOutcome] = []
    outcomes = LocalExecutor(3, processes=False).run(
        [_task(1), _task(2)], stop=threading.Event(), on_series=reported.append
    )
    assert series.concurrency == [3]
    assert reported == outcomes == [_finished(_task(1)), _finished(_task(2))]


def test_a_failure_of_the_loop_stops_the_run_before_its_bots_are_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lost database ends the run; the stop flag is set first so that a game disrupted by
    the kill is not recorded (``resume`` replays it)."""
    monkeypatch.setattr(executors, "play_series_tasks", _Series(fail=True))
    stop = threading.Event()
    with pytest.raises(DatabaseUnavailableError):
        LocalExecutor(2, processes=False).run([_task(1)], stop=stop)
    assert stop.is_set()


def test_work_is_handed_out_in_order_and_given_back_first_in_line() -> None:
    """architecture.md: each ready worker takes ``N // referees``; this process keeps the
    rest, all of it again once the pool broke; a batch given back is played first."""
    work = _Work([_task(n) for n in range(1, 6)], 5, share=2)
    assert work.slots_here() == 5
    work.worker_ready()
    work.worker_ready()
    assert work.slots_here() == 1
    batch = work.take(2)
    assert [t.series_id for t in batch] == [1, 2]
    work.give_back(batch)
    work.pool_broken()
    assert work.slots_here() == 5
    assert [t.series_id for t in work.take(3)] == [1, 2, 3]
    assert work.not_started("why") == [
        SeriesOutcome(4, "interrupted", 0, "why"),
        SeriesOutcome(5, "interrupted", 0, "why"),
    ]


def test_the_reporter_calls_in_order_keeps_the_first_failure_and_then_calls_nothing() -> None:
    """_Reporter: calls in the order reported, one at a time; the first exception is kept
    for the run to raise and nothing more is called after it; every call reported is made
    before the run returns."""
    called: list[object] = []
    record: Any = None

    class First(Exception):
        pass

    def on_game(series_id: int, number: int, record: object) -> None:
        time.sleep(0.05)
        called.append((series_id, number))

    def on_series(outcome: SeriesOutcome) -> None:
        called.append(outcome.series_id)
        if outcome.series_id in (2, 3):
            raise First(outcome.series_id)

    with _Reporter(on_game, on_series) as reporter:
        reporter.game(1, 1, record)
        reporter.series(SeriesOutcome(1, "finished", 1))
        reporter.game(2, 1, record)
    assert called == [(1, 1), 1, (2, 1)]
    with _Reporter(on_game, on_series) as reporter:
        for n in (2, 3, 4):
            reporter.series(SeriesOutcome(n, "finished", 1))
    assert called[3:] == [2]
    assert isinstance(reporter.failure, First) and reporter.failure.args == (2,)


def test_a_warning_is_shown_once_unless_it_is_written_to_a_file() -> None:
    """architecture.md / _WarningsOnce: each warning text is shown once per run, whichever
    referee raised it; one written to a given file is always written; the previous
    ``showwarning`` is back afterwards unless another replaced ours."""
    import warnings

    shown: list[tuple[str, object]] = []

    def previous(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        shown.append((str(message), file))

    original = warnings.showwarning
    warnings.showwarning = previous
    try:
        with _WarningsOnce() as once:
            for _ in range(2):
                warnings.showwarning("unsafe", UserWarning, "f", 1)
                warnings.showwarning("unsafe", UserWarning, "f", 1, "file")  # type: ignore[arg-type]
        assert shown == [("unsafe", None), ("unsafe", "file"), ("unsafe", "file")]
        assert warnings.showwarning is previous
        with _WarningsOnce():
            warnings.showwarning = original
        assert warnings.showwarning is original
    finally:
        warnings.showwarning = original
    assert once.first_time("other") and not once.first_time("other")


class _BatchPool:
    """The pool's executor: ``_started`` makes the worker ready at once; a batch's future is
    resolved by ``play`` (None: left to the test); a broken pool refuses batches."""

    def __init__(self, work: _Work, play: Callable[[tuple[SeriesTask, ...]], Future[Any]]) -> None:
        self.work = work
        self.play = play
        self.batches: list[tuple[SeriesTask, ...]] = []

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        if function is process_executor._started:
            self.work.worker_ready()
            done: Future[Any] = Future()
            done.set_result([])
            return done
        (batch,) = args
        self.batches.append(batch)
        return self.play(batch)


def _pool(
    work: _Work, size: int, play: Callable[[tuple[SeriesTask, ...]], Future[Any]]
) -> tuple[_Pool, _BatchPool]:
    """A pool of ``size`` workers whose executor is a :class:`_BatchPool`."""
    pool = _Pool(0, work, on_game=None, shown=_WarningsOnce())
    workers = _BatchPool(work, play)
    pool.size = size
    pool._stop_flag = ctypes.c_bool(False)
    pool._executor = workers  # type: ignore[assignment]
    return pool, workers


def _broken(batch: tuple[SeriesTask, ...]) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(BrokenProcessPool("a worker died"))
    return future


def test_a_batch_whose_worker_died_is_interrupted_with_its_recorded_games() -> None:
    """process_executor: a dead worker breaks the pool; the other workers stop (the stop
    flag), this process plays the whole concurrency again, and the failed batch's series
    come back ``interrupted`` with the games their workers recorded and the resume hint."""
    work = _Work([_task(n) for n in range(1, 6)], 4, share=2)
    pool, workers = _pool(work, 1, _broken)
    pool.start()
    pool.collect(list(pool.pending))
    assert pool.all_ready() and work.slots_here() == 2
    pool.refill()
    assert [[t.series_id for t in b] for b in workers.batches] == [[1, 2]]
    pool.played[1] += 3
    assert pool.collect(list(pool.pending)) == []
    assert pool._stop_flag.value is True
    assert work.slots_here() == 4 and pool.all_ready()
    lost = pool.lost_outcomes()
    assert [(o.series_id, o.status, o.games_played) for o in lost] == [
        (1, "interrupted", 3),
        (2, "interrupted", 0),
    ]
    assert all("referee process died" in o.message and "resume" in o.message for o in lost)


def test_each_ready_worker_gets_one_batch_at_a_time() -> None:
    """architecture.md: each worker that becomes ready is handed batches of its share, one
    batch at a time (a free one takes the next); a batch cancelled by a stop never started."""
    work = _Work([_task(n) for n in range(1, 8)], 4, share=2)
    held: list[Future[Any]] = []

    def hold(batch: tuple[SeriesTask, ...]) -> Future[Any]:
        held.append(Future())
        return held[-1]

    pool, _ = _pool(work, 1, hold)
    pool.start()
    pool.collect(list(pool.pending))
    pool.refill()
    pool.refill()
    assert len(held) == 1
    held[0].set_result([_finished(_task(1)), _finished(_task(2))])
    assert pool.collect(held) == [_finished(_task(1)), _finished(_task(2))]
    pool.refill()
    assert len(held) == 2
    held[1].cancel()
    assert pool.collect(held[1:]) == [
        SeriesOutcome(n, "interrupted", 0, NOT_STARTED) for n in (3, 4)
    ]
    work.take(5)
    pool.refill()  # nothing left to hand out
    assert len(held) == 2


def test_the_relay_counts_games_shows_warnings_once_and_notes_ready_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's games are counted (for the ``interrupted`` outcome of a dead one) and
    handed to ``on_game`` only when it wants records; its warnings are shown once."""
    import queue

    items: queue.SimpleQueue[object] = queue.SimpleQueue()
    for item in (
        _Ready(11),
        _Ready(12),
        (1, 1, "record"),
        (1, 2, None),
        _WarningLine("unsafe"),
        _WarningLine("unsafe"),
        _WarningLine("other"),
        None,
    ):
        items.put(item)
    shown_lines: list[object] = []
    monkeypatch.setattr(
        process_executor, "show_warning_line", lambda *args: shown_lines.append(args[0])
    )
    work = _Work([], 2, share=1)
    games = _Games()
    played: Counter[int] = Counter()
    process_executor._relay_games(items, games, _WarningsOnce(), work, played)
    assert work.ready_workers() == 2
    assert games.seen == [(1, 1)]
    assert played == {1: 2}
    assert shown_lines == ["unsafe", "other"]


def test_a_worker_sends_its_warnings_and_games_to_the_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's warning is shown by the runner (one written to a file is written there);
    its games are counted, their records sent only when the runner wants them; a batch
    plays all its series at once."""
    sent: list[object] = []

    class Queue:
        def put(self, item: object) -> None:
            sent.append(item)

    written: list[object] = []
    monkeypatch.setattr(process_executor, "_queue", Queue())
    monkeypatch.setattr(process_executor, "_games", None)
    monkeypatch.setattr(
        process_executor, "show_warning_line", lambda *args: written.append(args[0])
    )
    process_executor._send_warning("unsafe", UserWarning, "f", 1)
    process_executor._send_warning("in a file", UserWarning, "f", 1, object())  # type: ignore[arg-type]
    process_executor._report_game(3, 1, "record")
    assert sent == [_WarningLine("unsafe"), (3, 1, None)]
    assert written == ["in a file"]
    series = _Series()
    monkeypatch.setattr(process_executor, "play_series_tasks", series)
    process_executor._play((_task(1), _task(2), _task(3)))
    assert series.concurrency == [3]


def _process_run(
    monkeypatch: pytest.MonkeyPatch,
    series: _Series,
    tasks: list[SeriesTask],
    *,
    concurrency: int,
    processes: int,
    play: Callable[[tuple[SeriesTask, ...]], Future[Any]] | None = None,
    stop: threading.Event | None = None,
    on_series: Callable[[SeriesOutcome], None] | None = None,
) -> tuple[list[SeriesOutcome], list[_Pool]]:
    """A run of :class:`ProcessExecutor` whose workers are :class:`_BatchPool` futures."""
    pools: list[_Pool] = []

    def make(size: int, work: _Work, *, on_game: object, shown: object) -> _Pool:
        pool, _ = _pool(work, size, play or _broken)

        def close() -> None:
            for future in pool.pending:
                future.cancel()

        pool.close = close  # type: ignore[method-assign]
        pools.append(pool)
        return pool

    monkeypatch.setattr(process_executor, "play_series_tasks", series)
    monkeypatch.setattr(process_executor, "_Pool", make)
    outcomes = ProcessExecutor(concurrency, processes=processes).run(
        tasks, stop=stop or threading.Event(), on_series=on_series
    )
    return outcomes, pools


def test_one_referee_plays_up_to_the_whole_concurrency_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """configuration.md: the runner plays up to all N series at once; no worker for it."""
    series = _Series()
    reported: list[SeriesOutcome] = []
    tasks = [_task(n) for n in range(1, 8)]
    outcomes, pools = _process_run(
        monkeypatch, series, tasks, concurrency=3, processes=1, on_series=reported.append
    )
    assert series.peak == 3
    assert outcomes == reported
    assert sorted(outcomes, key=lambda o: o.series_id) == [_finished(t) for t in tasks]
    assert [p.size for p in pools] == [0]


def test_never_more_referees_than_series_and_each_gets_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """architecture.md: N series at once in up to one referee per core (never more than the
    series), each ready worker taking batches of ``N // referees``."""
    held: list[Future[Any]] = []

    def finish(batch: tuple[SeriesTask, ...]) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result([_finished(t) for t in batch])
        held.append(future)
        return future

    tasks = [_task(n) for n in range(1, 3)]
    outcomes, pools = _process_run(
        monkeypatch, _Series(), tasks, concurrency=4, processes=8, play=finish
    )
    _once_each(outcomes, [1, 2])
    assert (pools[0].size, pools[0].work.share) == (1, 2)
    tasks = [_task(n) for n in range(1, 13)]
    outcomes, pools = _process_run(
        monkeypatch, _Series(), tasks, concurrency=6, processes=3, play=finish
    )
    _once_each(outcomes, range(1, 13))
    assert (pools[0].size, pools[0].work.share) == (2, 2)


def test_a_stop_before_the_run_plays_nothing_and_hands_nothing_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C before the run: every series comes back ``interrupted`` (not started), none
    is handed to a worker, and the workers are told to stop."""
    stop = threading.Event()
    stop.set()
    series = _Series()
    tasks = [_task(n) for n in range(1, 5)]
    outcomes, pools = _process_run(
        monkeypatch, series, tasks, concurrency=2, processes=2, stop=stop
    )
    assert sorted(outcomes, key=lambda o: o.series_id) == [
        SeriesOutcome(t.series_id, "interrupted", 0, NOT_STARTED) for t in tasks
    ]
    assert series.peak == 0
    assert pools[0]._batches == {}  # nothing handed to the worker
    assert pools[0]._stop_flag.value is True


def test_a_dead_worker_s_batch_is_interrupted_and_the_runner_plays_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """process_executor: the series of the batch the broken pool failed come back
    ``interrupted`` with the resume hint; this process plays the series not yet handed
    out; every series gets one outcome."""
    tasks = [_task(n) for n in range(1, 11)]
    reported: list[SeriesOutcome] = []
    handed: list[int] = []

    def die(batch: tuple[SeriesTask, ...]) -> Future[Any]:
        handed.extend(t.series_id for t in batch)
        return _broken(batch)

    outcomes, _ = _process_run(
        monkeypatch,
        _Series(),
        tasks,
        concurrency=2,
        processes=2,
        play=die,
        on_series=reported.append,
    )
    assert outcomes == reported
    _once_each(outcomes, range(1, 11))
    assert len(handed) == 1
    for outcome in outcomes:
        if outcome.series_id in handed:
            assert outcome.status == "interrupted" and "referee process died" in outcome.message
        else:
            assert outcome == SeriesOutcome(outcome.series_id, "finished", 1)


def test_a_batch_refused_after_the_runner_s_loop_ended_is_not_started_for_a_dead_referee(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """process_executor: series left when the pool broke after this process's loop had
    ended come back ``interrupted`` for a dead referee, with the resume hint: the run was
    not stopped."""
    submitted = threading.Event()

    def refuse_once_the_loop_ended(batch: tuple[SeriesTask, ...]) -> Future[Any]:
        submitted.set()
        deadline = time.monotonic() + WAIT_S
        while any(t.name == "kryt-series-loop" for t in threading.enumerate()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        raise BrokenProcessPool("a worker died between batches")

    def hold() -> None:
        submitted.wait(WAIT_S)

    series = _Series(hold=hold)
    outcomes, _ = _process_run(
        monkeypatch,
        series,
        [_task(1), _task(2)],
        concurrency=2,
        processes=2,
        play=refuse_once_the_loop_ended,
    )
    _once_each(outcomes, [1, 2])
    statuses = sorted((o.status, o.message) for o in outcomes)
    assert statuses == [
        ("finished", ""),
        ("interrupted", f"{NOT_STARTED_DEAD_REFEREE}; resume it"),
    ]


def test_a_callback_that_raises_ends_the_run_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """_Reporter: the first exception a callback raises is raised by the run."""

    class Boom(Exception):
        pass

    def on_series(outcome: SeriesOutcome) -> None:
        raise Boom(outcome.series_id)

    def slowly(outcome: SeriesOutcome) -> None:
        time.sleep(0.2)  # raised once this process's loop has ended
        on_series(outcome)

    with pytest.raises(Boom):
        _process_run(
            monkeypatch, _Series(), [_task(1)], concurrency=1, processes=1, on_series=slowly
        )
    series = _Series()
    stop = threading.Event()
    with pytest.raises(Boom):
        _process_run(
            monkeypatch,
            series,
            [_task(n) for n in range(1, 41)],
            concurrency=1,
            processes=1,
            stop=stop,
            on_series=on_series,
        )
    assert stop.is_set()
    assert len(series.concurrency) < 40  # the run ended: not every series was played


def test_a_lost_database_of_the_runner_s_loop_ends_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """architecture.md: a lost database still ends the run (and stops it)."""
    stop = threading.Event()
    with pytest.raises(DatabaseUnavailableError, match="database lost"):
        _process_run(
            monkeypatch, _Series(fail=True), [_task(1)], concurrency=2, processes=1, stop=stop
        )
    assert stop.is_set()
