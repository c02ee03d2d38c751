"""Tournaments on a real multi-process Dask cluster on loopback with a shared PostgreSQL:
a run to completion, and a run that loses a worker (SIGKILL) in the middle of a series."""

from __future__ import annotations

import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from arena.db import Database, open_database
from arena.tournament.dask_executor import DaskExecutor
from arena.tournament.runner import GameCallback, SeriesOutcome, SeriesTask, tasks_for
from tests.scaling.conftest import LoopbackCluster
from tests.scaling.helpers import (
    all_games,
    check_complete,
    game_ids,
    make_tournament,
    wait_no_processes_in,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(240)]

GAMES = 10  # long enough series that a poll on a busy machine catches one in progress
BOTS = ("random", "greedy", "mc")


@pytest.fixture
def db(postgres_url: str) -> Any:
    database = open_database(postgres_url)
    yield database
    database.close()


def test_a_tournament_runs_to_completion_on_two_workers(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    tournament_id = make_tournament(db, tmp_path / "store", bots=BOTS, games=GAMES)
    seen: list[tuple[int, int]] = []
    finished: list[SeriesOutcome] = []
    with DaskExecutor(loopback_cluster.address, poll_seconds=0.2) as executor:
        sandboxes = executor.worker_sandboxes("process", False)
        outcomes = executor.run(
            tasks_for(tournament_id, db=db, store=tmp_path / "store"),
            stop=threading.Event(),
            on_game=lambda series, number, record: seen.append((series, number)),
            on_series=finished.append,
        )
        ran_on = executor.client.run(_series_played_here)
        # Sweeping runs on every worker (a prefix of this test's own: tournament ids repeat
        # across test databases, and other runs' live sandboxes must not be touched).
        swept = executor.sweep_workers(f"kryt-test-{uuid.uuid4().hex}-")
    assert len(sandboxes) == 2 and all("process" in d for d in sandboxes.values()), sandboxes
    assert sorted(o.status for o in outcomes) == ["finished"] * 3, outcomes
    assert finished == outcomes
    assert swept == 0
    assert wait_no_processes_in(tmp_path / "store") == []  # every bot was stopped
    assert {o.games_played for o in outcomes} == {GAMES}
    # Progress came from the database: every game reported once, none invented.
    assert sorted(seen) == all_games(db, tournament_id)
    assert check_complete(db, tournament_id) == 3 * GAMES
    # Both workers took part (one thread each, three series), each series on one of them.
    assert len(ran_on) == 2 and all(ran_on.values()), ran_on
    assert sum(len(keys) for keys in ran_on.values()) == 3, ran_on


def _series_played_here(dask_worker: Any) -> list[str]:
    """Keys of the series tasks whose results this worker produced (run on each worker)."""
    return sorted(
        {
            str(entry[0])
            for entry in dask_worker.state.log
            if len(entry) > 1 and entry[1] == "put-in-memory" and "kryt-series" in str(entry[0])
        }
    )


def _executing(dask_worker: Any) -> list[str]:
    """Keys of the tasks this worker is executing right now (run on a worker)."""
    return [str(ts.key) for ts in dask_worker.state.executing]


def _series_of(key: str) -> int:
    found = re.fullmatch(r"kryt-series-t\d+-s(\d+)-[0-9a-f]+", key)
    assert found, key
    return int(found.group(1))


def test_a_killed_worker_loses_no_game_and_plays_none_twice(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    tournament_id = make_tournament(db, tmp_path / "store", bots=BOTS, games=GAMES)
    tasks = tasks_for(tournament_id, db=db, store=tmp_path / "store")
    seen: list[tuple[int, int]] = []
    outcomes, series_id, before = _run_and_kill_a_busy_worker(
        loopback_cluster,
        db,
        tasks,
        on_game=lambda series, number, record: seen.append((series, number)),
    )
    assert sorted(o.status for o in outcomes) == ["finished"] * 3, outcomes
    assert sorted(seen) == all_games(db, tournament_id), "a game was reported twice or lost"
    assert check_complete(db, tournament_id) == 3 * GAMES
    # The games the dead worker had committed are the very same rows: none was replayed.
    after = game_ids(db, series_id)
    assert {n: after[n] for n in before} == before
    assert len(after) == GAMES > len(before)
    # The dead worker's bots died with it; the survivor's were closed.
    assert wait_no_processes_in(tmp_path / "store") == []


def _run_and_kill_a_busy_worker(
    cluster: LoopbackCluster,
    db: Database,
    tasks: list[SeriesTask],
    on_game: GameCallback | None = None,
) -> tuple[list[SeriesOutcome], int, dict[int, int]]:
    """Run ``tasks`` on the cluster and SIGKILL the worker of a series caught in progress;
    the run's outcomes once it has ended, that series and the games it had committed when
    its worker was stopped."""
    outcomes: list[SeriesOutcome] = []
    errors: list[BaseException] = []

    def coordinator() -> None:
        try:
            with DaskExecutor(cluster.address, poll_seconds=0.2) as executor:
                outcomes.extend(executor.run(tasks, stop=threading.Event(), on_game=on_game))
        except BaseException as exc:  # surfaced in the test thread below
            errors.append(exc)

    thread = threading.Thread(target=coordinator, daemon=True)
    thread.start()
    for _ in range(20):
        victim, series_id, _sampled = _wait_for_a_series_in_progress(cluster, db)
        # The sample may be stale by now (a busy machine can finish the series between the
        # poll and the kill): freeze the worker, then read what the series committed. Fewer
        # than all its games means the frozen worker is still in the middle of it.
        cluster.freeze_worker(victim)
        before = game_ids(db, series_id)
        if len(before) < GAMES:
            break
        cluster.thaw_worker(victim)
    else:
        raise AssertionError(f"no series was frozen in progress\n{cluster.log_text()}")
    cluster.kill_worker(victim)
    thread.join(180)
    assert not thread.is_alive(), "the run did not end after losing a worker"
    assert not errors, errors
    return outcomes, series_id, before


def _wait_for_a_series_in_progress(
    cluster: LoopbackCluster, db: Database
) -> tuple[str, int, dict[int, int]]:
    """A worker that is executing a series with some (not all) games committed: its name,
    the series and that series' committed games at this moment."""
    deadline = time.monotonic() + 120
    with DaskExecutor(cluster.address) as watcher:
        client = watcher.client
        names = {
            address: info["name"] for address, info in client.scheduler_info()["workers"].items()
        }
        while time.monotonic() < deadline:
            for address, keys in client.run(_executing).items():
                for key in keys:
                    if "kryt-series" not in key:
                        continue
                    series_id = _series_of(key)
                    committed = game_ids(db, series_id)
                    if 1 <= len(committed) <= GAMES - 2:
                        return str(names[address]), series_id, committed
            time.sleep(0.05)
    raise AssertionError(f"no series was caught in progress\n{cluster.log_text()}")


def test_a_result_lost_with_its_worker_is_waited_for_not_reported_aborted(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path, monkeypatch: Any
) -> None:
    """A series ends, and the worker holding its result dies before the coordinator reads
    it: Dask marks the future ``lost`` and computes it again. The coordinator waits for that
    (a resume with every game recorded, so nothing is played twice) instead of reporting the
    series ``aborted`` with no error."""
    tournament_id = make_tournament(db, tmp_path / "store", bots=BOTS, games=GAMES)
    tasks = tasks_for(tournament_id, db=db, store=tmp_path / "store")
    seen: list[tuple[int, int]] = []
    lost: list[tuple[int, str]] = []
    original = DaskExecutor._outcome

    def lose_the_first_result(self: DaskExecutor, future: Any, task: Any) -> Any:
        if not lost and future.status == "finished":
            workers = self.client.scheduler_info()["workers"]
            holders = self.client.who_has(future)[future.key]
            assert holders, "a finished future held by no worker"
            loopback_cluster.kill_worker(str(workers[holders[0]]["name"]))
            deadline = time.monotonic() + 60
            while future.status == "finished" and time.monotonic() < deadline:
                time.sleep(0.02)
            lost.append((task.series_id, str(future.status)))
        return original(self, future, task)

    monkeypatch.setattr(DaskExecutor, "_outcome", lose_the_first_result)
    with DaskExecutor(loopback_cluster.address, poll_seconds=0.2) as executor:
        outcomes = executor.run(
            tasks,
            stop=threading.Event(),
            on_game=lambda series, number, record: seen.append((series, number)),
        )
    assert len(lost) == 1 and lost[0][1] in ("lost", "pending"), lost
    assert sorted(o.status for o in outcomes) == ["finished"] * 3, outcomes
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    assert sorted(seen) == all_games(db, tournament_id), "a game was reported twice or lost"
    assert check_complete(db, tournament_id) == 3 * GAMES
    assert wait_no_processes_in(tmp_path / "store") == []


@pytest.fixture
def impatient_cluster(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> LoopbackCluster:
    """The loopback cluster with Dask's ``allowed-failures`` at 0 instead of 3: the first
    worker to die while running a series is the last one that series is allowed, so the
    path a series takes after its third dead worker on a default cluster is taken at once."""
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "0")
    cluster: LoopbackCluster = request.getfixturevalue("loopback_cluster")
    return cluster


def test_a_series_out_of_worker_deaths_is_aborted_with_its_games_and_a_resume_finishes_it(
    db: Database, impatient_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    """docs/scaling.md: a series whose workers die more often than Dask allows is reported
    ``aborted`` (with the games it committed, and why), the other series are not held up,
    its bots die with the worker, and a resume finishes it without playing a game twice."""
    tournament_id = make_tournament(db, tmp_path / "store", bots=BOTS, games=GAMES)
    tasks = tasks_for(tournament_id, db=db, store=tmp_path / "store")
    outcomes, series_id, before = _run_and_kill_a_busy_worker(impatient_cluster, db, tasks)
    by_series = {o.series_id: o for o in outcomes}
    assert sorted(by_series) == sorted(t.series_id for t in tasks), outcomes
    assert by_series[series_id].status == "aborted", outcomes
    # A series handed to the dead worker to start next counts its death too (Dask hands a
    # one-thread worker up to two tasks): it may be aborted with it, never anything else.
    assert {o.status for o in outcomes} <= {"aborted", "finished"}, outcomes
    kept = {o.series_id: game_ids(db, o.series_id) for o in outcomes if o.status == "aborted"}
    for outcome in outcomes:
        if outcome.status == "aborted":
            assert "KilledWorker" in outcome.message, outcome
            assert outcome.games_played == len(kept[outcome.series_id]) < GAMES, outcome
        else:
            assert outcome.games_played == GAMES, outcome
    assert {n: kept[series_id][n] for n in before} == before  # what it committed is kept
    assert wait_no_processes_in(tmp_path / "store") == []

    # The resume plays what is left of the aborted series only, on the surviving worker.
    resumed = tasks_for(tournament_id, db=db, store=tmp_path / "store")
    assert sorted(t.series_id for t in resumed) == sorted(kept)
    with DaskExecutor(impatient_cluster.address, poll_seconds=0.2) as executor:
        again = executor.run(resumed, stop=threading.Event())
    assert sorted((o.series_id, o.status) for o in again) == [
        (s, "finished") for s in sorted(kept)
    ], again
    for series, games in kept.items():
        after = game_ids(db, series)
        assert {n: after[n] for n in games} == games  # none of its games played again
        assert len(after) == GAMES
    assert check_complete(db, tournament_id) == 3 * GAMES
    assert wait_no_processes_in(tmp_path / "store") == []
