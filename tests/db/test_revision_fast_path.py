"""Opening an up-to-date database reads its revision with plain SQL and never loads Alembic
(start-up time of every command); the file-name head is Alembic's head; any other revision
still gets Alembic's checks."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from arena.db import open_database
from arena.db.migrate import head_revision, newest_revision_file

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import sys; from arena.db import open_database; open_database(sys.argv[1]).close();"
    " print('alembic' in sys.modules)"
)


def test_the_newest_file_is_alembics_head() -> None:
    assert newest_revision_file() == head_revision()


def test_an_up_to_date_database_opens_without_alembic(tmp_path: Path) -> None:
    path = tmp_path / "kryt.db"
    open_database(str(path)).close()  # created and migrated (Alembic runs here)

    def alembic_loaded() -> str:
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, str(path)],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
        assert probe.returncode == 0, probe.stderr
        return probe.stdout.strip()

    assert alembic_loaded() == "False"
    # Any other stored revision goes through Alembic's checks: here one it does not know.
    with sqlite3.connect(path) as conn:
        conn.execute("update alembic_version set version_num = '9999'")
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert probe.returncode != 0 and "SchemaTooNewError" in probe.stderr, probe.stderr
