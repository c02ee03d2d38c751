"""One run per tournament, from the command line, under the process backend and Docker.

A second ``resume`` of a tournament that is running is refused with one line naming the
run that holds it; ``--take-over`` takes it from that run, which stops and records nothing
more; no game is lost, counted twice or scored as a forfeit of a healthy bot. Every command
ends with an exit status and a message matching the tournament's state.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kryt_subprocess import run_kryt, start_kryt
from tests.scaling.helpers import wait_no_processes_in
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
KRYT = [sys.executable, "-m", "kryt"]
DEADLINE = 240.0  # generous: a loaded machine, Docker images built on first use
# The commands run from a scratch folder: import this checkout, not another install.
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}


def counted(db: Path) -> list[tuple[int, int]]:
    """``(series, number)`` of the counted games (empty while the schema is not there)."""
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            rows = conn.execute("select series_id, number from games where not voided").fetchall()
        except sqlite3.OperationalError:
            return []
    return sorted(rows)


def forfeits(db: Path) -> list[tuple[object, ...]]:
    """Counted games lost by a forfeit: none may exist with the bundled (healthy) bots."""
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute(
            "select series_id, number, end_reason, forfeit_detail from games "
            "where not voided and forfeit_seat is not null"
        ).fetchall()


def voids_without_reason(db: Path) -> int:
    with sqlite3.connect(db, timeout=30) as conn:
        row = conn.execute(
            "select count(*) from games where voided and (void_reason is null or void_reason = '')"
        ).fetchone()
    return int(row[0])


def kryt(tmp: Path, *args: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess[str]:
    return run_kryt(tmp, *args, env=ENV, timeout=timeout)


def start(tmp: Path, *args: str) -> subprocess.Popen[str]:
    return start_kryt(tmp, *args, env=ENV)


def wait_for_games(db: Path, process: subprocess.Popen[str], at_least: int) -> None:
    deadline = time.monotonic() + DEADLINE
    while len(counted(db)) < at_least:
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the run ended early ({process.returncode}): {out}\n{err}")
        assert time.monotonic() < deadline, "no games were recorded in time"
        time.sleep(0.2)


def docker_or_skip() -> None:
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:
        require(False, "Docker engine", str(exc))


@pytest.mark.parametrize(
    "backend", ["process", pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow])]
)
@pytest.mark.timeout(900)
def test_a_second_runner_is_refused_and_a_take_over_stops_the_first(
    tmp_path: Path, backend: str
) -> None:
    if backend == "docker":
        docker_or_skip()
    db = tmp_path / "kryt.db"
    store = tmp_path / "store"
    where = ["--database", str(db), "--store", str(store)]
    first = start(
        tmp_path,
        "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "mc"),
        "--games", "400", "--concurrency", "1", "--backend", backend,
        # A roomy bank: no healthy bot's move may be a forfeit on a busy machine (checked).
        "--move-seconds", "0.5", "--bank-seconds", "60", *where,
    )  # fmt: skip
    try:
        wait_for_games(db, first, 3)
        # A second runner is refused while the first runs: one line naming the holder.
        second = kryt(tmp_path, "tournament", "resume", "1", *where)
        assert second.returncode == 3, (second.stdout, second.stderr)
        line = second.stderr.strip().splitlines()[0]
        assert (
            f"tournament 1 is being run by pid {first.pid} on host {socket.gethostname()}" in line
        )
        assert "--take-over" in line and "Traceback" not in second.stderr
        status = kryt(tmp_path, "tournament", "status", "--database", str(db))
        assert status.returncode == 0 and "running" in status.stdout
        assert f"pid {first.pid}" in status.stdout
        assert first.poll() is None  # the refused runner touched nothing of the first
        before = len(counted(db))
        # --take-over: the first run loses its lease, stops and records nothing more.
        third = start(tmp_path, "tournament", "resume", "1", "--take-over", *where)
        try:
            out, err = first.communicate(timeout=DEADLINE)
            assert first.returncode == 1, (out, err)
            assert "no longer holds tournament 1" in err and "Traceback" not in err, err
            wait_for_games(db, third, before + 3)
            third.send_signal(signal.SIGINT)
            out, err = third.communicate(timeout=DEADLINE)
            assert third.returncode == 130, (out, err)
            assert "kryt tournament resume 1" in err and "Traceback" not in err, err
        finally:
            if third.poll() is None:
                os.killpg(third.pid, signal.SIGKILL)
                third.wait(30)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(30)
    games = counted(db)
    assert len(games) == len(set(games))  # none counted twice
    numbers = sorted(n for _, n in games)
    assert numbers == list(range(1, len(numbers) + 1))  # none lost: 1..N in order
    assert forfeits(db) == []  # no healthy bot scored as forfeiting
    assert voids_without_reason(db) == 0
    if backend == "process":
        assert wait_no_processes_in(store) == []
    status = kryt(tmp_path, "tournament", "status", "--database", str(db))
    assert "running" not in status.stdout, status.stdout


@pytest.mark.timeout(600)
def test_after_kill_9_status_says_stopped_and_resume_takes_over_at_once(tmp_path: Path) -> None:
    db = tmp_path / "kryt.db"
    store = tmp_path / "store"
    where = ["--database", str(db), "--store", str(store)]
    run = start(
        tmp_path,
        "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "mc"),
        # mc thinks for 30% of its move limit: 0.1 s moves keep its games slow enough for
        # the kill to land mid-run, and the resume's ten games short.
        "--games", "12", "--concurrency", "1", "--backend", "process",
        "--move-seconds", "0.1", *where,
    )  # fmt: skip
    try:
        wait_for_games(db, run, 2)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(30)
    status = kryt(tmp_path, "tournament", "status", "--database", str(db))
    assert status.returncode == 0
    assert "stopped" in status.stdout and "running" not in status.stdout, status.stdout
    # The dead holder's lease is free at once on its own host (its process is gone).
    resume = kryt(tmp_path, "tournament", "resume", "1", *where)
    assert resume.returncode == 0, (resume.stdout, resume.stderr)
    assert len(counted(db)) == len(set(counted(db))) == 12
    one = kryt(tmp_path, "tournament", "status", "1", "--database", str(db))
    assert "status: finished; runner: -" in one.stdout, one.stdout
