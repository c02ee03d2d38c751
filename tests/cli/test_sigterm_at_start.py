"""SIGTERM in the first seconds of ``kryt tournament run`` (while the command is imported,
the sandbox probed, the tournament stored) stops it as a SIGTERM later in the run does: exit
130 with one ``interrupted by SIGTERM`` line, which offers the resume command exactly when
the tournament was stored. It was killed silently with exit 143."""

from __future__ import annotations

import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("KRYT_DATABASE_URL", None)
KRYT = [sys.executable, "-m", "kryt"]
RUN = [
    "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2", "-j", "1",
    "--backend", "process",
]  # fmt: skip


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    db = tmp_path / "kryt.db"
    run = subprocess.Popen(
        [sys.executable, "-m", "kryt", *RUN, "--database", str(db), "--store", str(tmp_path)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,  # the signal goes to the command alone, as `kill PID` does
    )
    return run, db


def _stored(db: Path) -> bool:
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("select count(*) from tournaments").fetchone()
        except sqlite3.OperationalError:  # no tables yet
            return False
    conn.close()
    return bool(rows[0])


def _check_outcome(run: subprocess.Popen[str], db: Path, err: str) -> None:
    """Exit 130 and one line saying what was kept, whichever moment the signal came at."""
    assert run.returncode == 130, err
    assert "Traceback" not in err, err
    said = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(said) == 1 and said[0].startswith("interrupted by SIGTERM"), err
    if _stored(db):
        assert said[0].endswith("resume with: kryt tournament resume 1"), err
        resume = subprocess.run(
            [*KRYT, "tournament", "resume", "1", "--database", str(db), "--store", str(db.parent)],
            cwd=db.parent,
            capture_output=True,
            text=True,
            timeout=300,
            env=ENV,
        )
        assert resume.returncode == 0, resume.stderr
    else:
        assert "resume" not in err, err


def test_sigterm_while_the_sandbox_is_probed(tmp_path: Path) -> None:
    """Sent as soon as the command says which sandbox it uses: before the tournament is
    stored, or (on a slow machine) just after; either way one line, exit 130."""
    run, db = _start(tmp_path)
    lines: queue.Queue[str] = queue.Queue()
    read: list[str] = []

    def reader() -> None:
        assert run.stderr is not None
        for line in run.stderr:
            lines.put(line)

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, "no sandbox line in time"
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            assert run.poll() is None, "".join(read)
            continue
        read.append(line)
        if line.startswith("sandbox:"):
            break
    run.send_signal(signal.SIGTERM)
    run.wait(timeout=120)
    time.sleep(0.2)  # the reader's last lines
    while not lines.empty():
        read.append(lines.get())
    _check_outcome(run, db, "".join(read))


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (Linux: SigCgt in its status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def test_sigterm_as_soon_as_kryt_handles_it(tmp_path: Path) -> None:
    """The earliest moment: ``kryt`` handles SIGTERM before it imports the command."""
    run, db = _start(tmp_path)
    deadline = time.monotonic() + 120
    while not _catches_sigterm(run.pid):
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "SIGTERM never handled"
        time.sleep(0.005)
    run.send_signal(signal.SIGTERM)
    _out, err = run.communicate(timeout=120)
    _check_outcome(run, db, err)
