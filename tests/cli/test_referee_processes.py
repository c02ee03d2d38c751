"""One referee process per series slot (``-j 2``, issue 15): a run killed with SIGKILL leaves
no referee worker and no bot behind, and ``resume`` then finishes with no game lost or
duplicated; the threads of ``-j 1`` and the processes of ``-j 2`` record the same games."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlmodel import col, select

from arena.db import open_database
from arena.db.models import Game
from tests.cli.test_interrupt import counted
from tests.scaling.helpers import processes_in, wait_no_processes_in

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
KRYT = [sys.executable, "-m", "kryt"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def children(pid: int) -> set[int]:
    """Every live descendant of ``pid``."""
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                listed = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, listed):
                if child not in found:
                    found.add(child)
                    frontier.append(child)
    return found


def _command_line(pid: int) -> str:
    """The process's command line ("" once it is gone)."""
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def alive(pids: set[int]) -> set[int]:
    def running(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    return {pid for pid in pids if running(pid)}


def test_kill_9_of_a_run_with_referee_processes_leaves_nothing_running(tmp_path: Path) -> None:
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    where = ["--database", str(db), "--store", str(store)]
    args = [
        "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        str(EXAMPLES / "mc"), "--games", "6", "--backend", "process", "--unsafe",
        "--move-seconds", "0.1", "-j", "2",
    ]  # fmt: skip
    run = subprocess.Popen(
        [*KRYT, *args, *where],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV,
        start_new_session=True,  # the kill must reach the runner alone, not its group
    )
    workers: set[int] = set()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not (len(counted(db)) >= 2 and processes_in(store)):
        assert run.poll() is None, run.communicate()
        workers |= children(run.pid)
        time.sleep(0.1)
    workers |= children(run.pid)
    bots = set(processes_in(store))
    assert bots, "no bot was running when the runner was killed"
    # A referee worker (with its bots) runs under the runner, beside the runner's own bots.
    spawned = {pid for pid in workers - bots if "spawn_main" in _command_line(pid)}
    assert spawned, (workers, bots)
    run.send_signal(signal.SIGKILL)
    run.wait(30)
    deadline = time.monotonic() + 60
    while alive(workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive(workers) == set(), "referee workers or bots outlived the killed runner"
    assert wait_no_processes_in(store, 30) == []
    before = counted(db)
    resume = subprocess.run(
        [*KRYT, "tournament", "resume", "1", "--take-over", *where],
        cwd=tmp_path,
        capture_output=True,
        timeout=600,
        env=ENV,
    )
    assert resume.returncode == 0, resume.stderr.decode(errors="replace")
    after = counted(db)
    assert len(after) == len(set(after)) == 18
    assert set(before) <= set(after)


def test_threads_and_processes_record_the_same_games(tmp_path: Path) -> None:
    """The same tournament (fixed seed) at -j 1 (threads) and -j 2 (processes) deals the
    same games (the results may differ: the random bot draws its own seed)."""
    # A third cheap bot: the mc example spends its whole move budget and made this test
    # take two minutes; what is under test is who deals what, not how well anyone plays.
    twin = tmp_path / "twin"
    shutil.copytree(EXAMPLES / "random", twin, ignore=shutil.ignore_patterns("__pycache__"))
    toml = twin / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "random"', 'name = "twin"'))
    games: list[list[tuple[int, int, str]]] = []
    for jobs in ("1", "2"):
        db = tmp_path / f"j{jobs}.db"
        done = subprocess.run(
            [
                *KRYT, "tournament", "run", "builtin:random", "builtin:greedy",
                str(twin), "--games", "4", "--seed", "7", "-j", jobs,
                "--backend", "process", "--unsafe", "--database", str(db), "--store",
                str(tmp_path / f"store{jobs}"),
            ],
            cwd=tmp_path, capture_output=True, timeout=600, env=ENV,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        database = open_database(str(db))
        with database.read_session() as session:
            stored = session.exec(select(Game).where(col(Game.voided).is_(False))).all()
            rows = sorted((g.series_id, g.number, " ".join(g.deck)) for g in stored)
        database.engine.dispose()
        games.append(rows)
    assert games[0] == games[1] and len(games[0]) == 12
