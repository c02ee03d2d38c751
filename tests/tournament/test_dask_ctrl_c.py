"""Ctrl-C during ``kryt tournament run --executor dask`` on a local cluster.

A real Ctrl-C reaches every process of the terminal's process group: the runner, the Dask
worker processes of its local cluster and their bots. Only the runner handles it: the
workers ignore it (from birth, even while the cluster starts), the run stops and closes the
cluster with distributed's shutdown messages silenced, and the user reads one line with the
resume command (exit 130). No game is lost or counted twice, and ``resume`` finishes.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.procfs import process_stats
from tests.scaling.helpers import processes_in, wait_no_processes_in

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
KRYT = [sys.executable, "-m", "kryt"]
ENV = {  # the commands run from a scratch folder: import this checkout
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}
GAMES = 10
DEADLINE = 300.0  # generous: a local cluster starts slowly on a busy 2-core machine


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


def in_session(session: int) -> list[int]:
    """Pids of the live processes of a session (the run and everything it started)."""
    return [
        pid for pid, fields in process_stats() if fields[0] != "Z" and int(fields[3]) == session
    ]


def wait_session_empty(session: int, seconds: float = 60.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while in_session(session) and time.monotonic() < deadline:
        time.sleep(0.2)
    return in_session(session)


def _default_sigint() -> None:
    # A test runner started in the background may ignore SIGINT, and an ignored signal stays
    # ignored in its children: the run must get it as from a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ctrl_c_to_the_process_group_is_one_line_and_resume_finishes(tmp_path: Path) -> None:
    db = tmp_path / "kryt.db"
    store = tmp_path / "store"
    where = ["--database", str(db), "--store", str(store)]
    run = subprocess.Popen(
        [
            *KRYT, "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
            str(EXAMPLES / "mc"), "--games", str(GAMES), "--backend", "process",
            "--move-seconds", "0.2", "-j", "2", "--executor", "dask", *where,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        start_new_session=True,  # its own process group, as a command in a terminal
        preexec_fn=_default_sigint,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + DEADLINE
        # Games are being played on the workers, with bots running: the middle of a run.
        while not (len(counted(db)) >= 2 and processes_in(store)):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no two games recorded in time"
            time.sleep(0.1)
        os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C does: the whole process group
        out, err = run.communicate(timeout=DEADLINE)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    text = err.decode(errors="replace") + out.decode(errors="replace")
    assert run.returncode == 130, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "CRITICAL" not in text and "distributed." not in text, text
    assert "resume with: kryt tournament resume 1" in text, text
    assert wait_session_empty(run.pid) == [], "processes of the run outlived it"
    assert wait_no_processes_in(store) == []
    before = counted(db)
    assert 2 <= len(before) < 3 * GAMES
    assert len(before) == len(set(before))
    resume = subprocess.run(
        [*KRYT, "tournament", "resume", "1", *where],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=ENV,
    )
    assert resume.returncode == 0, resume.stderr
    after = counted(db)
    assert len(after) == len(set(after)) == 3 * GAMES
    assert set(before) <= set(after)
    assert wait_no_processes_in(store) == []
