"""Review from outside: how ``kryt`` behaves when the storage under it fails.

Every test runs the ``kryt`` command as a user would (a subprocess, its working directory a
temporary folder, ``--backend process`` and the bundled bots), on a real full disk (a small
tmpfs, or one filled with a ballast file), a read-only or immutable folder, or a database
file damaged between two commands, and compares what happens with the promises of
README.md, docs/database.md, docs/configuration.md (exit codes), docs/leaderboard.md and
docs/games-format.md: one ``error:`` line naming the problem and the file, the documented
exit code, no traceback, no data lost, and ``kryt tournament resume ID`` playing exactly the
missing games.

A promise that does not hold is kept as a test marked ``xfail(strict=True)`` with the reason.
The tests run as root: mounts are made with ``mount -t tmpfs`` and always unmounted, and an
immutable flag is always removed, in ``finally`` blocks.
"""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
KRYT = str(ROOT / ".venv" / "bin" / "kryt")
ENV = {**os.environ, "COLUMNS": "200"}
ENV.pop("KRYT_DATABASE_URL", None)
BOTS = ("builtin:random", "builtin:greedy")
RUN_TIMEOUT = 180


# --- running kryt ---------------------------------------------------------------------


def kryt(cwd: Path, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` in ``cwd``: its exit status and output."""
    return subprocess.run(
        [KRYT, *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout
    )


def start_kryt(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """``kryt ARGS`` started in the background, leading its own process group."""
    return subprocess.Popen(
        [KRYT, *args],
        cwd=cwd,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop_group(process: subprocess.Popen[str]) -> None:
    """Kill the process group of ``process`` (started by this test) if it still runs."""
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)


def run_args(db: Path, games: int, *more: str) -> list[str]:
    return [
        "tournament", "run", *BOTS, "--games", str(games), "--backend", "process",
        "--database", str(db), *more,
    ]  # fmt: skip


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a failed command (and no traceback)."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    return lines[0]


def hint_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("hint:")]


# --- file systems ---------------------------------------------------------------------


def _umount(where: Path) -> None:
    for _ in range(20):
        if subprocess.run(["umount", str(where)], capture_output=True, timeout=60).returncode == 0:
            return
        time.sleep(0.5)  # a process of ours may still be letting go of a file
    subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=60)


@contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on ``where`` for the block; always unmounted."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        pytest.skip("no mount command on this machine")
    if done.returncode != 0:
        pytest.skip(f"this machine does not let us mount a tmpfs: {done.stderr.strip()}")
    try:
        yield where
    finally:
        _umount(where)


def remount(where: Path, size: str) -> None:
    """Give the tmpfs at ``where`` more room (``size``): free space, as a user would."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], check=True, timeout=60)


def fill(folder: Path, *, leave: int = 0) -> Path:
    """Fill the file system of ``folder`` with a ballast file (then free ``leave`` bytes)."""
    ballast = folder / "ballast"
    with ballast.open("wb", buffering=0) as handle:
        for size in (65536, 4096, 1):  # unbuffered: nothing is left to flush at the end
            chunk = b"\0" * size
            try:
                while True:
                    handle.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    if leave:
        os.truncate(ballast, ballast.stat().st_size - leave)
    return ballast


@contextmanager
def immutable(path: Path) -> Iterator[Path]:
    """``path`` with the immutable flag (which holds for root too); always removed."""
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.skip(f"chattr +i is not possible here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, timeout=60)


# --- the database, read directly ------------------------------------------------------


@dataclass(frozen=True)
class Game:
    id: int
    number: int
    voided: bool
    result: str | None
    end_reason: str | None
    packed: bytes
    finished_at: str | None


def games(db: Path) -> list[Game]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "select id, number, voided, result, end_reason, packed, finished_at from games"
            " order by id"
        ).fetchall()
    conn.close()
    return [Game(r[0], r[1], bool(r[2]), r[3], r[4], bytes(r[5] or b""), r[6]) for r in rows]


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (verdict,) = conn.execute("pragma integrity_check").fetchone()
    conn.close()
    return str(verdict)


def count(db: Path, table: str) -> int:
    if not db.is_file() or db.stat().st_size == 0:
        return 0
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute(f"select count(*) from {table}").fetchone()
    conn.close()
    return int(n)


def assert_complete(recorded: list[Game]) -> None:
    """Every counted game stored whole: a result, an ending, its moves, its end time."""
    for game in recorded:
        if game.voided:
            continue
        assert game.result in ("seat0", "seat1", "draw"), game
        assert game.end_reason, game
        assert len(game.packed) > 18, game  # the deal alone is 18 bytes
        assert game.finished_at, game


def counted_numbers(db: Path) -> list[int]:
    return sorted(g.number for g in games(db) if not g.voided)


def wait_for_games(db: Path, process: subprocess.Popen[str], at_least: int) -> None:
    """Wait until ``db`` holds ``at_least`` games (or the run ended)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if count(db, "games") >= at_least:
                return
        except sqlite3.Error:
            pass  # not made yet
        time.sleep(0.1)
    raise AssertionError(f"no {at_least} games recorded in time (exit {process.poll()})")


# --- a full disk in the middle of a run --------------------------------------------------

GAMES = 60


@dataclass(frozen=True)
class FilledRun:
    cwd: Path
    fs: Path
    db: Path
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def filled_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FilledRun]:
    """A tournament of GAMES games whose database is on a 1 MB tmpfs: the schema and a few
    games fit (its write-ahead log grows by some 30 KB a game), then the disk is full."""
    base = tmp_path_factory.mktemp("filled")
    cwd = base / "work"
    cwd.mkdir()
    with tmpfs(base / "fs", "1M") as fs:
        db = fs / "kryt.db"
        done = kryt(cwd, *run_args(db, GAMES))
        yield FilledRun(cwd, fs, db, done)


def test_a_disk_filling_mid_run_stops_in_one_line_and_resume_plays_the_missing_games(
    filled_run: FilledRun,
) -> None:
    done, db = filled_run.done, filled_run.db
    assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
    line = one_error(done)
    assert "full" in line and str(db) in line, line
    assert integrity(db) == "ok"
    before = games(db)
    assert_complete(before)
    numbers = counted_numbers(db)
    assert 0 < len(numbers) < GAMES, numbers
    assert len(set(numbers)) == len(numbers), numbers  # no game twice
    # The reading commands still work on the full disk and say how to go on.
    status = kryt(filled_run.cwd, "tournament", "status", "1", "--database", str(db))
    assert status.returncode == ExitCode.OK, status.stderr
    assert "kryt tournament resume 1" in " ".join(status.stdout.split()), status.stdout
    # Free space; resume plays exactly the missing games.
    remount(filled_run.fs, "32M")
    resumed = kryt(filled_run.cwd, "tournament", "resume", "1", "--database", str(db))
    assert resumed.returncode == ExitCode.OK, resumed.stderr
    assert integrity(db) == "ok"
    assert counted_numbers(db) == list(range(1, GAMES + 1))
    after = {g.id: g for g in games(db)}
    assert_complete(list(after.values()))
    for game in before:  # what was recorded before the disk filled is kept as it was
        assert after[game.id] == game
    last = max(g.id for g in before if not g.voided)
    replay = kryt(filled_run.cwd, "replay", str(last), "--verify", "--database", str(db))
    assert replay.returncode == ExitCode.OK, replay.stdout + replay.stderr


def test_a_disk_filling_mid_run_gives_the_resume_command_in_its_hint(
    filled_run: FilledRun,
) -> None:
    done = filled_run.done
    assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
    hints = hint_lines(done.stderr)
    assert len(hints) == 1, done.stderr
    assert "kryt tournament resume 1" in hints[0], hints[0]


def test_a_disk_filled_by_another_file_during_a_run(tmp_path: Path) -> None:
    """The disk fills under a run that already has a large write-ahead log (another file
    takes the space): the same clean stop, and resume finishes the tournament."""
    games_planned = 800
    cwd = tmp_path / "work"
    cwd.mkdir()
    with tmpfs(tmp_path / "fs", "32M") as fs:
        db = fs / "kryt.db"
        process = start_kryt(cwd, *run_args(db, games_planned))
        try:
            wait_for_games(db, process, 20)
            ballast = fill(fs)
            out, err = process.communicate(timeout=RUN_TIMEOUT)
        finally:
            stop_group(process)
        assert process.returncode == ExitCode.UNAVAILABLE, err
        line = one_error(subprocess.CompletedProcess([], process.returncode, out, err))
        assert "full" in line and str(db) in line, line
        ballast.unlink()
        assert integrity(db) == "ok"
        before = games(db)
        assert_complete(before)
        numbers = counted_numbers(db)
        assert 0 < len(numbers) < games_planned and len(set(numbers)) == len(numbers)
        resumed = kryt(cwd, "tournament", "resume", "1", "--database", str(db))
        assert resumed.returncode == ExitCode.OK, resumed.stderr
        assert integrity(db) == "ok"
        assert counted_numbers(db) == list(range(1, games_planned + 1))
        after = {g.id: g for g in games(db)}
        for game in before:
            assert after[game.id] == game


# --- a full disk before the run ----------------------------------------------------------


def test_a_disk_full_before_the_run_is_one_line_and_the_next_run_works(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with tmpfs(tmp_path / "fs", "1M") as fs:  # room for the schema and a few games
        db = fs / "kryt.db"
        ballast = fill(fs)
        done = kryt(cwd, *run_args(db, 2))
        assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
        line = one_error(done)
        assert "full" in line and str(db) in line, line
        assert "tournament 1 created" not in done.stderr + done.stdout
        ballast.unlink()
        again = kryt(cwd, *run_args(db, 2))
        assert again.returncode == ExitCode.OK, again.stderr
        assert counted_numbers(db) == [1, 2]
        assert integrity(db) == "ok"


def test_a_disk_full_before_the_run_creates_no_database_file(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with tmpfs(tmp_path / "fs", "1M") as fs:  # room for the schema and a few games
        db = fs / "kryt.db"
        fill(fs)
        done = kryt(cwd, *run_args(db, 2))
        assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
        board = kryt(cwd, "leaderboard", "--database", str(db))
        assert board.returncode == ExitCode.UNAVAILABLE, board.stderr
        assert "no database at" in one_error(board), board.stderr
        assert not db.exists(), sorted(p.name for p in fs.iterdir())


# --- the store of bot copies ----------------------------------------------------------------


def test_a_store_on_a_full_disk_is_one_line(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    with tmpfs(tmp_path / "fs", "256k") as fs:
        store = fs / "store"
        store.mkdir()
        fill(fs)
        done = kryt(cwd, *run_args(cwd / "kryt.db", 2, "--store", str(store)))
        assert count(cwd / "kryt.db", "tournaments") == 0
        assert list(store.iterdir()) == []  # nothing half-copied left
        assert done.returncode == ExitCode.BAD_INPUT, done.stderr  # as a store unwritable
        line = one_error(done)
        assert "No space left" in line and str(store) in line, line
        assert "choose another --store" in line, line


@pytest.mark.parametrize("how", ["read-only mount", "immutable folder"])
def test_a_store_that_cannot_be_written_is_one_line(tmp_path: Path, how: str) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    store = tmp_path / "fs" / "store"

    def check() -> None:
        done = kryt(cwd, *run_args(cwd / "kryt.db", 2, "--store", str(store)))
        assert done.returncode == ExitCode.BAD_INPUT, done.stderr
        line = one_error(done)
        assert str(store) in line and "choose another --store" in line, line
        assert count(cwd / "kryt.db", "tournaments") == 0
        assert list(store.iterdir()) == []

    if how == "read-only mount":
        with tmpfs(tmp_path / "fs", "256k") as fs:
            store.mkdir()
            subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True, timeout=60)
            check()
    else:
        store.mkdir(parents=True)
        with immutable(store):
            check()


# --- a database file damaged between two commands ----------------------------------------


@pytest.fixture(scope="module")
def arena_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real kryt.db: a finished tournament of four games, closed (no -wal file)."""
    cwd = tmp_path_factory.mktemp("arena")
    done = kryt(cwd, *run_args(cwd / "kryt.db", 4))
    assert done.returncode == ExitCode.OK, done.stderr
    assert not (cwd / "kryt.db-wal").exists()
    return (cwd / "kryt.db").read_bytes()


def _damaged(kind: str, good: bytes) -> bytes:
    page = 4096
    if kind == "garbage":
        return os.urandom(len(good))
    if kind == "zeroed header":
        return b"\0" * 100 + good[100:]
    if kind == "truncated":
        return good[: len(good) // 3]
    if kind == "damaged pages":
        return good[: 2 * page] + os.urandom(4 * page) + good[6 * page :]
    raise AssertionError(kind)


COMMANDS = {
    "leaderboard": ("leaderboard",),
    "status": ("tournament", "status"),
    "run": ("tournament", "run", *BOTS, "--games", "2", "--backend", "process"),
}


@pytest.mark.parametrize("kind", ["garbage", "zeroed header", "truncated", "damaged pages"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_damaged_database_file_is_one_line_naming_it_and_left_alone(
    tmp_path: Path, arena_bytes: bytes, kind: str, command: str
) -> None:
    db = tmp_path / "kryt.db"
    content = _damaged(kind, arena_bytes)
    db.write_bytes(content)
    done = kryt(tmp_path, *COMMANDS[command])
    assert done.returncode == ExitCode.UNAVAILABLE, done.stdout + done.stderr
    line = one_error(done)
    assert str(db) in line, line
    assert db.read_bytes() == content
    assert not (tmp_path / "kryt.db-wal").exists() and not (tmp_path / "kryt.db-shm").exists()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_directory_where_the_database_should_be_is_one_line(tmp_path: Path, command: str) -> None:
    db = tmp_path / "kryt.db"
    db.mkdir()
    done = kryt(tmp_path, *COMMANDS[command])
    assert done.returncode == ExitCode.UNAVAILABLE, done.stdout + done.stderr
    line = one_error(done)
    assert str(db) in line, line
    assert "directory" in done.stderr
    assert db.is_dir() and list(db.iterdir()) == []


@pytest.mark.parametrize("command", ["leaderboard", "status"])
def test_a_truncated_zero_length_database_is_one_line_for_a_reader(
    tmp_path: Path, command: str
) -> None:
    db = tmp_path / "kryt.db"
    db.touch()
    done = kryt(tmp_path, *COMMANDS[command])
    assert done.returncode == ExitCode.UNAVAILABLE, done.stdout + done.stderr
    line = one_error(done)
    assert str(db) in line and "empty file" in line, line
    assert db.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kryt.db"]


def test_the_write_ahead_log_of_a_killed_run_is_read_and_resume_finishes(
    tmp_path: Path,
) -> None:
    """``kill -9`` of the whole run leaves ``kryt.db-wal`` (and ``-shm``) behind: the next
    commands read the games it holds, and resume plays exactly the missing ones."""
    games_planned = 400
    db = tmp_path / "kryt.db"
    process = start_kryt(tmp_path, *run_args(db, games_planned))
    try:
        wait_for_games(db, process, 20)
    finally:
        stop_group(process)
    assert process.returncode == -signal.SIGKILL
    assert (tmp_path / "kryt.db-wal").stat().st_size > 0
    stored = counted_numbers(db)
    assert 0 < len(stored) < games_planned
    board = kryt(tmp_path, "leaderboard")
    assert board.returncode == ExitCode.OK, board.stderr
    assert "random" in board.stdout and "greedy" in board.stdout, board.stdout
    status = kryt(tmp_path, "tournament", "status", "1")
    assert status.returncode == ExitCode.OK, status.stderr
    assert "kryt tournament resume 1" in " ".join(status.stdout.split()), status.stdout
    assert integrity(db) == "ok"
    before = games(db)
    resumed = kryt(tmp_path, "tournament", "resume", "1")
    assert resumed.returncode == ExitCode.OK, resumed.stderr
    assert counted_numbers(db) == list(range(1, games_planned + 1))
    after = {g.id: g for g in games(db)}
    for game in before:
        assert after[game.id] == game
    assert integrity(db) == "ok"


# --- exports onto a full disk ----------------------------------------------------------

OLD = '[KrytGameFile "1"]\n[Tournament "an earlier export"]\n'


@pytest.mark.parametrize(
    ("name", "leave"),
    [("games.kgn", 0), ("games.csv", 0), ("games.json", 0), ("games.kgn", 4096)],
    ids=["text-full", "csv-full", "json-full", "text-4k-free"],
)
@pytest.mark.parametrize("earlier", [True, False], ids=["replacing", "new"])
def test_games_export_onto_a_full_disk_leaves_no_half_file(
    tmp_path: Path, arena_bytes: bytes, name: str, leave: int, earlier: bool
) -> None:
    """docs/games-format.md: written whole through a temporary file of its directory, the
    target replaced only once all of it is written and synced."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "kryt.db").write_bytes(arena_bytes)
    with tmpfs(tmp_path / "fs", "64k") as fs:
        target = fs / name
        old = OLD if name.endswith(".kgn") else ""
        if earlier:
            target.write_text(old)
        fill(fs, leave=leave)
        done = kryt(cwd, "games", "export", str(target))
        assert done.returncode == ExitCode.BAD_INPUT, done.stdout + done.stderr
        line = one_error(done)
        assert f"cannot write {target}" in line and "No space left" in line, line
        assert "wrote" not in done.stdout
        left = sorted(p.name for p in fs.iterdir())
        if earlier:
            assert target.read_text() == old
            assert left == sorted(["ballast", name])
        else:
            assert left == ["ballast"]


def test_a_static_site_onto_a_full_disk_is_one_line(tmp_path: Path, arena_bytes: bytes) -> None:
    """docs/leaderboard.md promises no atomic site; what it does promise is the command's:
    it fails in one line, and does not report pages it could not write."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "kryt.db").write_bytes(arena_bytes)
    with tmpfs(tmp_path / "fs", "256k") as fs:
        fill(fs)
        done = kryt(cwd, "leaderboard", "--html", str(fs / "site"))
        assert done.returncode == ExitCode.BAD_INPUT, done.stdout + done.stderr
        line = one_error(done)
        assert "No space left" in line and str(fs / "site") in line, line
        assert "wrote" not in done.stdout


def test_a_static_site_exported_again_onto_a_full_disk_keeps_its_pages(
    tmp_path: Path, arena_bytes: bytes
) -> None:
    """Each page is written whole or not at all (through a file beside it, renamed over it):
    exporting again onto a disk that fills leaves the earlier site's pages as they were,
    never cut short, and no partial file behind."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "kryt.db").write_bytes(arena_bytes)
    with tmpfs(tmp_path / "fs", "2M") as fs:
        site = fs / "site"
        first = kryt(cwd, "leaderboard", "--html", str(site))
        assert first.returncode == ExitCode.OK, first.stderr
        pages = {p: p.read_bytes() for p in site.rglob("*.html")}
        assert pages and all(pages.values())
        fill(fs)
        again = kryt(cwd, "leaderboard", "--html", str(site))
        assert again.returncode == ExitCode.BAD_INPUT, again.stdout + again.stderr
        assert "No space left" in one_error(again)
        assert {p: p.read_bytes() for p in site.rglob("*.html")} == pages
        assert not list(site.rglob("*.partial"))
