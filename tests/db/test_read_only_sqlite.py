"""A SQLite file this process cannot write (a read-only mount, a folder or file without write
permission) is opened read-only: the reading commands work on it, every write is refused in
one line and nothing changes. Failed with ``unable to open database file``: in WAL mode a
reader needs the ``-shm`` file, which it could not create.

The tests run as root, for whom permissions do not stop a write; so the files are made
read-only in ways that hold for root too: a read-only bind mount in a private mount
namespace (``unshare -m``), or the command is run as the user ``nobody`` (``setpriv``).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.db import (
    SeriesStatus,
    TournamentStatus,
    open_database,
    record_game,
    set_series_status,
    set_tournament_status,
)
from arena.db.migrate import known_revisions, newest_revision_file
from kryt.errors import ExitCode
from tests.db.helpers import build_world, game
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/tmp", "COLUMNS": "200"}
ENV.pop("KRYT_DATABASE_URL", None)

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
READING = [
    ["leaderboard"],
    ["tournament", "status"],
    ["tournament", "status", "1"],
    ["games", "list"],
]


def _arena(folder: Path, *, finished: bool = False) -> Path:
    """A Kryt database in ``folder`` with one tournament of two games, one played (both and
    finished with ``finished``), closed (no ``-wal`` file left)."""
    path = folder / "kryt.db"
    database = open_database(f"sqlite:///{path}")
    world = build_world(database, games=2)
    with database.session() as s:
        for number in (1, 2) if finished else (1,):
            record_game(*game(world, number), session=s)
        if finished:
            set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
            set_tournament_status(world.tournament_id, TournamentStatus.FINISHED, session=s)
    database.close()
    assert sorted(p.name for p in folder.iterdir()) == ["kryt.db"]
    return path


def _can_mount() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0"', tempfile.gettempdir()],
        capture_output=True,
        timeout=60,
    )
    return probe.returncode == 0


def _on_read_only_mount(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` with ``folder`` mounted read-only (for root too: EROFS)."""
    require(_can_mount(), "mount namespaces", "unshare -m and mount --bind -o ro")
    script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(folder), sys.executable, "-m", "kryt", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=ENV,
        cwd=folder.parent,
    )


def _as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` as the user nobody, for whom permissions hold."""
    require(shutil.which("setpriv") is not None, "setpriv", "util-linux's setpriv")
    return subprocess.run(
        [*NOBODY, sys.executable, "-m", "kryt", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=ENV,
        cwd="/",
    )


@pytest.fixture
def public_folder() -> Iterator[Path]:
    """A folder every user can reach (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="kryt-ro-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in (folder, *folder.iterdir()):
            path.chmod(0o755)
        shutil.rmtree(folder)


def test_reading_commands_work_on_a_read_only_mount_and_writes_are_refused(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "arena"
    folder.mkdir()
    path = _arena(folder)
    before = path.read_bytes()
    for command in READING:
        done = _on_read_only_mount(folder, *command, "--database", str(path))
        assert done.returncode == 0, (command, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
    listed = _on_read_only_mount(folder, "games", "list", "--database", str(path))
    assert "alpha" in listed.stdout, listed.stdout
    status = _on_read_only_mount(folder, "tournament", "status", "--database", str(path))
    assert "cup" in status.stdout, status.stdout
    # A command that writes: one line, exit 3, nothing written.
    cancel = _on_read_only_mount(folder, "tournament", "cancel", "1", "--database", str(path))
    assert cancel.returncode == ExitCode.UNAVAILABLE, cancel.stderr
    lines = cancel.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cancel.stderr
    assert "read-only" in lines[0] and "nothing was written" in lines[0], lines[0]
    assert path.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["kryt.db"]
    with sqlite3.connect(path) as conn:  # the cancel did not happen
        assert conn.execute("select status from tournaments").fetchone() == ("pending",)


@pytest.mark.parametrize("folder_mode", [0o755, 0o777], ids=["folder-read-only", "folder-open"])
def test_a_file_without_write_permission_is_read(public_folder: Path, folder_mode: int) -> None:
    """chmod 444, in a folder the user cannot write (then no ``-shm`` file can be made) or
    can (SQLite makes one beside it)."""
    path = _arena(public_folder)
    path.chmod(0o444)
    public_folder.chmod(folder_mode)
    before = path.read_bytes()
    for command in READING:
        done = _as_nobody(*command, "--database", str(path))
        assert done.returncode == 0, (command, done.stderr)
    board = _as_nobody("leaderboard", "--database", str(path))
    assert "alpha" in board.stdout and "bravo" in board.stdout, board.stdout
    cancel = _as_nobody("tournament", "cancel", "1", "--database", str(path))
    assert cancel.returncode == ExitCode.UNAVAILABLE, cancel.stderr
    lines = cancel.stderr.splitlines()
    assert len(lines) == 1 and "read-only" in lines[0], cancel.stderr
    assert path.read_bytes() == before


def test_a_read_only_database_behind_the_code_is_refused_not_migrated(tmp_path: Path) -> None:
    folder = tmp_path / "arena"
    folder.mkdir()
    path = _arena(folder)
    older = max(known_revisions() - {newest_revision_file()})
    with sqlite3.connect(path) as conn:
        conn.execute("update alembic_version set version_num = ?", (older,))
    conn.close()
    before = path.read_bytes()
    done = _on_read_only_mount(folder, "leaderboard", "--database", str(path))
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot be migrated" in lines[0], done.stderr
    assert path.read_bytes() == before


def test_a_write_ahead_log_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    """Changes still in ``kryt.db-wal``, no ``-shm`` file and a read-only folder: SQLite
    cannot read them (opening the file ``immutable`` would silently miss them)."""
    source = tmp_path / "source"
    source.mkdir()
    path = _arena(source)
    writer = sqlite3.connect(path)
    writer.execute("pragma wal_autocheckpoint = 0")
    writer.execute("update tournaments set name = 'renamed'")
    writer.commit()
    folder = tmp_path / "arena"
    folder.mkdir()
    for name in ("kryt.db", "kryt.db-wal"):
        shutil.copyfile(source / name, folder / name)
    writer.close()
    assert (folder / "kryt.db-wal").stat().st_size > 0
    done = _on_read_only_mount(folder, "leaderboard", "--database", str(folder / "kryt.db"))
    assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "write-ahead log kryt.db-wal holds changes" in lines[0], lines
