"""Ctrl-C (SIGINT), SIGTERM (``kill``, ``docker stop``, systemd) or SIGHUP (the terminal
closed) during ``kryt tournament run``: a clean stop (exit 130 with the resume command, no
leaked-semaphore warning), every bot killed, nothing half-recorded; ``kryt tournament
resume`` then finishes with no game lost or duplicated."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


@pytest.mark.parametrize(
    ("sent", "jobs", "to_group"),
    [
        (signal.SIGINT, "1", False),
        (signal.SIGTERM, "1", False),  # series on the runner's own event loop
        (signal.SIGTERM, "2", False),  # series in referee worker processes
        # The terminal closed: Python's default ended the runner at once, its orphaned
        # workers recording games for seconds, with a leaked-semaphore warning.
        (signal.SIGHUP, "2", False),
        # ... and the whole session got it: the workers died of it, and the runner hung
        # for good setting the stop flag they had been waiting on, keeping the lease.
        (signal.SIGHUP, "2", True),
        (signal.SIGTERM, "2", True),  # systemd's stop: every process of the service
    ],
)
def test_a_signal_stops_cleanly_and_resume_finishes(
    tmp_path: Path, sent: signal.Signals, jobs: str, to_group: bool
) -> None:
    db = tmp_path / "kryt.db"
    store = tmp_path / "store"
    kryt = [sys.executable, "-m", "kryt"]
    where = ["--database", str(db), "--store", str(store)]
    args = [
        "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        str(EXAMPLES / "mc"), "--games", "6", "--backend", "process", "--move-seconds", "0.1",
        "-j", jobs,
    ]  # fmt: skip
    # This checkout's code, though the command runs from a scratch folder.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [*kryt, *args, *where],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # the signal goes to the runner alone, as `kill PID` does
    )
    deadline = time.monotonic() + 300
    while not (len(counted(db)) >= 2 and processes_in(store)):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "no two games recorded in time"
        time.sleep(0.1)
    if to_group:
        os.killpg(run.pid, sent)  # the runner leads its own session and group
    else:
        run.send_signal(sent)
    out, err = run.communicate(timeout=120)
    text = err.decode(errors="replace")
    if run.returncode != 130:  # the whole of stderr (an assertion's message is cut short)
        pytest.fail(f"exit {run.returncode}, not 130:\n{text}\nstdout: {out!r}")
    said = f"interrupted by {sent.name}" if sent is not signal.SIGINT else "interrupted"
    assert said in text and "Traceback" not in text, text
    assert "resume with: kryt tournament resume 1" in text, text
    # The run's line only, not a second, generic one after it.
    assert text.count("resume with") == 1 and "work done so far" not in text, text
    assert all(line.strip() != "interrupted" for line in text.splitlines()), text
    assert "leaked semaphore" not in text, text
    assert wait_no_processes_in(store) == []
    before = counted(db)
    assert 2 <= len(before) < 18
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


def test_a_sighup_ignored_on_purpose_stays_ignored(tmp_path: Path) -> None:
    """``nohup kryt tournament run ...``: the run goes on when the terminal closes."""
    script = (
        "import signal, sys\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "from kryt.commands.tournament import _sigterm_stops_like_ctrl_c\n"
        "with _sigterm_stops_like_ctrl_c([]):\n"
        "    ignored = signal.getsignal(signal.SIGHUP) is signal.SIG_IGN\n"
        "    handled = signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL\n"
        "print(ignored, handled, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.split() == ["True", "True", "True"], done.stderr
