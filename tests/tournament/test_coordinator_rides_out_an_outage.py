"""What the coordinator of a run does with the database itself ride out a lost connection
as the series' reads and writes do: reading the tournament, its settings and its series
before the series start, storing ``clock wall``, marking the tournament running and then
finished, and the lines ``kryt tournament run`` prints as series end (and its refit of the
ratings between them, which is skipped instead). One note when the database is lost, one
when it is back; a stop (Ctrl-C, SIGTERM, the lease lost) ends the wait at once; an outage
longer than the window still ends the run with exit 3 and the resume command, and the
resume plays exactly the missing games.

The lost connection is injected (``tests/tournament/outage.py``: SQLite never loses one);
``tests/db/test_postgres_coordinator_outage.py`` does it for real.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kryt.commands.tournament as tournament_command
import leaderboard.standings as standings_module
from arena.db import (
    Database,
    DatabaseUnavailableError,
    get_tournament,
    open_database,
    series_of_tournament,
    set_tournament_status,
    submission_labels,
    unfinished_series,
    update_tournament_config,
)
from arena.db import games_of_series as stored_games
from arena.db.engine import RETRY_SECONDS_ENV, lost_connection
from arena.tournament import runner, service
from arena.tournament.lease import RunLease
from kryt.cli import main
from kryt.errors import ExitCode
from tests.db.test_disconnect_retry import TERMINATED, _translated_error
from tests.tournament.outage import EXAMPLES, ROOT, Lost, greedy_vs_random, notes

GAMES = 3
DEADLINE_S = 120.0
"""How soon a stop must end a wait that would otherwise last the whole (300 s) window:
generous on a busy machine, where it normally takes well under a second."""

pytestmark = pytest.mark.timeout(600)


SESSION_LOST = _translated_error(TERMINATED)
"""What a session whose connection was terminated raises (for a function that opens its own
sessions)."""


def new_tournament(tmp_path: Path, *, clock: str = "wall") -> tuple[Database, int]:
    return greedy_vs_random(tmp_path, GAMES, clock=clock)


def counted(db: Database, tournament_id: int) -> list[tuple[int, int]]:
    """(series, number) of every counted game of the tournament."""
    with db.read_session() as session:
        return sorted(
            (s.id, g.number)
            for s in series_of_tournament(tournament_id, session=session)
            if s.id is not None
            for g in stored_games(s.id, session=session)
            if not g.voided
        )


def every_game_once(db: Database, tournament_id: int) -> bool:
    with db.read_session() as session:
        series = [s.id for s in series_of_tournament(tournament_id, session=session)]
    wanted = sorted((s, n) for s in series if s is not None for n in range(1, GAMES + 1))
    return counted(db, tournament_id) == wanted


def status(db: Database, tournament_id: int) -> str:
    return service.tournament_state(tournament_id, db).status


@pytest.fixture(autouse=True)
def fresh_databases(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The series open their database anew, as in a fresh referee process."""
    monkeypatch.setattr(runner, "_databases", {})
    yield
    for db in runner._databases.values():
        db.close()


# ---------------------------------------------------------------------------- the service

MOMENTS = {
    # moment: (module, name of the function the work calls, calls passed first, what)
    "tournament": (service, "get_tournament", 0, "reading tournament {tid}"),
    "settings": (service, "get_tournament", 1, "reading the settings of tournament {tid}"),
    "clock wall": (
        service,
        "update_tournament_config",
        0,
        "storing clock wall for tournament {tid}",
    ),
    "series": (runner, "unfinished_series", 0, "reading the series of tournament {tid}"),
    "running": (service, "set_tournament_status", 0, "marking tournament {tid} running"),
    "finished": (service, "set_tournament_status", 1, "marking tournament {tid} finished"),
}
ORIGINALS: dict[str, Callable[..., Any]] = {
    "get_tournament": get_tournament,
    "update_tournament_config": update_tournament_config,
    "unfinished_series": unfinished_series,
    "set_tournament_status": set_tournament_status,
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_the_runs_own_database_work_rides_out_a_lost_connection(
    moment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # clock cpu on the process sandbox (no CPU clock): the run stores clock wall first.
    db, tid = new_tournament(tmp_path, clock="cpu" if moment == "clock wall" else "wall")
    module, name, skip, what = MOMENTS[moment]
    lost = Lost(ORIGINALS[name], 2, skip=skip)
    monkeypatch.setattr(module, name, lost)
    with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
        result = service.run_tournament(tid, db, store=tmp_path / "store")

    assert lost.failed == 2, f"{moment}: not retried"
    assert result.finished and result.unfinished == 0 and not result.problems, result
    assert status(db, tid) == "finished"
    assert every_game_once(db, tid), counted(db, tid)
    if moment == "clock wall":
        assert service.tournament_config(tid, db).time_control.clock == "wall"
    said = notes(caplog)
    assert [n for n in said if "lost while" in n] == [
        n for n in said if f"lost while {what.format(tid=tid)} (" in n
    ], said
    assert len([n for n in said if "lost while" in n]) == 1, said
    assert len([n for n in said if "is back after" in n]) == 1, said


class StopAfter:
    """Once the work has failed twice (so its retries are under way), ``stop()`` a little
    later from another thread, while it waits; ``when`` is when that was (monotonic)."""

    def __init__(self, stop: Callable[[], object], delay: float = 1.5) -> None:
        self.stop = stop
        self.delay = delay
        self.when: float | None = None
        self._timer: threading.Timer | None = None

    def __call__(self, failures: int) -> None:
        if failures == 2 and self._timer is None:
            self._timer = threading.Timer(self.delay, self._fire)
            self._timer.start()

    def _fire(self) -> None:
        self.when = time.monotonic()
        self.stop()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()


@pytest.mark.parametrize("by", ["stop", "lease lost"])
def test_a_stop_or_a_lost_lease_ends_the_runs_wait(
    by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's series read never comes back within the window (300 s): setting the
    run's stop, or another run taking the lease over, ends the wait at once. Nothing was
    stored or marked, and a resume plays every game once."""
    monkeypatch.setenv(RETRY_SECONDS_ENV, "300")
    db, tid = new_tournament(tmp_path)
    stop = threading.Event()
    lease = RunLease(db, tid, heartbeat_seconds=0.2)
    taker = RunLease(db, tid, take_over=True)
    stopper = StopAfter(stop.set if by == "stop" else taker.acquire)
    read = Lost(unfinished_series, 10**6, then=stopper)
    monkeypatch.setattr(runner, "unfinished_series", read)
    lease.acquire()
    try:
        with pytest.raises(DatabaseUnavailableError) as raised:
            service.run_tournament(tid, db, store=tmp_path / "store", lease=lease, stop=stop)
        ended = time.monotonic()
    finally:
        stopper.cancel()
        lease.release()
        taker.release()
    assert lost_connection(raised.value)
    assert read.failed >= 2, "not retried"
    assert stopper.when is not None and ended - stopper.when < DEADLINE_S
    assert stop.is_set()  # the lease lost stops the run as Ctrl-C does
    assert (lease.lost, taker.lost) == (by == "lease lost", False)
    assert counted(db, tid) == []
    assert status(db, tid) == "pending"  # never marked running

    monkeypatch.setattr(runner, "unfinished_series", unfinished_series)
    result = service.run_tournament(tid, db, store=tmp_path / "store")
    assert result.finished, result
    assert every_game_once(db, tid), counted(db, tid)


# ---------------------------------------------------------------------------- the command


def command(tmp_path: Path, *args: str) -> list[str]:
    """``kryt tournament ARGS`` on the test's database and store."""
    return [
        "tournament", *args, "--database", str(tmp_path / "kryt.db"),
        "--store", str(tmp_path / "store"),
    ]  # fmt: skip


def run_args(tmp_path: Path) -> list[str]:
    """``run`` of three bots (three series, so lines are printed and ratings refitted between
    them): the bundled greedy and random, and a copy of random under another name."""
    mine = tmp_path / "mine"
    if not mine.exists():
        shutil.copytree(EXAMPLES / "random", mine)
        manifest = mine / "bot.toml"
        manifest.write_text(manifest.read_text().replace('name = "random"', 'name = "mine"'))
    return [
        "run", str(EXAMPLES / "greedy"), str(EXAMPLES / "random"), str(mine),
        "--games", str(GAMES), "-j", "1", "--backend", "process", "--unsafe",
    ]  # fmt: skip


def test_the_commands_reads_ride_out_a_lost_connection(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command's reads before the run (the settings, the bots' names, the progress) and
    the score of each series as it ends are retried; the refit of the ratings between
    series is skipped instead (they are fitted again as the run ends), and the run goes on."""
    reads = {
        "tournament_config": Lost(service.tournament_config, 2, error=SESSION_LOST),
        "submission_labels": Lost(submission_labels, 2),  # in the session of the bots' names
        "progress": Lost(service.progress, 2, error=SESSION_LOST),
        "tallies": Lost(service.tallies, 2, error=SESSION_LOST),  # the score
    }
    for name, read in reads.items():
        monkeypatch.setattr(tournament_command, name, read)
    # The refit's fit, in its read session: the first refit is between two series.
    refit = Lost(standings_module.standings, 1)
    monkeypatch.setattr(standings_module, "standings", refit)
    monkeypatch.setattr(tournament_command, "REFIT_SECONDS", 0.0)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="arena.db.engine"):
        code = main(command(tmp_path, *run_args(tmp_path)))
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    for name, read in reads.items():
        assert read.failed == read.times, f"the {name} read was not retried"
    # Skipped, not retried (it is not noted), and the refits after it went on.
    assert refit.failed == 1 and refit.calls >= 3, refit.calls
    said = notes(caplog)
    for what in (
        "reading the settings of tournament 1",
        "reading the bots of tournament 1",
        "reading the progress of tournament 1",
        "reading the score of series 1",
    ):
        assert any(f"lost while {what} (" in n for n in said), (what, said)
    assert [("lost while" in n) for n in said] == [True, False] * (len(said) // 2), said
    assert all(f"series {s} finished: " in out + err for s in (1, 2, 3)), out + err
    with open_database(tmp_path / "kryt.db") as db:
        assert status(db, 1) == "finished"
        assert every_game_once(db, 1), counted(db, 1)


def test_an_outage_longer_than_the_window_exits_3_and_resume_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The score of the first series to end cannot be read for longer than the window:
    exit 3 with the resume command, after trying more than once; nothing is lost, and the
    resume plays exactly the missing games."""
    monkeypatch.setenv(RETRY_SECONDS_ENV, "1")
    score = Lost(service.tallies, 10**6, error=SESSION_LOST)
    monkeypatch.setattr(tournament_command, "tallies", score)
    monkeypatch.chdir(tmp_path)
    code = main(command(tmp_path, *run_args(tmp_path)))
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err
    assert score.failed >= 2, "not retried"
    hint = [line for line in err.splitlines() if line.startswith("hint:")]
    assert hint and hint[-1].endswith("once the database is back: kryt tournament resume 1"), err
    with open_database(tmp_path / "kryt.db") as db:
        before = counted(db, 1)
        assert [n for s, n in before if s == 1] == list(range(1, GAMES + 1)), before

    monkeypatch.setattr(tournament_command, "tallies", score.call)
    code = main(command(tmp_path, "resume", "1"))
    err = capsys.readouterr().err
    assert code == ExitCode.OK, err
    with open_database(tmp_path / "kryt.db") as db:
        assert every_game_once(db, 1), counted(db, 1)
        assert set(before) <= set(counted(db, 1))


WAITING = """
import sys
from arena.db import unfinished_series
from arena.tournament import runner
from tests.tournament.outage import Lost
from kryt.cli import main

runner.unfinished_series = Lost(unfinished_series, 10**6)  # the run's series: never read
sys.exit(main(sys.argv[1:]))
"""
"""``kryt`` whose run cannot read its series (the database lost for good)."""


def test_sigterm_ends_the_commands_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kryt tournament run`` waits for the database to read the series it will play (a
    300 s window); SIGTERM (as Ctrl-C) ends the wait at once: exit 130 with the resume
    command, no traceback, nothing played; the resume then plays every game once."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), RETRY_SECONDS_ENV: "300"}
    env.pop("KRYT_DATABASE_URL", None)
    run = subprocess.Popen(
        [sys.executable, "-c", WAITING, *command(tmp_path, *run_args(tmp_path))],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the signal goes to the command alone, as `kill PID` does
    )
    assert run.stderr is not None
    lines: list[str] = []
    waiting = threading.Event()

    def read_stderr() -> None:
        assert run.stderr is not None
        for line in run.stderr:
            lines.append(line)
            if "lost while reading the series of tournament 1" in line:
                waiting.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not waiting.wait(0.1) and run.poll() is None and time.monotonic() < deadline:
            pass
        assert waiting.is_set(), "".join(lines)  # it waits: it did not end at once
        sent = time.monotonic()
        os.kill(run.pid, signal.SIGTERM)
        run.wait(DEADLINE_S)
        ended = time.monotonic()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        reader.join(10)
    err = "".join(lines)
    assert run.returncode == ExitCode.INTERRUPTED, err
    assert ended - sent < DEADLINE_S, err
    assert "Traceback" not in err, err
    said = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(said) == 1 and said[0].startswith("interrupted by SIGTERM"), err
    assert said[0].endswith("kryt tournament resume 1"), err
    with open_database(tmp_path / "kryt.db") as db:
        assert counted(db, 1) == []
        assert service.tournament_state(1, db).lease is None  # given back at once

    monkeypatch.chdir(tmp_path)
    code = main(command(tmp_path, "resume", "1"))
    assert code == ExitCode.OK
    with open_database(tmp_path / "kryt.db") as db:
        assert every_game_once(db, 1), counted(db, 1)
