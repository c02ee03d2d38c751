"""An outside review of the Dask executor against what docs/scaling.md and its docstrings
promise, on a real loopback cluster (``dask scheduler`` / ``dask worker`` processes) and a
SQLite file the loopback workers share:

- a run stopped by its stop Event and resumed while a worker is SIGKILLed in the middle of a
  series: each (series, number) once, the loser-deals rule across the resume, the standings
  equal to a recount of the games table, outcomes in the documented vocabulary and equal to
  what the database holds, no bot left;
- a run stopped whose series do not report within the grace period still reports every
  series (the :class:`~arena.tournament.executors.Executor` protocol);
- a worker that cannot import the project: one error line and nothing stored before a run;
  a series sent to it during a run is played elsewhere, nothing lost;
- a scheduler address with a typo after its scheme is refused as bad input.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.db import Database, SeriesStatus, open_database, pair_counts, series_tallies
from arena.tournament.dask_executor import DaskExecutor
from arena.tournament.runner import SeriesOutcome, tasks_for
from referee.record import GameRecord
from referee.series import first_dealer, next_dealer
from tests.scaling.conftest import BIN, LoopbackCluster
from tests.scaling.helpers import (
    all_games,
    check_complete,
    make_tournament,
    wait_no_processes_in,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
BOTS = ("random", "greedy", "mc")
GAMES = 8
RESUME_GAMES = 16
"""Games per series where a worker is killed mid-series on the resume: a watcher sampling
every worker on a busy machine (a pass can take a second or two) must find a series with
some, not all, of its games; at 8 the window of the fast series was missed."""
DEADLINE = 180.0
VOCABULARY = {"finished", "interrupted", "aborted"}
KRYT = [sys.executable, "-m", "kryt"]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    yield database
    database.close()


# ---------------------------------------------------------------------------- checks


Row = tuple[int, int, int, str, int, int, int]


def raw_games(path: Path) -> list[Row]:
    """``(series, number, dealer, result, seat0, seat1, first mover)`` of every counted
    game, read with sqlite3 directly (independent of the project's queries)."""
    with sqlite3.connect(path, timeout=30) as conn:
        rows = conn.execute(
            "select series_id, number, dealer, result, seat0_submission_id,"
            " seat1_submission_id, first_mover from games where not voided"
            " order by series_id, number"
        ).fetchall()
    return [
        (int(a), int(b), int(c), str(d), int(e), int(f), int(g)) for a, b, c, d, e, f, g in rows
    ]


def raw_series(path: Path) -> dict[int, tuple[int, str, int]]:
    """``series id -> (seed, status, games planned)`` read with sqlite3."""
    with sqlite3.connect(path, timeout=30) as conn:
        rows = conn.execute("select id, seed, status, games_planned from series").fetchall()
    return {int(i): (int(seed), str(status), int(n)) for i, seed, status, n in rows}


def check_loser_deals(path: Path) -> int:
    """Every series' first game is dealt by ``first_dealer(seed)`` and each next one by the
    loser of the game before (the same dealer after a draw); returns the games checked."""
    series = raw_series(path)
    by_series: dict[int, list[tuple[int, int, str]]] = {}
    for sid, number, dealer, result, *_rest in raw_games(path):
        by_series.setdefault(sid, []).append((number, dealer, result))
    checked = 0
    for sid, games in by_series.items():
        seed = series[sid][0]
        expected = first_dealer(seed)
        for number, dealer, result in games:
            assert dealer == expected, (sid, number, dealer, expected, games)
            winner = None if result == "draw" else int(result.removeprefix("seat"))
            expected = next_dealer(dealer, winner)
            checked += 1
    return checked


def recount(path: Path) -> Counter[tuple[int, int, str]]:
    """``(first mover, second, w/d/l)`` counts from the raw games table, from the first
    mover's side (as the project's pair counts are)."""
    counts: Counter[tuple[int, int, str]] = Counter()
    for *_head, result, seat0, seat1, mover in raw_games(path):
        seats = (seat0, seat1)
        first, second = seats[mover], seats[1 - mover]
        if result == "draw":
            outcome = "d"
        else:
            outcome = "w" if int(result.removeprefix("seat")) == mover else "l"
        counts[(first, second, outcome)] += 1
    return counts


def check_standings(db: Database, path: Path, tournament_id: int) -> None:
    """The project's standings (pair counts, series tallies) equal a recount of the games."""
    with db.read_session() as session:
        pairs = pair_counts(session=session, tournament_id=tournament_id)
        tallies = series_tallies(tournament_id, session=session)
    theirs: Counter[tuple[int, int, str]] = Counter()
    for p in pairs:
        for kind, value in (("w", p.wins), ("d", p.draws), ("l", p.losses)):
            if value:
                theirs[(p.first_submission_id, p.second_submission_id, kind)] += value
    ours = recount(path)
    assert theirs == ours
    assert sum(ours.values()) == len(raw_games(path))
    per_series = Counter(sid for sid, *_ in raw_games(path))
    assert {t.series_id: t.played for t in tallies} == {
        sid: per_series.get(sid, 0) for sid in raw_series(path)
    }
    for t in tallies:
        assert t.a_wins + t.draws + t.b_wins == t.played, t
    draws_raw = sum(v for (_a, _b, k), v in ours.items() if k == "d")
    assert sum(t.draws for t in tallies) == draws_raw == sum(p.draws for p in pairs)


def check_outcomes_match_database(
    outcomes: list[SeriesOutcome], path: Path, before: Counter[int]
) -> None:
    """Each outcome uses the documented vocabulary, ``finished`` exactly when the database
    says the series is finished, and ``games_played`` is what this run added to it."""
    series = raw_series(path)
    now = Counter(sid for sid, *_ in raw_games(path))
    for o in outcomes:
        assert o.status in VOCABULARY, o
        assert (o.status == "finished") == (series[o.series_id][1] == "finished"), (
            o,
            series[o.series_id],
        )
        assert o.games_played == now[o.series_id] - before[o.series_id], (o, now, before)


def counted_now(path: Path) -> Counter[int]:
    return Counter(sid for sid, *_ in raw_games(path))


# ---------------------------------------------------------------------------- stop, kill, resume


def _executing(dask_worker: Any) -> list[str]:
    """Keys of the tasks this worker executes now (run on each worker)."""
    return [str(ts.key) for ts in dask_worker.state.executing]


def _kill_a_worker_in_mid_series(
    cluster: LoopbackCluster, path: Path, done: threading.Event
) -> tuple[str, int] | None:
    """SIGKILL a worker executing a series that has some, not all, games; its name and the
    series (None when the run ended first)."""
    deadline = time.monotonic() + DEADLINE
    with DaskExecutor(cluster.address) as watcher:
        client = watcher.client
        names = {a: i["name"] for a, i in client.scheduler_info()["workers"].items()}
        while time.monotonic() < deadline and not done.is_set():
            counts = counted_now(path)
            for address, keys in client.run(_executing).items():
                for key in keys:
                    if "kryt-series" not in key:
                        continue
                    found = re.fullmatch(r"kryt-series-t\d+-s(\d+)-[0-9a-f]+", key)
                    assert found, key
                    sid = int(found.group(1))
                    if 1 <= counts[sid] <= RESUME_GAMES - 3:
                        cluster.kill_worker(str(names[address]))
                        return str(names[address]), sid
            time.sleep(0.05)
    return None


def test_stop_then_resume_with_a_worker_killed_keeps_every_rule(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    path = tmp_path / "kryt.db"
    store = tmp_path / "store"
    tournament_id = make_tournament(db, store, bots=BOTS, games=RESUME_GAMES)
    stop = threading.Event()
    seen: list[tuple[int, int]] = []

    def stop_at_first(series_id: int, number: int, record: GameRecord) -> None:
        seen.append((series_id, number))
        stop.set()

    with DaskExecutor(loopback_cluster.address, poll_seconds=0.1) as executor:
        first = executor.run(
            tasks_for(tournament_id, db=db, store=store), stop=stop, on_game=stop_at_first
        )
    # Every series reported once, in the vocabulary, as the database has it.
    assert sorted(o.series_id for o in first) == sorted(raw_series(path)), first
    check_outcomes_match_database(first, path, Counter())
    assert "interrupted" in {o.status for o in first}, first
    assert wait_no_processes_in(store) == [], "bots outlived the stopped run"
    # A stopped series is never marked finished, and nothing it played is lost.
    after_first = counted_now(path)
    assert sum(after_first.values()) == sum(o.games_played for o in first)

    remaining = tasks_for(tournament_id, db=db, store=store)
    assert remaining
    outcomes: list[SeriesOutcome] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def resume() -> None:
        try:
            with DaskExecutor(loopback_cluster.address, poll_seconds=0.1) as again:
                outcomes.extend(
                    again.run(
                        remaining,
                        stop=threading.Event(),
                        on_game=lambda s, n, r: seen.append((s, n)),
                    )
                )
        except BaseException as exc:  # surfaced in the test thread
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=resume, daemon=True)
    thread.start()
    killed = _kill_a_worker_in_mid_series(loopback_cluster, path, done)
    thread.join(2 * DEADLINE)  # once failed at DEADLINE under load 6+ (2 hogs beside -n 2)
    assert not thread.is_alive(), (outcomes, counted_now(path), loopback_cluster.log_text())
    assert not errors, errors
    assert killed is not None, "no series was caught in progress on the resume"
    assert sorted(o.status for o in outcomes) == ["finished"] * len(remaining), outcomes
    check_outcomes_match_database(outcomes, path, after_first)
    # Each (series, number) exactly once, every series complete, decks from the seed.
    assert check_complete(db, tournament_id) == 3 * RESUME_GAMES
    games = [(sid, n) for sid, n, *_ in raw_games(path)]
    assert len(games) == len(set(games)) == 3 * RESUME_GAMES
    assert sorted(seen) == all_games(db, tournament_id), "a game reported twice or never"
    assert check_loser_deals(path) == 3 * RESUME_GAMES
    check_standings(db, path, tournament_id)
    assert set(s[1] for s in raw_series(path).values()) == {SeriesStatus.FINISHED.value}
    assert wait_no_processes_in(store) == [], "bots outlived the killed worker"


# ---------------------------------------------------------------------------- the grace period


def test_series_cancelled_after_the_grace_period_are_still_reported(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    tournament_id = make_tournament(db, store, bots=BOTS, games=GAMES)
    tasks = tasks_for(tournament_id, db=db, store=store)
    stop = threading.Event()
    reported: list[SeriesOutcome] = []
    with DaskExecutor(
        loopback_cluster.address, poll_seconds=0.1, stop_grace_seconds=0.01
    ) as executor:
        outcomes = executor.run(
            tasks,
            stop=stop,
            on_game=lambda s, n, r: stop.set(),
            on_series=reported.append,
        )
    try:
        assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks), outcomes
        assert reported == outcomes
        assert {o.status for o in outcomes} <= VOCABULARY
    finally:
        assert wait_no_processes_in(store) == []


def test_a_grace_period_long_enough_reports_every_series_interrupted_or_finished(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    """The same stop with the default grace: every series reports, none is ``aborted``,
    and a resume then finishes the tournament with every game once."""
    path = tmp_path / "kryt.db"
    store = tmp_path / "store"
    tournament_id = make_tournament(db, store, bots=("random", "greedy"), games=GAMES)
    tasks = tasks_for(tournament_id, db=db, store=store)
    stop = threading.Event()
    with DaskExecutor(loopback_cluster.address, poll_seconds=0.1) as executor:
        outcomes = executor.run(tasks, stop=stop, on_game=lambda s, n, r: stop.set())
        assert [o.series_id for o in outcomes] == [t.series_id for t in tasks]
        assert {o.status for o in outcomes} <= {"finished", "interrupted"}, outcomes
        check_outcomes_match_database(outcomes, path, Counter())
        before = counted_now(path)
        again = executor.run(tasks_for(tournament_id, db=db, store=store), stop=threading.Event())
    check_outcomes_match_database(again, path, before)
    assert check_complete(db, tournament_id) == GAMES
    assert check_loser_deals(path) == GAMES
    assert wait_no_processes_in(store) == []


# ---------------------------------------------------------------------------- the command line


def run_args(path: Path, store: Path, scheduler: str, *bots: str) -> list[str]:
    return [
        "tournament", "run", *(str(EXAMPLES / b) for b in bots), "--backend", "process",
        "--executor", "dask", "--scheduler", scheduler,
        "--database", str(path), "--store", str(store),
    ]  # fmt: skip


def _broken_worker(cluster: LoopbackCluster, home: Path) -> subprocess.Popen[bytes]:
    """A third ``dask worker`` whose ``arena`` package is one that fails to import (a machine
    with the wrong checkout): PYTHONPATH puts it before the installed project."""
    shadow = home / "shadow" / "arena"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('this checkout is broken')\n")
    env = {**os.environ, "PYTHONPATH": str(home / "shadow")}
    log = (home / "broken.log").open("wb")
    process = subprocess.Popen(
        [
            str(BIN / "dask"),
            "worker",
            cluster.address,
            "--host",
            "127.0.0.1",
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--no-dashboard",
            "--name",
            "broken",
            "--local-directory",
            str(home / "broken"),
        ],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    return process


def _wait_for_workers(address: str, count: int) -> None:
    with DaskExecutor(address, connect_timeout=60) as watcher:
        watcher.client.wait_for_workers(count, timeout=DEADLINE)


def test_a_worker_that_cannot_import_the_project_is_one_line_and_stores_nothing(
    tmp_path: Path, loopback_cluster: LoopbackCluster
) -> None:
    home = tmp_path / "extra"
    home.mkdir()
    broken = _broken_worker(loopback_cluster, home)
    try:
        _wait_for_workers(loopback_cluster.address, 3)
        path, store = tmp_path / "kryt.db", tmp_path / "store"
        result = subprocess.run(
            [*KRYT, *run_args(path, store, loopback_cluster.address, "random", "greedy")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=ENV,
        )
    finally:
        os.killpg(broken.pid, 9)
        broken.wait(30)
    assert not _tournaments(path), "a tournament was stored although the cluster is unusable"
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 3 and len(errors) == 1, (result.returncode, result.stderr)
    assert "broken" in errors[0] or "import" in errors[0].lower(), errors


def _tournaments(path: Path) -> list[tuple[int, str]]:
    if not path.exists():
        return []
    with sqlite3.connect(path, timeout=30) as conn:
        try:
            return conn.execute("select id, status from tournaments").fetchall()
        except sqlite3.OperationalError:
            return []


def test_a_series_sent_to_a_worker_that_cannot_import_the_project_loses_nothing(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    """Through the executor (no preflight): a series that lands on the broken worker fails
    there and is retried (Dask's ``retries``); whatever it ends as, every series reports
    once in the vocabulary, an ``aborted`` one says why, and the database holds each game
    once; a resume without the broken worker finishes the tournament."""
    path, store = tmp_path / "kryt.db", tmp_path / "store"
    home = tmp_path / "extra"
    home.mkdir()
    broken = _broken_worker(loopback_cluster, home)
    tournament_id = make_tournament(db, store, bots=BOTS, games=4)
    tasks = tasks_for(tournament_id, db=db, store=store)
    try:
        _wait_for_workers(loopback_cluster.address, 3)
        # One good worker and the broken one: the broken one gets a series for sure.
        loopback_cluster.kill_worker("w1")
        with DaskExecutor(loopback_cluster.address, poll_seconds=0.1) as executor:
            executor.client.wait_for_workers(2, timeout=DEADLINE)
            outcomes = executor.run(tasks, stop=threading.Event())
    finally:
        os.killpg(broken.pid, 9)
        broken.wait(30)
    # The broken worker was given a series (it fails to unpickle it and leaves the cluster).
    assert "kryt-series" in (home / "broken.log").read_text(errors="replace")
    assert sorted(o.series_id for o in outcomes) == sorted(t.series_id for t in tasks)
    check_outcomes_match_database(outcomes, path, Counter())
    for o in outcomes:
        assert o.status != "aborted" or "ImportError" in o.message, o
    before = counted_now(path)
    with DaskExecutor(loopback_cluster.address, poll_seconds=0.1) as executor:
        again = executor.run(tasks_for(tournament_id, db=db, store=store), stop=threading.Event())
    check_outcomes_match_database(again, path, before)
    assert check_complete(db, tournament_id) == 3 * 4
    assert check_loser_deals(path) == 3 * 4
    assert wait_no_processes_in(store) == []


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1", "tcp://127.0.0.1:abc", "tcp://127.0.0.1:99999"]
)
def test_a_scheduler_address_with_a_typo_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str
) -> None:
    from kryt.cli import main

    path = tmp_path / "kryt.db"
    code = main([*run_args(path, tmp_path / "store", address, "random", "greedy"), "--games", "2"])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert address in err, err
    assert code == 2, err
    assert "start the scheduler" not in err, err
    assert not path.exists()
