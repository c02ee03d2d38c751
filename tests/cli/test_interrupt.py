"""Ctrl-C during ``kryt tournament run``: a clean stop (exit 130), every bot killed, nothing
half-recorded; ``kryt tournament resume`` then finishes with no game lost or duplicated."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.scaling.helpers import processes_in, wait_no_processes_in

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def counted(db: Path) -> list[tuple[int, int]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("select series_id, number from games where not voided").fetchall()
        except sqlite3.OperationalError:  # tables not created yet
            return []
    return sorted(rows)


def test_ctrl_c_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    db = tmp_path / "kryt.db"
    store = tmp_path / "store"
    kryt = [sys.executable, "-m", "kryt"]
    where = ["--database", str(db), "--store", str(store)]
    args = [
        "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        str(EXAMPLES / "mc"), "--games", "6", "--backend", "process", "--move-seconds", "0.1",
    ]  # fmt: skip
    # This checkout's code, though the command runs from a scratch folder.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [*kryt, *args, *where],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 300
    while not (len(counted(db)) >= 3 and processes_in(store)):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "no three games recorded in time"
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, (out, err)
    assert b"interrupted" in err and b"Traceback" not in err, err.decode(errors="replace")
    assert b"resume with: kryt tournament resume 1" in err, err.decode(errors="replace")
    assert wait_no_processes_in(store) == []
    before = counted(db)
    assert 3 <= len(before) < 18
    resume = subprocess.run(
        [*kryt, "tournament", "resume", "1", *where],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        env=env,
    )
    assert resume.returncode == 0, resume.stderr
    after = counted(db)
    assert len(after) == len(set(after)) == 18
    assert set(before) <= set(after)
    assert wait_no_processes_in(store) == []
