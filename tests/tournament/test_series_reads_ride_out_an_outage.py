"""What a series reads before its games (opening the database in a fresh process, the
series, its bots, the games stored already), and the run's final read of its series, ride
out a lost database connection as the game writes do: the run carries on once the database
is back, one line when it is lost and one when it is back. A stop ends the wait (the series
is interrupted, not failed), and an outage longer than the retries still raises.

The lost connection is injected (``tests/tournament/outage.py``: SQLite never loses one);
``tests/db/test_postgres_reconnect_reads.py`` does it for real.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from arena.db import (
    Database,
    DatabaseUnavailableError,
    get_series,
    get_submission,
    open_database,
    series_of_tournament,
)
from arena.db import games_of_series as stored_games
from arena.db.engine import RETRY_SECONDS_ENV, lost_connection
from arena.tournament import runner, service, store, table_runner
from arena.tournament.runner import SeriesTask, play_series_task, tasks_for
from tests.tournament.outage import Lost, LostOpen, greedy_vs_random, notes

GAMES = 4

pytestmark = pytest.mark.timeout(600)


def tournament(tmp_path: Path, ruleset: str) -> tuple[Database, int, SeriesTask]:
    db, tid = greedy_vs_random(tmp_path, GAMES, ruleset=ruleset)
    [task] = tasks_for(tid, db=db, store=tmp_path / "store")
    return db, tid, task


def counted(db: Database, series_id: int) -> list[int]:
    with db.read_session() as session:
        return sorted(g.number for g in stored_games(series_id, session=session) if not g.voided)


@pytest.fixture(autouse=True)
def fresh_databases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's series open their database anew, as in a fresh referee process."""
    monkeypatch.setattr(runner, "_databases", {})


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_a_resumed_series_reads_across_a_lost_connection(
    ruleset: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db, _, task = tournament(tmp_path, ruleset)
    # A first run records one game and stops: the second one resumes the series.
    stop = threading.Event()
    first = play_series_task(task, stop=stop, on_game=lambda *_: stop.set())
    assert first.status == "interrupted", first
    assert counted(db, task.series_id) == [1]

    where = runner if ruleset == "default" else table_runner
    reads = {
        "open": LostOpen(open_database, 2),
        "series": Lost(get_series, 2),
        "games": Lost(stored_games, 2),
        "bots": Lost(get_submission, 2),  # materialize: the bots' files
    }
    monkeypatch.setattr(runner, "_databases", {})  # resumed by a fresh referee process
    monkeypatch.setattr(runner, "open_database", reads["open"])
    monkeypatch.setattr(where, "get_series", reads["series"])
    monkeypatch.setattr(where, "games_of_series", reads["games"])
    monkeypatch.setattr(store, "get_submission", reads["bots"])
    with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
        outcome = play_series_task(task, stop=threading.Event())

    assert outcome.status == "finished", outcome
    assert outcome.games_played == GAMES - 1  # exactly the missing games
    assert counted(db, task.series_id) == list(range(1, GAMES + 1))  # each one once
    for name, read in reads.items():
        assert read.failed == read.times, f"the {name} read was not retried"
    said = notes(caplog)
    assert any("lost while opening it" in n for n in said), said
    assert any(f"lost while reading series {task.series_id}" in n for n in said), said
    assert any("lost while reading submission" in n for n in said), said
    assert any("is back after" in n for n in said), said
    assert all("\n" not in n for n in said), said
    # One "lost" note per outage, each followed by its "back" note.
    assert [("lost while" in n) for n in said] == [True, False] * (len(said) // 2), said


def test_the_final_read_of_a_run_rides_out_a_lost_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    db, tid, _ = tournament(tmp_path, "default")
    final = Lost(series_of_tournament, 2, armed=False)
    monkeypatch.setattr(service, "series_of_tournament", final)

    def finished(_outcome: object) -> None:
        final.armed = True  # the series is over: the next read is the run's final one

    with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
        result = service.run_tournament(tid, db, store=tmp_path / "store", on_series=finished)
    assert final.failed == 2
    assert result.finished and result.unfinished == 0, result
    assert service.tournament_state(tid, db).status == "finished"
    said = notes(caplog)
    assert any(f"lost while reading the series of tournament {tid}" in n for n in said), said
    assert any("is back after" in n for n in said), said


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_a_stop_ends_the_wait_and_the_series_is_interrupted(
    ruleset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _, task = tournament(tmp_path, ruleset)
    where = runner if ruleset == "default" else table_runner
    monkeypatch.setattr(where, "get_series", Lost(get_series, 10**6))
    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)  # Ctrl-C, or the run's lease lost
    timer.start()
    began = time.monotonic()
    try:
        outcome = play_series_task(task, stop=stop)
    finally:
        timer.cancel()
    # Not the 60 s of the retry window: the stop ends the wait at once.
    assert time.monotonic() - began < 30
    assert (outcome.status, outcome.games_played) == ("interrupted", 0), outcome
    assert outcome.message == "not started (the run stopped)", outcome
    assert counted(db, task.series_id) == []


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_an_outage_longer_than_the_retries_still_fails_the_series(
    ruleset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run then ends with the database error (exit 3 and the resume command), and
    nothing was recorded or marked."""
    monkeypatch.setenv(RETRY_SECONDS_ENV, "0.5")
    db, tid, task = tournament(tmp_path, ruleset)
    where = runner if ruleset == "default" else table_runner
    series = Lost(get_series, 10**6)
    monkeypatch.setattr(where, "get_series", series)
    with pytest.raises(DatabaseUnavailableError) as raised:
        play_series_task(task, stop=threading.Event())
    assert lost_connection(raised.value)
    assert series.failed >= 2  # retried, then given up
    assert counted(db, task.series_id) == []
    with db.read_session() as session:
        assert [s.status for s in series_of_tournament(tid, session=session)] == ["pending"]
