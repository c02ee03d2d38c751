"""A real PostgreSQL outage while series start: the database refuses new connections
(``ALTER DATABASE … ALLOW_CONNECTIONS false``) when a series opens it and reads what it
needs before its first game. The reads wait for the database as the game writes do, and the
run records every game exactly once: in this process, and with two referee processes
(``kryt tournament run -j 2``), each of which opens the database afresh.

The outage lasts until every series (or referee process) that should meet it has said it
lost the database, so it does not depend on how fast a busy machine starts them.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from arena.db import open_database
from arena.db.engine import RETRY_SECONDS_ENV
from arena.tournament import process_executor, runner
from arena.tournament.config import SandboxSettings, TournamentConfig
from arena.tournament.process_executor import ProcessExecutor
from arena.tournament.runner import SeriesOutcome, SeriesTask, create, play_series_task, tasks_for
from kryt.cli import main
from tests.db.postgres_admin import allow_connections as _allow
from tests.db.postgres_admin import terminate_connections as _terminate

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
DEADLINE_S = 300.0
"""Generous on a busy machine: each test normally takes well under a minute."""
MARKERS_ENV = "KRYT_TEST_OUTAGE_MARKERS"
"""Where a referee process of the -j 2 test leaves a file once it said it lost the database."""


def _games(url: str) -> list[tuple[int, int, bool]] | None:
    """(series, number, voided) of every stored game; None while unreachable."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT series_id, number, voided FROM games"))
            return sorted((r[0], r[1], bool(r[2])) for r in rows)
    except SQLAlchemyError:
        return None
    finally:
        engine.dispose()


def _assert_every_game_once(url: str, series: int, games: int) -> None:
    stored = _games(url)
    assert stored is not None
    counted = [(s, n) for s, n, voided in stored if not voided]
    assert len(counted) == len(set(counted)), "a game is stored twice"
    assert sorted(counted) == sorted(
        (s, n) for s in {s for s, _ in counted} for n in range(1, games + 1)
    ), "a game is missing"
    assert len({s for s, _ in counted}) == series, counted


def _reopen_when(
    admin: Engine,
    name: str,
    ready: Callable[[], bool],
    failures: list[str],
    ended: threading.Event,
) -> threading.Thread:
    """A thread that lets connections in again once ``ready()`` (a second later, so that
    the waiting readers try at least once more), once the run has ``ended`` (it did not
    wait for the database), or after DEADLINE_S (noted in ``failures``: the outage then
    met nobody)."""

    def reopen() -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not ready():
            if ended.is_set():
                break
            if time.monotonic() > deadline:
                failures.append(f"nobody met the outage within {DEADLINE_S:g} s")
                break
            time.sleep(0.05)
        else:
            time.sleep(1.0)
        _allow(admin, name, True)

    thread = threading.Thread(target=reopen, name="reopen", daemon=True)
    thread.start()
    return thread


class LostNotes(logging.Handler):
    """Counts the notes saying the database was lost (and sets ``seen`` at the first)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lost: list[str] = []
        self.back: list[str] = []
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "lost while" in message:
            self.lost.append(message)
            self.seen.set()
        elif "is back after" in message:
            self.back.append(message)


@pytest.fixture
def lost_notes() -> Iterator[LostNotes]:
    handler = LostNotes()
    logger = logging.getLogger("arena.db.engine")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_a_series_starting_in_an_outage_waits_for_the_database(
    ruleset: str,
    postgres_url: str,
    admin: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lost_notes: LostNotes,
) -> None:
    name = make_url(postgres_url).database
    assert name is not None
    games = 6
    db = open_database(postgres_url)
    try:
        config = TournamentConfig(
            bots=(str(EXAMPLES / "greedy"), str(EXAMPLES / "random")),
            games_per_pair=games,
            ruleset=ruleset,
            table_size=2,
            sandbox=SandboxSettings(backend="process"),
        )
        tid = create(config, db=db, store=tmp_path / "store")
        [task] = tasks_for(tid, db=db, store=tmp_path / "store")
    finally:
        db.close()
    monkeypatch.setattr(runner, "_databases", {})  # opened afresh, as in a referee process
    failures: list[str] = []
    _allow(admin, name, False)
    try:
        _terminate(admin, name)
        ended = threading.Event()
        reopen = _reopen_when(admin, name, lost_notes.seen.is_set, failures, ended)
        try:
            outcome = play_series_task(task, stop=threading.Event())
        finally:
            ended.set()
            reopen.join(DEADLINE_S)
    finally:
        _allow(admin, name, True)
        for db in runner._databases.values():
            db.close()
    assert not failures, failures
    assert outcome.status == "finished", outcome
    assert outcome.games_played == games
    assert lost_notes.lost and lost_notes.back, (lost_notes.lost, lost_notes.back)
    assert "lost while opening it" in lost_notes.lost[0], lost_notes.lost
    _assert_every_game_once(postgres_url, 1, games)


# ---------------------------------------------------------------------------- -j 2


def _start_worker_noting_outages(*args: Any) -> None:
    """The initializer of the referee worker of the -j 2 test (pickled by name, imported in
    the process): leaves a file in MARKERS_ENV once it says it lost the database, and
    keeps printing the database's notes on stderr, then starts as a worker does."""
    logger = logging.getLogger("arena.db.engine")
    logger.addHandler(_OutageMarker(Path(os.environ[MARKERS_ENV])))
    logger.addHandler(logging.StreamHandler(sys.stderr))  # what logging's last resort did
    process_executor._start_worker(*args)


class _OutageMarker(logging.Handler):
    """Leaves a file named after this process in ``markers`` once it says it lost the
    database."""

    def __init__(self, markers: Path) -> None:
        super().__init__(logging.WARNING)
        self.markers = markers

    def emit(self, record: logging.LogRecord) -> None:
        if "lost while" in record.getMessage():
            (self.markers / f"lost-{os.getpid()}").touch()


def test_two_referee_processes_starting_in_an_outage_record_every_game_once(
    postgres_url: str,
    admin: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """``kryt tournament run -j 2``: its two referee processes (the runner's own loop and
    a worker) start while the database refuses new connections (the run's own connections
    stay), so each one opens the database and reads its first series across the outage;
    then every connection is terminated while games are being recorded. Every game is
    recorded exactly once."""
    name = make_url(postgres_url).database
    assert name is not None
    games = 8
    mine = tmp_path / "mine"  # a third bot: three series, so both processes play one
    shutil.copytree(EXAMPLES / "random", mine)
    manifest = mine / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', 'name = "mine"'))
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv(MARKERS_ENV, str(markers))
    monkeypatch.setenv(RETRY_SECONDS_ENV, "300")
    monkeypatch.setattr(process_executor, "available_cores", lambda: 2)
    monkeypatch.setattr(process_executor, "_start_worker", _start_worker_noting_outages)
    here = _OutageMarker(markers)  # the runner's own referee loop opens the database too
    logging.getLogger("arena.db.engine").addHandler(here)
    failures: list[str] = []
    threads: list[threading.Thread] = []
    ended = threading.Event()

    def both_lost() -> bool:
        return len(list(markers.glob("lost-*"))) >= 2

    original_run = ProcessExecutor.run

    def run_in_an_outage(
        self: ProcessExecutor, tasks: Sequence[SeriesTask], **kwargs: Any
    ) -> list[SeriesOutcome]:
        # The run holds its connections already; its referee processes will need new ones.
        _allow(admin, name, False)
        reopen = _reopen_when(admin, name, both_lost, failures, ended)

        def blip() -> None:
            reopen.join(DEADLINE_S)
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline and not ended.is_set():
                found = _games(postgres_url)
                if found is not None and sum(1 for g in found if not g[2]) >= 4:
                    _terminate(admin, name)  # games of both processes in flight, maybe
                    return
                time.sleep(0.05)

        threads.extend([reopen, threading.Thread(target=blip, name="blip", daemon=True)])
        threads[-1].start()
        return original_run(self, tasks, **kwargs)

    monkeypatch.setattr(ProcessExecutor, "run", run_in_an_outage)
    monkeypatch.chdir(tmp_path)
    try:
        code = main(
            [
                "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
                str(mine), "--games", str(games), "-j", "2", "--backend", "process",
                "--unsafe", "--database", postgres_url, "--store", str(tmp_path / "store"),
            ]
        )  # fmt: skip
    finally:
        logging.getLogger("arena.db.engine").removeHandler(here)
        ended.set()
        for thread in threads:
            thread.join(DEADLINE_S)
        _allow(admin, name, True)
    _terminate(admin, name)  # what the command left pooled in this process: dropped sooner
    err = capfd.readouterr().err
    assert not failures, (failures, err)
    assert code == 0, err
    assert len(list(markers.glob("lost-*"))) == 2, err  # both processes met the outage
    assert "lost while opening it" in err, err
    assert "is back after" in err, err
    assert "Traceback" not in err, err
    _assert_every_game_once(postgres_url, 3, games)
