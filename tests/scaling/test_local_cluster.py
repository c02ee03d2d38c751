"""The Dask executor with no scheduler given (a LocalCluster) on SQLite: a run stopped after
its first game and resumed loses and duplicates nothing; plus argument and wiring errors."""

from __future__ import annotations

import pickle
import socket
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import distributed as _distributed
import pytest

from arena.db import (
    Database,
    SeriesStatus,
    games_of_series,
    open_database,
    series_of_tournament,
)
from arena.tournament.dask_executor import (
    DaskExecutor,
    DaskExecutorError,
    SchedulerUnavailableError,
    play_on_worker,
)
from arena.tournament.executors import Executor
from arena.tournament.runner import SeriesOutcome, SeriesTask, tasks_for
from referee.record import GameRecord
from tests.scaling.helpers import (
    all_games,
    check_complete,
    make_tournament,
    wait_no_processes_in,
)

GAMES = 4

# distributed is untyped; one Any name keeps mypy --strict quiet, as in the executor.
distributed: Any = _distributed


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_local_cluster_stops_on_request_and_resumes_without_loss(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    db = open_database(url)
    store = tmp_path / "store"
    tournament_id = make_tournament(db, store, bots=("random", "greedy", "mc"), games=GAMES)
    seen: list[tuple[int, int]] = []
    records: list[GameRecord] = []
    stop = threading.Event()

    def on_game(series_id: int, number: int, record: GameRecord) -> None:
        seen.append((series_id, number))
        records.append(record)
        stop.set()  # stop the run as soon as the first game is reported

    with DaskExecutor(None, workers=2, poll_seconds=0.1) as executor:
        first = executor.run(
            tasks_for(tournament_id, db=db, store=store), stop=stop, on_game=on_game
        )
        assert "interrupted" in {o.status for o in first}, first
        # Two series start at once (one per worker). Games are reported by polling the
        # database, so on a busy machine one series may end before its first game is
        # reported and let the third start before the stop: either way is right.
        for outcome in first:
            # Stopped between two games, during one (not recorded), or before it began.
            following = outcome.games_played + 1
            assert outcome.status == "finished" or outcome.message in (
                "stopped before it started",
                f"stopped before game {following}",
                f"stopped during game {following}; it will be replayed",
            ), outcome
        assert [o.message for o in first].count("stopped before it started") <= 1, first
        remaining = tasks_for(tournament_id, db=db, store=store)
        assert remaining, "the stop came too late to leave anything to resume"
        second = executor.run(
            remaining,
            stop=threading.Event(),
            on_game=lambda series, number, record: seen.append((series, number)),
        )
        _ctrl_c_stops_the_workers_and_resume_finishes(executor, db, store)
        _a_series_given_a_set_stop_starts_no_bot(executor, db, store)
    assert {o.status for o in second} == {"finished"}
    assert {o.series_id for o in second} == {t.series_id for t in remaining}
    assert check_complete(db, tournament_id) == 3 * GAMES
    # Every game was reported exactly once over the two runs, with its stored deck.
    assert sorted(seen) == all_games(db, tournament_id)
    assert records and all(len(r.deck) == 36 and r.ending.counts for r in records)
    # Each record carries the tournament's turn limit, and so does each stored game.
    assert {r.turn_limit for r in records} == {400}
    with db.read_session() as session:
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            stored = games_of_series(series.id, session=session)
            assert stored and {g.turn_limit for g in stored} == {400}
    # games_played counts what each run added, as found in the database.
    assert sum(o.games_played for o in first + second) == 3 * GAMES


def _ctrl_c_stops_the_workers_and_resume_finishes(
    executor: DaskExecutor, db: Database, store: Path
) -> None:
    """Ctrl-C in the coordinator (here: raised from a progress callback) re-raises, sets the
    stop flag, and the series on the workers stop early and close their bots; resume then
    completes the tournament."""
    games = 8  # long enough that no series can end before the first game is reported
    tournament_id = make_tournament(db, store, bots=("random", "greedy", "mc"), games=games)
    stop = threading.Event()

    def interrupt(series_id: int, number: int, record: GameRecord) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        executor.run(tasks_for(tournament_id, db=db, store=store), stop=stop, on_game=interrupt)
    assert stop.is_set()
    assert wait_no_processes_in(store, seconds=30) == [], "bots outlived the interrupted run"
    # The series that were running stopped early (left unfinished), not played to the end.
    with db.read_session() as session:
        statuses = [s.status for s in series_of_tournament(tournament_id, session=session)]
    assert SeriesStatus.FINISHED.value not in statuses, statuses
    outcomes = executor.run(tasks_for(tournament_id, db=db, store=store), stop=threading.Event())
    assert [o.status for o in outcomes] == ["finished"] * 3
    assert check_complete(db, tournament_id) == 3 * games


def _a_series_given_a_set_stop_starts_no_bot(
    executor: DaskExecutor, db: Database, store: Path
) -> None:
    """A series whose run was stopped before a worker took it returns at once: no game, no
    bot started (the path the first run above may or may not take, made certain here)."""
    tournament_id = make_tournament(db, store, bots=("random", "greedy"), games=GAMES)
    (task,) = tasks_for(tournament_id, db=db, store=store)
    stop_name = f"kryt-stop-test-{tournament_id}"
    remote_stop = distributed.Event(stop_name, client=executor.client)
    remote_stop.set()
    try:
        future = executor.client.submit(play_on_worker, task, stop_name, pure=False)
        outcome = future.result(timeout=120)
    finally:
        remote_stop.clear()
    assert outcome == SeriesOutcome(task.series_id, "interrupted", 0, "stopped before it started")
    assert wait_no_processes_in(store, seconds=30) == []
    with db.read_session() as session:
        assert games_of_series(task.series_id, session=session) == []


def test_bad_arguments_are_refused_with_the_offending_value() -> None:
    executor: Executor = DaskExecutor(None)  # the protocol the CLI codes against
    assert isinstance(executor, DaskExecutor)
    with pytest.raises(DaskExecutorError, match="'localhost:8786'"):
        DaskExecutor("localhost:8786")
    with pytest.raises(DaskExecutorError, match="workers must be >= 1, got 0"):
        DaskExecutor(None, workers=0)
    with pytest.raises(DaskExecutorError, match="retries must be >= 0, got -1"):
        DaskExecutor(None, retries=-1)
    with pytest.raises(DaskExecutorError, match="poll_seconds must be > 0, got 0"):
        DaskExecutor(None, poll_seconds=0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    open_database(url).close()
    address = f"tcp://127.0.0.1:{_free_port()}"
    executor = DaskExecutor(address, connect_timeout=1.0)
    with pytest.raises(SchedulerUnavailableError, match=address):
        executor.run([_task(url, 1)], stop=threading.Event())


def _task(url: str, series_id: int) -> SeriesTask:
    return SeriesTask(
        database_url=url, tournament_id=1, series_id=series_id, config={}, store="/tmp/store"
    )


def test_no_tasks_needs_no_cluster_and_mixed_databases_are_refused() -> None:
    executor = DaskExecutor("tcp://127.0.0.1:1")
    assert executor.run([], stop=threading.Event()) == []
    assert executor._client is None  # nothing was contacted
    with pytest.raises(DaskExecutorError, match="2 databases"):
        executor.run(
            [_task("sqlite:///a.db", 1), _task("sqlite:///b.db", 2)], stop=threading.Event()
        )
    remote = DaskExecutor("tcp://10.0.0.5:8786")
    with pytest.raises(DaskExecutorError, match="use a PostgreSQL database"):
        remote.run([_task("sqlite:///a.db", 1)], stop=threading.Event())
    assert remote._client is None
    with pytest.raises(DaskExecutorError, match=r"given twice: \[3, 3\]"):
        executor.run(
            [_task("sqlite:///a.db", 3), _task("sqlite:///a.db", 3)], stop=threading.Event()
        )


def test_what_travels_to_a_worker_is_plain_picklable_data() -> None:
    task = _task("postgresql+psycopg://u:p@db:5432/kryt", 9)
    assert pickle.loads(pickle.dumps(task)) == task
    assert pickle.loads(pickle.dumps(replace(task, store="/srv/kryt"))).store == "/srv/kryt"
    # The task function travels by reference: workers import it from the installed package.
    assert pickle.loads(pickle.dumps(play_on_worker)) is play_on_worker
