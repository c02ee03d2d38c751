"""`-j N` with referee processes: the runner's process is one of them. It plays at once, up
to all N series, while the workers it spawned start; a worker that becomes ready takes its
share; a worker that dies gives its batch back as ``interrupted`` and the runner plays what
is left."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arena.db import games_of_series, open_database, series_of_tournament
from arena.tournament import process_executor
from arena.tournament.config import load_config
from arena.tournament.process_executor import NOT_STARTED_DEAD_REFEREE, ProcessExecutor
from arena.tournament.runner import (
    SeriesOutcome,
    SeriesTask,
    create,
    play_series_tasks,
    tasks_for,
)
from tests.referee.test_tournament import check_complete, verify_all

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
MARKS_ENV = "KRYT_TEST_REFEREE_MARKS"
WAIT_S = 300.0


def _round_robin(tmp_path: Path, bots: int, games: int) -> tuple[str, int]:
    """A round robin of ``bots`` copies of the random example bot (one series per pair)."""
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=_copies(tmp_path, bots),
        games_per_pair=games,
        backend="process",
        allow_unsafe=True,
        seed=5,
    )
    tournament_id = create(config, db=db, store=tmp_path / "store")
    db.close()
    return url, tournament_id


def _copies(tmp_path: Path, count: int) -> list[str]:
    paths = []
    for i in range(count):
        dest = tmp_path / "bots" / f"r{i}"
        shutil.copytree(ROOT / "sdk" / "examples" / "random", dest)
        manifest = dest / "bot.toml"
        manifest.write_text(manifest.read_text().replace('name = "random"', f'name = "r{i}"'))
        paths.append(str(dest))
    return paths


def _marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder where the test and its workers leave marks for each other."""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv(MARKS_ENV, str(marks))
    return marks


def _tasks(url: str, tournament_id: int, tmp_path: Path) -> list[SeriesTask]:
    db = open_database(url, create=False)
    try:
        return tasks_for(tournament_id, db=db, store=tmp_path / "store")
    finally:
        db.close()


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


# Initializers of the workers (pickled by name, imported in the worker process).


def _start_worker_when_released(*args: Any) -> None:
    """A worker that is not ready until the test creates ``release`` in the marks folder."""
    _wait_for(Path(os.environ[MARKS_ENV]) / "release")
    process_executor._start_worker(*args)


def _start_worker_that_dies_on_its_batch(*args: Any) -> None:
    """A worker that starts as usual and dies (as a crash would) on the batch it is given,
    leaving ``died`` in the marks folder first."""
    process_executor._start_worker(*args)
    process_executor._play = _die  # type: ignore[assignment]


def _die(batch: object) -> object:
    (Path(os.environ[MARKS_ENV]) / "died").touch()
    os._exit(3)


def _counting_local_series(
    original: Callable[..., Any], before: Callable[[], None] | None = None
) -> tuple[Callable[..., Any], list[int]]:
    """``play_series_tasks`` as this process's loop calls it, noting the most series it
    plays at once (and running ``before`` in a thread first, when given)."""
    state = {"now": 0}
    peak = [0]

    async def counted(*args: Any, **kwargs: Any) -> list[SeriesOutcome]:
        state["now"] += 1
        peak[0] = max(peak[0], state["now"])
        try:
            if before is not None:
                await asyncio.to_thread(before)
            result: list[SeriesOutcome] = await original(*args, **kwargs)
            return result
        finally:
            state["now"] -= 1

    return counted, peak


def test_the_runner_plays_at_once_up_to_the_whole_concurrency_while_workers_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=3, games=2)  # three series
    marks = _marks(tmp_path, monkeypatch)
    monkeypatch.setattr(process_executor, "_start_worker", _start_worker_when_released)
    counted, peak = _counting_local_series(play_series_tasks)
    monkeypatch.setattr(process_executor, "play_series_tasks", counted)
    ended: list[SeriesOutcome] = []

    def on_series(outcome: SeriesOutcome) -> None:
        ended.append(outcome)
        if len(ended) == 3:  # every series played while the worker was held back
            (marks / "release").touch()

    tasks = _tasks(url, tournament_id, tmp_path)
    outcomes = ProcessExecutor(2, processes=2).run(
        tasks, stop=threading.Event(), on_series=on_series
    )
    assert sorted(o.status for o in outcomes) == ["finished"] * 3, outcomes
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    assert peak == [2], "the runner did not play two series at once before its worker was ready"
    assert check_complete(url, tournament_id) == 6
    verify_all(url, tournament_id)


def test_a_worker_that_dies_gives_back_its_batch_and_the_runner_plays_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, tournament_id = _round_robin(tmp_path, bots=4, games=2)  # six series
    marks = _marks(tmp_path, monkeypatch)
    monkeypatch.setattr(process_executor, "_start_worker", _start_worker_that_dies_on_its_batch)
    # This process's series wait until the worker has taken a batch and died with it.
    counted, _ = _counting_local_series(play_series_tasks, before=lambda: _wait_for(marks / "died"))
    monkeypatch.setattr(process_executor, "play_series_tasks", counted)
    tasks = _tasks(url, tournament_id, tmp_path)
    outcomes = ProcessExecutor(2, processes=2).run(tasks, stop=threading.Event())
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    lost = [o for o in outcomes if o.status != "finished"]
    assert len(lost) == 1, outcomes  # the worker's share of -j 2 on two referees: one series
    assert lost[0].status == "interrupted" and "its referee process died" in lost[0].message
    assert not any(NOT_STARTED_DEAD_REFEREE in o.message for o in outcomes), outcomes
    played = _games_by_series(url, tournament_id)
    assert played == {t.series_id: 0 if t.series_id == lost[0].series_id else 2 for t in tasks}


def _games_by_series(url: str, tournament_id: int) -> dict[int, int]:
    db = open_database(url, create=False)
    try:
        with db.read_session() as session:
            return {
                s.id: len([g for g in games_of_series(s.id, session=session) if not g.voided])
                for s in series_of_tournament(tournament_id, session=session)
                if s.id is not None
            }
    finally:
        db.close()


def test_the_callbacks_never_run_on_the_runners_loop_so_a_slow_one_costs_no_bot_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's callbacks (the CLI's refit and its database reads among them) run in a
    thread of their own: run on the runner's event loop, a slow one held up the other
    series' games there, and the bot waiting for its turn was charged the delay."""
    url, tournament_id = _round_robin(tmp_path, bots=3, games=3)  # three series
    marks = _marks(tmp_path, monkeypatch)
    # The worker is held back: every series plays on the runner's loop, two at once.
    monkeypatch.setattr(process_executor, "_start_worker", _start_worker_when_released)
    threads: set[str] = set()
    records: list[Any] = []
    ended: list[SeriesOutcome] = []

    def on_game(series_id: int, number: int, record: Any) -> None:
        threads.add(threading.current_thread().name)
        records.append(record)
        if len(records) == 1:
            time.sleep(3.0)  # as a refit of a large tournament might

    def on_series(outcome: SeriesOutcome) -> None:
        threads.add(threading.current_thread().name)
        ended.append(outcome)
        if len(ended) == 3:
            (marks / "release").touch()

    tasks = _tasks(url, tournament_id, tmp_path)
    outcomes = ProcessExecutor(2, processes=2).run(
        tasks, stop=threading.Event(), on_game=on_game, on_series=on_series
    )
    assert sorted(o.status for o in outcomes) == ["finished"] * 3, outcomes
    assert len(ended) == 3 and len(records) == 9  # every call made before run() returned
    assert "kryt-series-loop" not in threads, threads
    slowest = max(move.seconds for record in records for move in record.moves)
    assert slowest < 1.5, f"a bot was charged {slowest:.2f} s for a move"


def test_a_batch_the_broken_pool_refuses_is_given_back_to_this_process() -> None:
    """A worker that dies between batches leaves nothing of ours running to report it: the
    pool's next ``submit`` raises instead. That batch never started; it goes back first in
    line for the runner's own loop, which now plays the whole concurrency."""
    from concurrent.futures.process import BrokenProcessPool

    from arena.tournament.process_executor import _Pool, _WarningsOnce, _Work

    tasks = [
        SeriesTask(database_url="sqlite://", tournament_id=1, series_id=n, config={}, store="")
        for n in range(1, 5)
    ]

    class RefusingExecutor:
        def submit(self, *args: object) -> None:
            raise BrokenProcessPool("a worker died")

    work = _Work(tasks, 2, share=1)
    pool = _Pool(0, work, on_game=None, shown=_WarningsOnce())
    pool.size = 1
    pool._executor = RefusingExecutor()  # type: ignore[assignment]
    work.worker_ready()
    assert work.slots_here() == 1
    pool.refill()
    assert not pool.pending
    assert [t.series_id for t in work.take(4)] == [1, 2, 3, 4]  # nothing lost, order kept
    assert work.slots_here() == 2 and work.ready_workers() == 0
