"""Review of the read-only opening of SQLite files in ``arena/db/engine.py``
(``_read_only_reason``, ``_read_only_uri``, ``Database.read_only``), the cases the mutation
review of ``test_url_engine_mutation_review.py`` left open because root ignores file modes.

docs/database.md, "Read-only files": an existing SQLite file this process cannot write (the
file, its ``-wal`` or ``-shm`` file, or its folder) is opened read-only, ``db.read_only`` says
why, queries work, every write is refused in one line and nothing is written. In a folder it
cannot write and without a ``-shm`` file, the file is opened ``immutable`` when no
write-ahead log holds changes (no ``-wal``, or an empty one); when one does, the error says
so and how to fix it (open it once where the folder is writable, or copy the file with its
``-wal``).

Cases (numbered as in that review): E10 an unwritable ``-wal`` or ``-shm`` file, E11 an
unwritable folder with no ``-wal`` or an empty one, E12 an unwritable folder with a ``-wal``
holding changes and no ``-shm``; beside them an unwritable folder whose ``-shm`` is there,
and what ``kryt`` prints for E10 and E12. Every case runs for real as the user nobody
(``setpriv``, required under CI; run by another user than root, the test runs as that user)
on files the test prepares in a scratch folder it makes under /tmp (mode 0755: pytest's own
are root's alone) and removes. Expected values come from what the test itself put in the files: the
tournament is named ``cup`` in the file and ``renamed-in-log`` by a change that sits only in
the ``-wal`` file, so which name a reader sees tells whether it read the log; the files and
folders named in a reason or an error are the ones the test made unwritable.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from arena.db import open_database, record_game
from kryt.errors import ExitCode
from tests.db.helpers import build_world, game
from tests.services import require

_ROOT = Path(__file__).resolve().parents[2]
_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
_ENV = {**os.environ, "PYTHONPATH": str(_ROOT), "HOME": "/tmp", "COLUMNS": "200"}
_ENV.pop("KRYT_DATABASE_URL", None)

IN_FILE = "cup"
IN_LOG = "renamed-in-log"
DB, WAL, SHM = "kryt.db", "kryt.db-wal", "kryt.db-shm"

# Run as the other user over several files: opens each the way a reading command does, reads
# the tournament's name, then tries a write transaction; prints what happened as JSON.
_PROBE = """
import json, sys
from sqlalchemy import text
from arena.db import open_database
report = {}
for path in sys.argv[1:]:
    seen = report[path] = {}
    try:
        with open_database(path, create=False) as db:
            seen["read_only"] = db.read_only
            with db.read_session() as s:
                seen["names"] = list(s.execute(text("SELECT name FROM tournaments")).scalars())
            try:
                with db.session() as s:
                    s.execute(text("DELETE FROM games"))
                seen["write"] = None
            except Exception as exc:
                seen["write"] = [type(exc).__name__, str(exc)]
    except Exception as exc:  # each case on its own: one failure spoils no other
        seen["open"] = [type(exc).__name__, str(exc)]
print(json.dumps(report))
"""


def _as_other_user(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` as a user file modes hold for: nobody when this is root."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        require(
            shutil.which("setpriv") is not None,
            "setpriv",
            "util-linux's setpriv: root ignores file modes, so the opening runs as nobody",
        )
        prefix = _NOBODY
    return subprocess.run(
        [*prefix, sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=180,
        env=_ENV,
        cwd="/",
    )


def _kryt(*args: str) -> subprocess.CompletedProcess[str]:
    return _as_other_user("-m", "kryt", *args)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``closed/kryt.db``: an arena (tournament ``cup``, one game of alpha and bravo played)
    closed, no ``-wal`` left; ``logged/``: the same with the tournament renamed by a commit
    that is still only in ``kryt.db-wal`` (copied with its ``-shm`` while the writer held it)."""
    root = tmp_path_factory.mktemp("sources")
    closed = root / "closed"
    closed.mkdir()
    database = open_database(closed / DB)
    world = build_world(database, games=2)
    with database.session() as s:
        record_game(*game(world, 1), session=s)
    database.close()
    assert sorted(p.name for p in closed.iterdir()) == [DB]
    work, logged = root / "work", root / "logged"
    work.mkdir()
    logged.mkdir()
    shutil.copyfile(closed / DB, work / DB)
    writer = sqlite3.connect(work / DB)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        assert writer.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        writer.execute("UPDATE tournaments SET name = ?", (IN_LOG,))
        writer.commit()
        for name in (DB, WAL, SHM):
            shutil.copyfile(work / name, logged / name)
    finally:
        writer.close()
    assert (logged / WAL).stat().st_size > 0
    return root


def _scratch() -> Path:
    """A fresh folder under /tmp the other user can reach (pytest's are root's alone)."""
    made = Path(tempfile.mkdtemp(prefix="kryt-roopens-", dir="/tmp"))
    made.chmod(0o755)
    return made


def _remove(scratch: Path) -> None:
    """Give everything under ``scratch`` back its modes (a folder first, then what is in it:
    as another user than root a read-only folder's files cannot be removed), then remove it."""
    scratch.chmod(0o755)
    for path in sorted(scratch.rglob("*"), key=lambda p: len(p.parts)):
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(scratch)


@pytest.fixture
def folder() -> Iterator[Path]:
    made = _scratch()
    try:
        yield made
    finally:
        _remove(made)


def _place(
    folder: Path,
    source: Path,
    names: tuple[str, ...],
    *,
    modes: dict[str, int] | None = None,
    folder_mode: int = 0o777,
) -> Path:
    """Copy ``names`` from ``source`` into ``folder`` (mode 0666 unless ``modes`` says
    otherwise), then give ``folder`` its mode; an empty ``-wal`` when ``source`` has none."""
    for name in names:
        if (source / name).exists():
            shutil.copyfile(source / name, folder / name)
        else:
            assert name == WAL, name
            (folder / name).write_bytes(b"")
        (folder / name).chmod((modes or {}).get(name, 0o666))
    folder.chmod(folder_mode)
    return folder / DB


def _contents(folder: Path) -> dict[str, bytes]:
    """The database file and its log as they are (the ``-shm`` is SQLite's scratch)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name in (DB, WAL)}


@dataclass(frozen=True)
class Case:
    folder: Path
    seen: dict[str, Any]
    """What the other user's opening reported (see _PROBE)."""
    before: dict[str, bytes]
    after: dict[str, bytes]
    listing: list[str]
    """The folder's files after the opening."""


# Each case: where its files come from, which ones, the modes of some, the folder's mode.
_CASES: dict[str, tuple[str, tuple[str, ...], dict[str, int], int]] = {
    # no -shm: SQLite makes one in the writable folder (a reader of a log needs one)
    "wal-unwritable": ("logged", (DB, WAL), {WAL: 0o444}, 0o777),
    "shm-unwritable": ("logged", (DB, WAL, SHM), {SHM: 0o444}, 0o777),
    "no-wal": ("closed", (DB,), {}, 0o555),
    "empty-wal": ("closed", (DB, WAL), {}, 0o555),
    "shm-present": ("logged", (DB, WAL, SHM), {}, 0o555),
    "log-without-shm": ("logged", (DB, WAL), {}, 0o555),
}


@pytest.fixture(scope="module")
def probed(sources: Path) -> Iterator[dict[str, Case]]:
    """Every case of :data:`_CASES` in a folder of its own, opened by the other user in one
    process (one interpreter start for all: the machine is busy)."""
    scratch = _scratch()
    try:
        paths: dict[str, Path] = {}
        before: dict[str, dict[str, bytes]] = {}
        for name, (source, files, modes, folder_mode) in _CASES.items():
            case_folder = scratch / name
            case_folder.mkdir()
            paths[name] = _place(
                case_folder, sources / source, files, modes=modes, folder_mode=folder_mode
            )
            before[name] = _contents(case_folder)
        done = _as_other_user("-c", _PROBE, *(str(p) for p in paths.values()))
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        yield {
            name: Case(
                folder=path.parent,
                seen=report[str(path)],
                before=before[name],
                after=_contents(path.parent),
                listing=sorted(p.name for p in path.parent.iterdir()),
            )
            for name, path in paths.items()
        }
    finally:
        _remove(scratch)


# ---------------------------------------------------------------- E10: -wal or -shm


@pytest.mark.parametrize("unwritable", [WAL, SHM])
def test_an_unwritable_wal_or_shm_file_makes_the_file_read_only(
    probed: dict[str, Case], unwritable: str
) -> None:
    """The file and its folder are writable, but its ``-wal`` (or its ``-shm``) file is not:
    opened read-only, the reason names that file; the change in the log is read; a write
    is refused in one line giving that reason, and neither the file nor its log change."""
    case = probed["wal-unwritable" if unwritable == WAL else "shm-unwritable"]
    seen = case.seen
    assert "open" not in seen, seen
    reason = seen["read_only"]
    assert isinstance(reason, str) and "not writable" in reason, seen
    other = SHM if unwritable == WAL else WAL
    assert str(case.folder / unwritable) in reason and other not in reason, reason
    assert seen["names"] == [IN_LOG]
    refused = seen["write"]
    assert isinstance(refused, list) and refused[0] == "DatabaseUnavailableError", seen
    assert "read-only here" in refused[1] and reason in refused[1], refused
    assert "nothing was written" in refused[1] and "\n" not in refused[1], refused
    assert case.after == case.before


# ---------------------------------------------------------------- E11: immutable


@pytest.mark.parametrize("name", ["no-wal", "empty-wal"])
def test_an_unwritable_folder_without_a_log_to_read_opens_the_file_immutable(
    probed: dict[str, Case], name: str
) -> None:
    """A folder nobody may write, no ``-shm`` and no ``-wal`` (or an empty one): SQLite
    could not create the ``-shm`` it needs in WAL mode, so the file is opened ``immutable``:
    it reads, the reason is the folder, a write is refused, and no file appears."""
    case = probed[name]
    seen = case.seen
    assert "open" not in seen, seen
    assert seen["read_only"] == f"its folder {case.folder} is not writable by this process"
    assert seen["names"] == [IN_FILE]
    refused = seen["write"]
    assert isinstance(refused, list) and refused[0] == "DatabaseUnavailableError", seen
    assert "read-only here" in refused[1], refused
    assert case.listing == ([DB] if name == "no-wal" else [DB, WAL])
    assert case.after == case.before


def test_an_unwritable_folder_with_a_shm_file_reads_the_log(probed: dict[str, Case]) -> None:
    """A folder nobody may write, but the ``-shm`` file is there (and writable): the log's
    changes are read through it (not ``immutable``, which would miss them, nor refused)."""
    case = probed["shm-present"]
    assert "open" not in case.seen, case.seen
    assert case.seen["read_only"] == f"its folder {case.folder} is not writable by this process"
    assert case.seen["names"] == [IN_LOG]
    assert case.after == case.before


# ---------------------------------------------------------------- E12: a log, no -shm


def test_a_log_with_changes_without_a_shm_in_an_unwritable_folder_is_one_clear_error(
    probed: dict[str, Case],
) -> None:
    """The ``-wal`` holds changes, there is no ``-shm`` and the folder is not writable: SQLite
    cannot read the log there, and opening the file ``immutable`` would show the arena
    without them. One error names the log, the missing ``-shm``, the folder and the
    remedies; nothing is created."""
    case = probed["log-without-shm"]
    opened = case.seen.get("open")
    assert isinstance(opened, list) and opened[0] == "DatabaseUnavailableError", case.seen
    message = opened[1]
    assert "\n" not in message, message
    for part in (f"{WAL} holds changes", SHM, f"read-only folder {case.folder}"):
        assert part in message, (part, message)
    assert "open the database once where its folder is writable" in message, message
    assert f"copy {DB} and {WAL} together somewhere writable" in message, message
    assert case.listing == [DB, WAL]
    assert case.after == case.before


# ---------------------------------------------------------------- what a user sees


def test_kryt_reads_a_file_with_an_unwritable_wal_and_a_write_names_it(
    sources: Path, folder: Path
) -> None:
    """``kryt leaderboard`` reads the file; ``kryt tournament cancel`` exits 3 with one line
    naming the ``-wal`` file, and nothing is written."""
    path = _place(folder, sources / "logged", (DB, WAL), modes={WAL: 0o444})
    before = _contents(folder)
    board = _kryt("leaderboard", "--database", str(path))
    assert board.returncode == ExitCode.OK, board.stderr
    assert "alpha" in board.stdout and "bravo" in board.stdout, board.stdout
    cancel = _kryt("tournament", "cancel", "1", "--database", str(path))
    assert cancel.returncode == ExitCode.UNAVAILABLE, cancel.stderr
    lines = cancel.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cancel.stderr
    assert "read-only here" in lines[0] and str(folder / WAL) in lines[0], lines[0]
    assert _contents(folder) == before


def test_kryt_on_a_log_it_cannot_read_says_how_and_the_remedy_works(
    sources: Path, folder: Path, tmp_path: Path
) -> None:
    """``kryt leaderboard`` on E12's files: exit 3, one ``error:`` line naming the log;
    following its advice (the file and its ``-wal`` copied together somewhere writable)
    shows the arena with the change the log held."""
    path = _place(folder, sources / "logged", (DB, WAL), folder_mode=0o555)
    board = _kryt("leaderboard", "--database", str(path))
    assert board.returncode == ExitCode.UNAVAILABLE, board.stderr
    lines = board.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), board.stderr
    assert f"write-ahead log {WAL} holds changes" in lines[0], lines[0]
    for name in (DB, WAL):
        shutil.copyfile(folder / name, tmp_path / name)
    with open_database(tmp_path / DB, create=False) as copy, copy.read_session() as s:
        assert copy.read_only is None
        assert s.execute(text("SELECT name FROM tournaments")).scalar() == IN_LOG
