"""A hostile review of ``ProcessExecutor.run`` (-j N with the runner as one of the referee
processes): every series comes back exactly once, every game is recorded once, the
outcomes agree with the database, callbacks run off the runner's loop, a failing callback
ends the run, stops at various moments lose nothing, dead workers give their series back,
and no worker outlives a killed runner."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arena.db import open_database
from arena.tournament import process_executor
from arena.tournament.process_executor import ProcessExecutor
from arena.tournament.runner import SeriesOutcome, play_series_tasks, tasks_for
from tests.cli.test_interrupt import counted
from tests.cli.test_referee_processes import alive
from tests.referee.test_tournament import check_complete, verify_all
from tests.scaling.helpers import processes_in, wait_no_processes_in
from tests.tournament.test_referee_processes_share import (
    MARKS_ENV,
    WAIT_S,
    _counting_local_series,
    _games_by_series,
    _marks,
    _round_robin,
    _tasks,
    _wait_for,
)

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]


class _Calls:
    """Records every callback, the thread it ran on and whether two overlapped."""

    def __init__(self) -> None:
        self.games: list[tuple[int, int]] = []
        self.series: list[SeriesOutcome] = []
        self.threads: set[str] = set()
        self.order: list[tuple[str, int]] = []
        self._inside = 0
        self.overlapped = False
        self._lock = threading.Lock()

    def _enter(self) -> None:
        with self._lock:
            self._inside += 1
            if self._inside > 1:
                self.overlapped = True
        self.threads.add(threading.current_thread().name)

    def _leave(self) -> None:
        with self._lock:
            self._inside -= 1

    def on_game(self, series_id: int, number: int, record: Any) -> None:
        self._enter()
        try:
            time.sleep(0.002)  # widen the window in which two calls could overlap
            self.games.append((series_id, number))
            self.order.append(("game", series_id))
        finally:
            self._leave()

    def on_series(self, outcome: SeriesOutcome) -> None:
        self._enter()
        try:
            time.sleep(0.002)
            self.series.append(outcome)
            self.order.append(("series", outcome.series_id))
        finally:
            self._leave()


# ------------------------------------------------------------------ complete runs


@pytest.mark.parametrize(
    ("jobs", "processes", "bots"),
    [
        (2, 2, 2),  # one series: no worker at all
        (2, 2, 3),  # three series, one worker
        (3, 3, 3),  # three series, two workers, batches of one
        (5, 2, 4),  # six series, more at once than cores: batches of two
        (3, 2, 5),  # ten series, a remainder the runner keeps
    ],
)
def test_every_series_is_played_once_and_every_game_recorded_once(
    tmp_path: Path, jobs: int, processes: int, bots: int
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=bots, games=2)
    tasks = _tasks(url, tournament_id, tmp_path)
    calls = _Calls()
    outcomes = ProcessExecutor(jobs, processes=processes).run(
        tasks, stop=threading.Event(), on_game=calls.on_game, on_series=calls.on_series
    )
    ids = sorted(t.series_id for t in tasks)
    assert sorted(o.series_id for o in outcomes) == ids, outcomes
    assert [o.status for o in outcomes] == ["finished"] * len(tasks), outcomes
    assert sorted(o.series_id for o in calls.series) == ids
    assert check_complete(url, tournament_id) == 2 * len(tasks)
    verify_all(url, tournament_id)
    played = _games_by_series(url, tournament_id)
    assert {o.series_id: o.games_played for o in outcomes} == played
    # Each game reported once, before its series' outcome was reported.
    assert Counter(calls.games) == Counter((t.series_id, n) for t in tasks for n in (1, 2))
    assert "kryt-series-loop" not in calls.threads, calls.threads
    assert not calls.overlapped, "two callbacks ran at the same time"
    assert wait_no_processes_in(tmp_path, 30) == []


# ------------------------------------------------------------------------- stops


def test_a_stop_set_before_the_run_returns_every_series_once_and_plays_nothing(
    tmp_path: Path,
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=4, games=2)
    tasks = _tasks(url, tournament_id, tmp_path)
    stop = threading.Event()
    stop.set()
    started = time.monotonic()
    outcomes = ProcessExecutor(3, processes=3).run(tasks, stop=stop)
    assert time.monotonic() - started < 60
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    assert {o.status for o in outcomes} == {"interrupted"}, outcomes
    assert sum(_games_by_series(url, tournament_id).values()) == 0
    assert wait_no_processes_in(tmp_path, 30) == []
    # A later run of what is left completes the tournament.
    left = _tasks(url, tournament_id, tmp_path)
    again = ProcessExecutor(3, processes=3).run(left, stop=threading.Event())
    assert {o.status for o in again} == {"finished"}
    assert check_complete(url, tournament_id) == 12


@pytest.mark.parametrize("when", ["first_game", "third_series", "worker_starting"])
def test_a_stop_mid_run_loses_and_duplicates_nothing_and_a_later_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=5, games=3)  # ten series
    tasks = _tasks(url, tournament_id, tmp_path)
    stop = threading.Event()
    calls = _Calls()

    def on_game(series_id: int, number: int, record: Any) -> None:
        calls.on_game(series_id, number, record)
        if when == "first_game":
            stop.set()

    def on_series(outcome: SeriesOutcome) -> None:
        calls.on_series(outcome)
        if when == "third_series" and len(calls.series) == 3:
            stop.set()

    if when == "worker_starting":
        # Stop as soon as the runner's loop starts its first series (workers still import).
        original = play_series_tasks

        async def stopping(*args: Any, **kwargs: Any) -> list[SeriesOutcome]:
            stop.set()
            result: list[SeriesOutcome] = await original(*args, **kwargs)
            return result

        monkeypatch.setattr(process_executor, "play_series_tasks", stopping)

    outcomes = ProcessExecutor(3, processes=3).run(
        tasks, stop=stop, on_game=on_game, on_series=on_series
    )
    ids = sorted(t.series_id for t in tasks)
    assert sorted(o.series_id for o in outcomes) == ids, outcomes
    assert sorted(o.series_id for o in calls.series) == ids
    assert {o.status for o in outcomes} <= {"finished", "interrupted"}, outcomes
    assert "interrupted" in {o.status for o in outcomes}
    assert wait_no_processes_in(tmp_path, 30) == []
    played = _games_by_series(url, tournament_id)
    for o in outcomes:
        if o.status == "finished":
            assert played[o.series_id] == 3, (o, played)
    assert len(calls.games) == len(set(calls.games))
    left = _tasks(url, tournament_id, tmp_path)
    again = ProcessExecutor(3, processes=3).run(left, stop=threading.Event())
    assert {o.status for o in again} == {"finished"}, again
    assert check_complete(url, tournament_id) == 30
    verify_all(url, tournament_id)


# --------------------------------------------------------------- failing callbacks


class _Boom(Exception):
    pass


@pytest.mark.parametrize("which", ["on_game", "on_series", "on_series_last"])
def test_a_callback_that_raises_ends_the_run_with_that_exception(
    tmp_path: Path, which: str
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=4, games=2)  # six series
    tasks = _tasks(url, tournament_id, tmp_path)
    seen: list[SeriesOutcome] = []
    after: list[str] = []
    raised = threading.Event()

    def on_game(series_id: int, number: int, record: Any) -> None:
        if raised.is_set():
            after.append("game")
        if which == "on_game" and not raised.is_set():
            raised.set()
            raise _Boom("on_game")

    def on_series(outcome: SeriesOutcome) -> None:
        if raised.is_set():
            after.append("series")
        seen.append(outcome)
        if which == "on_series" and not raised.is_set():
            raised.set()
            raise _Boom("on_series")
        if which == "on_series_last" and len(seen) == len(tasks):
            raised.set()
            raise _Boom("on_series_last")

    started = time.monotonic()
    with pytest.raises(_Boom) as caught:
        ProcessExecutor(2, processes=2).run(
            tasks, stop=threading.Event(), on_game=on_game, on_series=on_series
        )
    assert str(caught.value) == which
    assert time.monotonic() - started < 120
    assert after == [], f"callbacks made after the one that raised: {after}"
    assert wait_no_processes_in(tmp_path, 30) == []


# ------------------------------------------------------------------ dying workers


def _start_worker_that_dies_at_start(*args: Any) -> None:
    os._exit(3)


def test_workers_that_die_at_start_leave_every_series_to_the_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=4, games=2)  # six series
    monkeypatch.setattr(process_executor, "_start_worker", _start_worker_that_dies_at_start)
    tasks = _tasks(url, tournament_id, tmp_path)
    outcomes = ProcessExecutor(3, processes=3).run(tasks, stop=threading.Event())
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    assert check_complete(url, tournament_id) == 12


_original_play: Callable[..., Any] | None = None


def _start_worker_one_dies_other_plays_late(*args: Any) -> None:
    """Two workers: the first to claim ``dier`` dies on its batch once the other has
    taken one; the other plays its batch only once the runner has reported the death."""
    global _original_play
    process_executor._start_worker(*args)
    marks = Path(os.environ[MARKS_ENV])
    _original_play = process_executor._play
    try:
        os.close(os.open(marks / "dier", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        process_executor._play = _play_after_the_break
    else:
        process_executor._play = _die_once_the_other_plays


def _die_once_the_other_plays(batch: Any) -> Any:
    marks = Path(os.environ[MARKS_ENV])
    _wait_for(marks / "playing")
    (marks / "died").touch()
    os._exit(3)


def _play_after_the_break(batch: Any) -> Any:
    marks = Path(os.environ[MARKS_ENV])
    (marks / f"playing-{os.getpid()}").touch()
    (marks / "playing").touch()
    # Once the pool is broken the runner stops the workers left (their batches are reported
    # lost with it): this one goes on only then, as a worker would that was mid-batch.
    deadline = time.monotonic() + WAIT_S
    while not (process_executor._stop_flag is not None and process_executor._stop_flag.value):
        assert time.monotonic() < deadline, "the runner never stopped the workers left"
        time.sleep(0.02)
    assert _original_play is not None
    return _original_play(batch)


def test_a_series_reported_lost_with_a_dead_worker_is_not_played_by_another_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=4, games=2)  # six series
    marks = _marks(tmp_path, monkeypatch)
    monkeypatch.setattr(process_executor, "_start_worker", _start_worker_one_dies_other_plays_late)
    # The runner's own series wait until a worker has died: both workers get a batch.
    counted, _ = _counting_local_series(play_series_tasks, before=lambda: _wait_for(marks / "died"))
    monkeypatch.setattr(process_executor, "play_series_tasks", counted)
    calls = _Calls()

    tasks = _tasks(url, tournament_id, tmp_path)
    outcomes = ProcessExecutor(3, processes=3).run(
        tasks, stop=threading.Event(), on_game=calls.on_game, on_series=calls.on_series
    )
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    lost = [o for o in outcomes if o.status != "finished"]
    assert lost and all("its referee process died" in o.message for o in lost), outcomes
    played = _games_by_series(url, tournament_id)
    # What run() says was played is what the database holds.
    assert {o.series_id: o.games_played for o in outcomes} == played, (outcomes, played)


# ----------------------------------------------------------- kill -9 after a stop


def _start_worker_noting_its_pid(*args: Any) -> None:
    (Path(os.environ[MARKS_ENV]) / f"worker-{os.getpid()}").touch()
    process_executor._start_worker(*args)


async def _local_series_that_outlast_the_stop(*args: Any, **kwargs: Any) -> list[SeriesOutcome]:
    """The runner's own series, slow to end after the stop (a database write riding out an
    outage, say): they hold the runner between the stop and the pool's shutdown."""
    await asyncio.to_thread(time.sleep, 3600)
    return []


def _runner_killed_after_a_stop_main() -> None:  # pragma: no cover - run in a subprocess
    """The runner side of the kill -9 test (run by ``python -c``)."""
    marks = Path(os.environ[MARKS_ENV])
    url, tournament_id, store = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    process_executor._start_worker = _start_worker_noting_its_pid  # type: ignore[assignment]
    process_executor.play_series_tasks = _local_series_that_outlast_the_stop  # type: ignore[attr-defined]
    db = open_database(url, create=False)
    tasks = tasks_for(tournament_id, db=db, store=store)
    db.close()
    stop = threading.Event()

    def on_series(outcome: SeriesOutcome) -> None:  # the worker's batch: the run stops
        stop.set()
        (marks / "stopped").touch()

    ProcessExecutor(2, processes=2).run(tasks, stop=stop, on_series=on_series)


def test_kill_9_of_the_runner_after_a_stop_leaves_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=3, games=2)  # three series
    marks = _marks(tmp_path, monkeypatch)
    runner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tests.tournament.test_process_executor_review import "
            "_runner_killed_after_a_stop_main as m; m()",
            url,
            str(tournament_id),
            str(tmp_path / "store"),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while not (marks / "stopped").exists():
            assert runner.poll() is None, runner.communicate()
            assert time.monotonic() < deadline, "the worker's series never ended"
            time.sleep(0.05)
        workers = {int(p.name.split("-")[1]) for p in marks.glob("worker-*")}
        assert workers
        time.sleep(1.5)  # the workers see the stop flag (every 0.1 s)
        assert runner.poll() is None, "the runner ended before it could be killed"
        assert alive(workers) == workers  # idle, waiting for work
        runner.send_signal(signal.SIGKILL)
        runner.wait(30)
        deadline = time.monotonic() + 20  # the docstring: "within about half a second"
        while alive(workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = alive(workers)
        assert left == set(), f"workers {left} outlived the runner killed with SIGKILL"
        assert processes_in(tmp_path) == []
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(30)
        for pid in workers:  # the orphans this test made, by id
            if alive({pid}):
                os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------- the real command


def _cli_run(tmp_path: Path, jobs: str, bots: int, games: int) -> tuple[list[str], list[str]]:
    names = [f"w{i}" for i in range(bots)]
    for name in names:
        dest = tmp_path / name
        shutil.copytree(ROOT / "sdk" / "examples" / "random", dest)
        manifest = dest / "bot.toml"
        manifest.write_text(manifest.read_text().replace('name = "random"', f'name = "{name}"'))
    where = ["--database", str(tmp_path / "kryt.db"), "--store", str(tmp_path / "store")]
    args = [
        sys.executable, "-m", "kryt", "tournament", "run", *names, "--games", str(games),
        "--backend", "process", "--unsafe", "-j", jobs, *where,
    ]  # fmt: skip
    return args, where


def _warning(name: str) -> str:
    return f"warning: running untrusted bot '{name}' WITHOUT isolation (--unsafe)"


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_each_warning_is_shown_once_at_j2_and_j3(tmp_path: Path, jobs: str) -> None:
    args, _ = _cli_run(tmp_path, jobs, bots=4, games=2)
    done = subprocess.run(
        args, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for i in range(4):
        assert done.stderr.count(_warning(f"w{i}")) == 1, done.stderr
    assert counted(tmp_path / "kryt.db") == sorted(
        {(s, n) for s, n in counted(tmp_path / "kryt.db")}
    )
    assert len(counted(tmp_path / "kryt.db")) == 12


def _interrupted_run(
    tmp_path: Path, env: dict[str, str], ready: Callable[[subprocess.Popen[bytes]], bool]
) -> tuple[subprocess.Popen[bytes], str, list[str]]:
    """A ``-j 3`` run of six series (24 games), Ctrl-C'd (SIGINT to its whole group) once
    ``ready`` says so."""
    db, _store = tmp_path / "kryt.db", tmp_path / "store"
    args, where = _cli_run(tmp_path, "3", bots=4, games=4)
    run = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not ready(run):
            if run.poll() is not None:
                break
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.02)
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
        _out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(30)
    if len(counted(db)) == 24 and run.returncode == 0:
        pytest.skip("the run ended before the Ctrl-C reached it")
    return run, err.decode(errors="replace"), where


def _resume_completes(tmp_path: Path, env: dict[str, str], where: list[str]) -> None:
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    assert wait_no_processes_in(store, 30) == []
    before = counted(db)
    assert len(before) == len(set(before)) < 24
    resume = subprocess.run(
        [sys.executable, "-m", "kryt", "tournament", "resume", "1", *where],
        cwd=tmp_path, capture_output=True, timeout=300, env=env,
    )  # fmt: skip
    assert resume.returncode == 0, resume.stderr.decode(errors="replace")
    after = counted(db)
    assert len(after) == len(set(after)) == 24
    assert set(before) <= set(after)
    assert wait_no_processes_in(store, 30) == []


def _a_worker_plays(run: subprocess.Popen[bytes]) -> bool:
    """A spawned referee worker of the run has bots of its own: it is ready and playing."""
    from tests.cli.test_referee_processes import _command_line, children

    return any("spawn_main" in _command_line(pid) and children(pid) for pid in children(run.pid))


def test_ctrl_c_of_j3_once_its_worker_plays_stops_cleanly_and_resume_finishes(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run, text, where = _interrupted_run(tmp_path, env, _a_worker_plays)
    assert run.returncode == 130, text
    assert "Traceback" not in text and "resume with: kryt tournament resume 1" in text, text
    for i in range(4):
        assert text.count(_warning(f"w{i}")) <= 1, text
    _resume_completes(tmp_path, env, where)


SLOW_WORKER_START = """
import sys, time
if "--multiprocessing-fork" in sys.argv:  # a referee worker starting on a loaded machine
    time.sleep(4)
"""


def test_ctrl_c_while_a_worker_starts_shows_no_traceback(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_WORKER_START)
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    store = tmp_path / "store"
    run, text, _where = _interrupted_run(tmp_path, env, lambda run: bool(processes_in(store)))
    assert run.returncode == 130, text
    assert "resume with: kryt tournament resume 1" in text, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
