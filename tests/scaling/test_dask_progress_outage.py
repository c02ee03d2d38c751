"""The Dask coordinator's own database work rides out a lost connection as the rest of a run
does: opening the database, reading the games already recorded as the run starts and a
series' games as it ends are retried (one note when the database is lost, one when it is
back), a progress poll is skipped meanwhile, and the run's stop ends a wait at once.

The lost connection is injected into this process (the coordinator) only, as in
``tests/tournament/test_coordinator_rides_out_an_outage.py`` (SQLite never loses one); the
workers of the local cluster are other processes and see a working database.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.db import (
    DatabaseUnavailableError,
    counted_numbers,
    open_database,
    running_counted_numbers,
)
from arena.db.engine import RETRY_SECONDS_ENV
from arena.tournament import dask_executor
from arena.tournament.dask_executor import DaskExecutor
from arena.tournament.runner import tasks_for
from referee.record import GameRecord
from tests.db.test_disconnect_retry import TERMINATED
from tests.scaling.helpers import all_games, check_complete, make_tournament
from tests.tournament.outage import Lost
from tests.tournament.test_coordinator_rides_out_an_outage import SESSION_LOST

GAMES = 4
BOTS = ("random", "greedy", "mc")
DEADLINE_S = 120.0
"""How soon a stop must end a wait that would otherwise last the whole (300 s) window:
generous on a busy machine, where it normally takes well under a second."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def executor() -> Iterator[DaskExecutor]:
    """One local cluster (two worker processes) for every run of this module."""
    with DaskExecutor(None, workers=2, poll_seconds=0.1) as executor:
        yield executor


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "arena.db.engine"]


MOMENTS: dict[str, tuple[str, Callable[..., Any], int, int, Exception, str]] = {
    # moment: (name in dask_executor, original, calls passed first, failures, error, what)
    "opening": ("open_database", open_database, 0, 2, SESSION_LOST, "opening it"),
    "start": (
        "counted_numbers",
        counted_numbers,
        0,
        2,
        TERMINATED,
        "reading the games already recorded in the run's series",
    ),
    "poll": (
        "running_counted_numbers",
        running_counted_numbers,
        0,
        3,
        TERMINATED,
        "polling the run's progress (skipped until it is back)",
    ),
    "series end": (
        "counted_numbers",
        counted_numbers,
        1,
        2,
        TERMINATED,
        "reading the games of series ",
    ),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_dask_run_whose_progress_reads_fail_for_a_while_stores_every_game_once(
    moment: str,
    executor: DaskExecutor,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    store = tmp_path / "store"
    tid = make_tournament(db, store, bots=BOTS, games=GAMES)
    tasks = tasks_for(tid, db=db, store=store)
    name, original, skip, times, error, what = MOMENTS[moment]
    lost = Lost(original, times, skip=skip, error=error)
    monkeypatch.setattr(dask_executor, name, lost)
    seen: list[tuple[int, int]] = []

    def on_game(series_id: int, number: int, record: GameRecord) -> None:
        seen.append((series_id, number))

    with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
        outcomes = executor.run(tasks, stop=threading.Event(), on_game=on_game)

    assert lost.failed == times, f"{moment}: the failing read was not tried {times} times"
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    assert sum(o.games_played for o in outcomes) == len(BOTS) * GAMES, outcomes
    assert check_complete(db, tid) == len(BOTS) * GAMES
    # Every game was reported exactly once, those a skipped poll missed too.
    assert sorted(seen) == all_games(db, tid)
    said = notes(caplog)
    lost_notes = [n for n in said if "lost while" in n]
    assert len(lost_notes) == 1 and f"lost while {what}" in lost_notes[0], said
    assert len([n for n in said if "is back after" in n]) == 1, said
    db.close()


def test_a_stop_ends_the_wait_of_a_lost_progress_read_and_resume_finishes(
    executor: DaskExecutor,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(RETRY_SECONDS_ENV, "300")
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    store = tmp_path / "store"
    tid = make_tournament(db, store, bots=BOTS, games=GAMES)
    stop = threading.Event()
    stopped: list[float] = []

    def stop_the_run() -> None:
        stopped.append(time.monotonic())
        stop.set()

    def then(failures: int) -> None:
        if failures == 1:  # the first series ended: stop the run 2 s into its wait
            threading.Timer(2.0, stop_the_run).start()

    # The first read passes (the run's start), every read as a series ends fails.
    lost = Lost(counted_numbers, 10**6, skip=1, then=then)
    monkeypatch.setattr(dask_executor, "counted_numbers", lost)
    with pytest.raises(DatabaseUnavailableError):
        executor.run(tasks_for(tid, db=db, store=store), stop=stop)
    ended = time.monotonic()
    assert stopped, "the run gave up before the stop: the read was not retried"
    assert lost.failed >= 2, "the read was not retried"
    assert ended - stopped[0] < DEADLINE_S, "the stop did not end the wait"

    # Nothing recorded was lost: a resumed run plays exactly what is missing.
    monkeypatch.setattr(dask_executor, "counted_numbers", counted_numbers)
    outcomes = executor.run(tasks_for(tid, db=db, store=store), stop=threading.Event())
    assert {o.status for o in outcomes} <= {"finished"}, outcomes
    assert check_complete(db, tid) == len(BOTS) * GAMES
    db.close()
