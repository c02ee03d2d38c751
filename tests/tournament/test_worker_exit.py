"""A referee worker process ends without the interpreter's teardown, but closes what matters
first: its databases, its bots, its output."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import atexit, ctypes, os, sys
    from pathlib import Path

    folder = Path(sys.argv[1])
    # Registered before the worker starts, as the modules' own handlers are: the teardown
    # the worker skips.
    atexit.register(lambda: (folder / "teardown-ran").write_text("yes"))

    from arena.db import open_database
    from arena.tournament import process_executor, runner

    url = f"sqlite:///{folder / 'kryt.db'}"
    open_database(url).engine.dispose()  # create it, in WAL mode
    process_executor._start_worker(ctypes.c_bool(False), None, os.getppid(), False)
    database = runner._database(url)
    with database.engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")
    assert (folder / "kryt.db-wal").exists(), "an open WAL database keeps its -wal file"
    sys.stdout.write("buffered output, no newline")
    sys.exit(0)
    """
)


def test_a_worker_exits_at_once_with_its_database_closed_and_its_output_flushed(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "buffered output, no newline"
    # The last connection to close removes SQLite's -wal file: the database was closed.
    assert not (tmp_path / "kryt.db-wal").exists()
    # The teardown registered before the worker started was skipped.
    assert not (tmp_path / "teardown-ran").exists()
