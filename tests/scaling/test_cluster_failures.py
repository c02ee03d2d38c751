"""A Dask cluster that is missing or fails: one line and nothing created when it cannot
start, a non-zero exit with the resume command when the scheduler dies mid-run.

The cluster is real (``dask scheduler`` / ``dask worker`` processes on loopback); the
database is a SQLite file, which loopback workers share.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scaling.conftest import LoopbackCluster, start_cluster, stop_cluster
from tests.scaling.helpers import wait_no_processes_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
KRYT = [sys.executable, "-m", "kryt"]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}
DEADLINE = 240.0


def tournaments(db: Path) -> list[tuple[int, str]]:
    """``(id, status)`` of every stored tournament (none when nothing was created)."""
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            return conn.execute("select id, status from tournaments order by id").fetchall()
        except sqlite3.OperationalError:
            return []


def counted(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db, timeout=30) as conn:
        try:
            rows = conn.execute("select series_id, number from games where not voided").fetchall()
        except sqlite3.OperationalError:
            return []
    return sorted(rows)


def kryt(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KRYT, *args], cwd=tmp, capture_output=True, text=True, timeout=DEADLINE, env=ENV
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The error line of a failed command (its hint may follow); no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_args(db: Path, store: Path, scheduler: str, *bots: str) -> list[str]:
    return [
        "tournament", "run", *(str(EXAMPLES / b) for b in bots), "--backend", "process",
        "--executor", "dask", "--scheduler", scheduler,
        "--database", str(db), "--store", str(store),
    ]  # fmt: skip


def test_an_unreachable_scheduler_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    nowhere = f"tcp://127.0.0.1:{free_port()}"
    result = kryt(tmp_path, *run_args(db, store, nowhere, "random", "greedy"))
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert nowhere in one_error_line(result)
    assert tournaments(db) == []
    # resume of an existing tournament: refused the same way, nothing changes or is added.
    made = kryt(
        tmp_path,
        "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        "--games", "2", "--backend", "process", "--database", str(db), "--store", str(store),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    resume = (
        "tournament", "resume", "1", "--executor", "dask", "--scheduler", nowhere,
        "--database", str(db), "--store", str(store),
    )  # fmt: skip
    # Finished: nothing to play, so no scheduler is asked for.
    result = kryt(tmp_path, *resume)
    assert result.returncode == 0 and "already finished" in result.stderr, result.stderr
    # A game voided after the fact opens the tournament again: now the scheduler is needed.
    from arena.db import open_database, void_game

    database = open_database(f"sqlite:///{db}", create=False)
    with database.session() as session:
        void_game(1, "found wrong later", session=session)
    database.close()
    before = tournaments(db)
    result = kryt(tmp_path, *resume)
    assert result.returncode == 3, (result.stdout, result.stderr)
    one_error_line(result)
    assert tournaments(db) == before == [(1, "running")]


@pytest.fixture
def lonely_scheduler(tmp_path: Path) -> Iterator[str]:
    """A ``dask scheduler`` with no worker."""
    cluster = start_cluster(tmp_path / "scheduler", names=())
    try:
        yield cluster.address
    finally:
        stop_cluster(cluster)


def test_a_scheduler_without_workers_is_one_line_and_creates_nothing(
    tmp_path: Path, lonely_scheduler: str
) -> None:
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    result = kryt(tmp_path, *run_args(db, store, lonely_scheduler, "random", "greedy"))
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "no Dask worker" in one_error_line(result)
    assert tournaments(db) == []


def test_a_run_that_loses_its_scheduler_exits_non_zero_with_the_resume_command(
    tmp_path: Path, loopback_cluster: LoopbackCluster
) -> None:
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    args = run_args(db, store, loopback_cluster.address, "random", "greedy", "mc")
    run = subprocess.Popen(
        [*KRYT, *args, "--games", "40", "--move-seconds", "0.3"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + DEADLINE
        while len(counted(db)) < 3:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, loopback_cluster.log_text()
            time.sleep(0.2)
        os.killpg(loopback_cluster.scheduler.pid, signal.SIGKILL)
        out, err = run.communicate(timeout=DEADLINE)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
    assert run.returncode == 1, (out, err)
    assert "lost the Dask scheduler" in err, err
    assert "kryt tournament resume 1" in err, err
    assert "Traceback" not in err, err
    (only,) = tournaments(db)
    assert only == (1, "pending")  # not "running": nobody runs it now
    games = counted(db)
    assert len(games) == len(set(games)) < 3 * 40
    # The series on the workers stop at their next game (the lease is released) and the
    # workers shut down about 30 s after losing the scheduler: no bot outlives that, and
    # nothing is recorded after the command has ended.
    assert wait_no_processes_in(db.parent / "store", seconds=90) == []
    assert counted(db) == games, "games were recorded after the run had ended"


@pytest.mark.parametrize("speaks", ["nothing", "http"])
def test_something_else_at_the_scheduler_address_is_one_line(tmp_path: Path, speaks: str) -> None:
    """A service that accepts and never answers (distributed's own timeout then waits for
    ever) or answers in another protocol (an HTTP port read as Dask frames asked for
    exabytes): one line, exit 3, nothing created, within the connect timeout and a margin."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn)  # kept open: the client waits on a silent peer
            if speaks == "http":
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n" * 64)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    try:
        result = kryt(tmp_path, *run_args(db, store, address, "random", "greedy"))
    finally:
        stop.set()
        server.join(10)
        for conn in accepted:
            conn.close()
        listener.close()
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert address in one_error_line(result)
    assert tournaments(db) == []
