"""Review of issue 16 from the outside: one owner per tournament, clean failures everywhere.

Everything here goes through ``kryt`` as a user would (a subprocess with a minimal
environment, or ``kryt.cli.main`` in process for the quick refusals), on SQLite and, where
the docs promise it, PostgreSQL. What is right comes from README.md, docs/configuration.md
(exit codes, "Managing a tournament"), docs/scaling.md ("One run per tournament (the
lease)") and docs/database.md. The machine is busy: no test assumes which of two events
comes first, and every wait is generous.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from kryt.cli import main
from tests.db.conftest import scratch_postgres_database
from tests.kryt_subprocess import clean_env, run_kryt, start_kryt
from tests.procfs import process_stats

ROOT = Path(__file__).resolve().parents[2]
KRYT = [sys.executable, "-m", "kryt"]
DEADLINE = 240.0  # generous: a loaded machine
HOST = socket.gethostname()
ENV = clean_env()
BOTS = ["builtin:random", "builtin:greedy", "--backend", "process"]


# --- helpers ----------------------------------------------------------------------------


def kryt(
    cwd: Path, *args: str, timeout: float = DEADLINE, user: int | None = None
) -> subprocess.CompletedProcess[str]:
    return run_kryt(cwd, *args, env=ENV, timeout=timeout, user=user)


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return start_kryt(cwd, *args, env=ENV)


def flat(value: str) -> str:
    return re.sub(r"\s+", " ", value)


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    """The ``error:`` line of a refusal (a ``hint:`` line may follow), no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def _live_processes() -> dict[int, tuple[int, int, int]]:
    """``(ppid, session, start time)`` of every live process (zombies left out)."""
    return {
        pid: (int(fields[1]), int(fields[3]), int(fields[19]))
        for pid, fields in process_stats()
        if fields[0] not in ("Z", "X")
    }


def family(leader: int) -> set[tuple[int, int]]:
    """``(pid, start time)`` of every live process of ``leader``'s session or below it."""
    table = _live_processes()
    found = {pid for pid, (_, session, _) in table.items() if session == leader}
    grew = True
    while grew:
        below = {pid for pid, (ppid, _, _) in table.items() if ppid in found | {leader}}
        grew = not below <= found
        found |= below
    found.discard(leader)
    return {(pid, table[pid][2]) for pid in found if pid in table}


def still_alive(processes: set[tuple[int, int]]) -> set[tuple[int, int]]:
    table = _live_processes()
    return {
        (pid, started) for pid, started in processes if table.get(pid, (0, 0, -1))[2] == started
    }


class Store:
    """Read-only look at a tournament's database, SQLite or PostgreSQL."""

    def __init__(self, url: str) -> None:
        self.url = url if "://" in url else f"sqlite:///{url}"
        self.engine = create_engine(self.url)

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        try:
            with self.engine.connect() as connection:
                return [tuple(row) for row in connection.execute(text(sql))]
        except Exception:  # the schema is not there yet
            return []

    def counted(self) -> list[tuple[int, int, int]]:
        """``(id, series, number)`` of the counted games."""
        return sorted(
            (int(str(a)), int(str(b)), int(str(c)))
            for a, b, c in self.rows("select id, series_id, number from games where not voided")
        )

    def forfeits(self) -> list[tuple[object, ...]]:
        return self.rows(
            "select series_id, number, end_reason from games "
            "where not voided and forfeit_seat is not null"
        )

    def close(self) -> None:
        self.engine.dispose()


def exactly_once(games: list[tuple[int, int, int]]) -> None:
    """Counted games: one per (series, number), numbered 1..N without a gap."""
    by_series: dict[int, list[int]] = {}
    for _, series, number in games:
        by_series.setdefault(series, []).append(number)
    for series, numbers in by_series.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), (series, sorted(numbers))


def wait_for(
    store: Store, process: subprocess.Popen[str], at_least: int
) -> list[tuple[int, int, int]]:
    deadline = time.monotonic() + DEADLINE
    while len(games := store.counted()) < at_least:
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the run ended early ({process.returncode}): {out[-2000:]}\n{err}")
        assert time.monotonic() < deadline, "no games were recorded in time"
        time.sleep(0.2)
    return games


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def run_stopped_after(
    folder: Path, db: Path, games: str, at_least: int, stop_with: Callable[[int], None]
) -> subprocess.Popen[str]:
    """A ``-j 1`` run of ``games`` games a pair into ``db``, stopped by ``stop_with(pid)``
    once ``at_least`` games are recorded; returns the ended process."""
    run = start(folder, "tournament", "run", *BOTS, "-n", games, "-j", "1", "--db", str(db))
    store = Store(str(db))
    try:
        wait_for(store, run, at_least)
        stop_with(run.pid)
        run.communicate(timeout=DEADLINE)
    finally:
        stop(run)
        store.close()
    return run


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database: a SQLite file not created yet, or an empty PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "kryt.db")
        return
    with scratch_postgres_database() as url:
        yield url


# --- one owner, kill -9, Ctrl-C, resume ---------------------------------------------------


@pytest.mark.timeout(600)
def test_one_owner_kill_and_ctrl_c_lose_and_duplicate_nothing(tmp_path: Path, db_url: str) -> None:
    """A second resume is refused naming the holder; the owner SIGKILLed leaves no bot
    behind and its tournament shows ``stopped`` (holder dead) and resumes at once on this
    host; a resume stopped by Ctrl-C exits 130 with the resume command; every game played
    is kept, and none is counted twice."""
    store = Store(db_url)
    where = ["--db", db_url]
    first = start(tmp_path, "tournament", "run", *BOTS, "-n", "600", "-j", "1", *where)
    try:
        wait_for(store, first, 3)
        bots = family(first.pid)
        second = kryt(tmp_path, "tournament", "resume", "1", *where)
        assert second.returncode == 3, (second.stdout, second.stderr)
        line = one_error_line(second.stderr)
        assert f"tournament 1 is being run by pid {first.pid} on host {HOST}" in line
        assert "--take-over" in line
        status = kryt(tmp_path, "tournament", "status", *where)
        assert status.returncode == 0, status.stderr
        assert "running" in status.stdout and f"pid {first.pid}" in flat(status.stdout)
        assert first.poll() is None, "the refused resume disturbed the owner"
        bots |= family(first.pid)
        assert bots, "the run has no child processes (bots)?"
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=DEADLINE)
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGKILL)
            first.communicate()
    # No orphan: every process the run had started ends by itself (generous bound).
    deadline = time.monotonic() + 90
    while still_alive(bots) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not still_alive(bots), f"left behind after kill -9: {still_alive(bots)}"

    before = store.counted()
    exactly_once(before)
    status = kryt(tmp_path, "tournament", "status", "1", *where)
    assert status.returncode == 0, status.stderr
    text_ = flat(status.stdout)
    assert "status: stopped" in text_ and "holder dead" in text_, text_
    assert "resume with: kryt tournament resume 1" in text_

    # The holder's process is gone on this host: the lease is free at once.
    resumed = start(tmp_path, "tournament", "resume", "1", *where)
    try:
        wait_for(store, resumed, len(before) + 5)
        os.killpg(resumed.pid, signal.SIGINT)
        out, err = resumed.communicate(timeout=DEADLINE)
    finally:
        stop(resumed)
    assert resumed.returncode == 130, (out[-2000:], err)
    assert "Traceback" not in err, err
    assert "interrupted" in err and "kryt tournament resume 1" in flat(err), err

    after = store.counted()
    exactly_once(after)
    assert set(before) <= set(after), "a finished game was lost across kill -9 and resume"
    assert len(after) > len(before)
    assert store.forfeits() == [], "a healthy bundled bot was scored a forfeit"
    status = kryt(tmp_path, "tournament", "status", "1", *where)
    text_ = flat(status.stdout)
    assert status.returncode == 0 and "status: stopped" in text_, text_
    assert "resume with: kryt tournament resume 1" in text_

    # Several resumes at once: only one plays; the others are refused naming it (or, had
    # they come after it, find the tournament finished). The end: each game exactly once.
    runs = [start(tmp_path, "tournament", "resume", "1", *where) for _ in range(3)]
    results: list[tuple[int, str]] = []
    try:
        for run in runs:
            _, err = run.communicate(timeout=DEADLINE)
            results.append((run.returncode, err))
    finally:
        for run in runs:
            stop(run)
    players = [err for code, err in results if code == 0 and "already finished" not in err]
    assert len(players) == 1, results
    for code, err in results:
        if code != 0:
            assert code == 3, results
            assert "is being run by pid" in one_error_line(err), err
    final = store.counted()
    exactly_once(final)
    assert set(after) <= set(final) and len(final) == 600
    assert store.forfeits() == []
    status = kryt(tmp_path, "tournament", "status", "1", *where)
    assert "status: finished" in flat(status.stdout), status.stdout
    store.close()


def _utc(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")


@pytest.mark.timeout(300)
def test_a_lease_held_on_another_host_is_refused_until_it_expires(tmp_path: Path) -> None:
    """A holder on another machine cannot be checked for life: its lease is honoured until it
    runs out (then the tournament is free), and ``--take-over`` takes it at once."""
    db = tmp_path / "kryt.db"
    where = ["--db", str(db)]
    run = run_stopped_after(tmp_path, db, "150", 2, lambda pid: os.kill(pid, signal.SIGKILL))
    store = Store(str(db))
    with sqlite3.connect(db, timeout=60) as connection:
        (leases,) = connection.execute("select count(*) from tournament_leases").fetchone()
        assert leases == 1, "the killed run's lease row is gone?"
        expires = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(seconds=20)
        connection.execute(
            "update tournament_leases set host = 'far-away-host', expires_at = ?",
            (_utc(expires),),
        )
    refused = kryt(tmp_path, "tournament", "resume", "1", *where)
    assert refused.returncode == 3, (refused.stdout, refused.stderr)
    line = one_error_line(refused.stderr)
    assert f"pid {run.pid} on host far-away-host" in line and "--take-over" in line
    before = store.counted()
    # Expired: the next resume takes it without --take-over.
    with sqlite3.connect(db, timeout=60) as connection:
        past = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(seconds=1)
        connection.execute("update tournament_leases set expires_at = ?", (_utc(past),))
    status = kryt(tmp_path, "tournament", "status", "1", *where)
    assert "lease expired" in flat(status.stdout), status.stdout
    taken = kryt(tmp_path, "tournament", "resume", "1", *where)
    assert taken.returncode == 0, (taken.stdout[-2000:], taken.stderr)
    final = store.counted()
    exactly_once(final)
    assert set(before) <= set(final) and len(final) == 150
    store.close()


@pytest.mark.timeout(300)
def test_cancel_stops_the_owner_and_keeps_its_games(tmp_path: Path) -> None:
    """``cancel`` while a run plays: the run stops within seconds (exit 1, saying so), the
    recorded games stay, nothing is recorded after, and a resume is refused (exit 2)."""
    db = tmp_path / "kryt.db"
    run = start(tmp_path, "tournament", "run", *BOTS, "-n", "2000", "-j", "1", "--db", str(db))
    store = Store(str(db))
    try:
        wait_for(store, run, 3)
        cancel = kryt(tmp_path, "tournament", "cancel", "1", "--db", str(db))
        assert cancel.returncode == 0, cancel.stderr
        assert "cancelled" in cancel.stdout + cancel.stderr
        at_cancel = store.counted()
        out, err = run.communicate(timeout=DEADLINE)
    finally:
        stop(run)
    assert run.returncode == 1, (out[-2000:], err)
    assert "cancelled" in err and "Traceback" not in err, err
    final = store.counted()
    exactly_once(final)
    assert final == at_cancel, "games recorded after the cancel returned"
    status = kryt(tmp_path, "tournament", "status", "1", "--db", str(db))
    assert "status: cancelled" in flat(status.stdout), status.stdout
    resume = kryt(tmp_path, "tournament", "resume", "1", "--db", str(db))
    assert resume.returncode == 2 and "cancelled" in one_error_line(resume.stderr)
    store.close()


# --- the database itself ----------------------------------------------------------------


def test_a_missing_database_file_is_one_line_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["status"], ["status", "1"], ["resume", "1"], ["cancel", "1"]):
        db = tmp_path / "missing.db"
        code, _, err = in_process(capsys, "tournament", *command, "--db", str(db))
        assert code == 3, (command, err)
        assert "no database at" in one_error_line(err)
        assert not db.exists(), command
    code, _, err = in_process(
        capsys, "tournament", "run", *BOTS, "-n", "2", "--db", str(tmp_path / "no" / "x.db")
    )
    assert code == 3 and "does not exist" in one_error_line(err)


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "notes.db"
    db.write_bytes(b"shopping list\nmilk\n" * 100)
    before = db.read_bytes()
    for command in (
        ["status"],
        ["resume", "1"],
        ["cancel", "1"],
        ["run", *BOTS, "-n", "2", "--store", str(tmp_path / "s")],
    ):
        code, _, err = in_process(capsys, "tournament", *command, "--db", str(db))
        assert code == 3, (command, err)
        assert "not a SQLite database" in one_error_line(err)
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("notes")) == ["notes.db"]


@pytest.fixture(scope="module")
def stopped_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database with tournament 1 interrupted by Ctrl-C after a few games."""
    folder = tmp_path_factory.mktemp("stopped")
    db = folder / "kryt.db"
    run = run_stopped_after(folder, db, "200", 3, lambda pid: os.killpg(pid, signal.SIGINT))
    assert run.returncode == 130
    return db


NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run kryt as another user")


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder under /tmp that another user can reach (pytest's tmp_path is root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="kryt-review16-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@as_root
def test_a_read_only_database_refuses_writers_in_one_line_and_serves_readers(
    open_folder: Path, stopped_db: Path
) -> None:
    folder = open_folder / "ro"
    folder.mkdir()
    db = folder / "kryt.db"
    db.write_bytes(stopped_db.read_bytes())
    db.chmod(0o644)
    folder.chmod(0o755)
    before = db.read_bytes()
    bot_store = open_folder / "nobody-store"
    bot_store.mkdir()
    os.chown(bot_store, NOBODY, NOBODY)
    store = ["--store", str(bot_store)]
    for command in (["resume", "1", *store], ["cancel", "1"], ["run", *BOTS, "-n", "2", *store]):
        done = kryt(folder, "tournament", *command, "--db", str(db), user=NOBODY)
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "read-only" in one_error_line(done.stderr)
    status = kryt(folder, "tournament", "status", "1", "--db", str(db), user=NOBODY)
    assert status.returncode == 0, status.stderr
    assert "status: stopped" in flat(status.stdout)
    assert db.read_bytes() == before


@as_root
def test_a_database_in_a_folder_the_user_cannot_enter(open_folder: Path, stopped_db: Path) -> None:
    folder = open_folder / "private"
    folder.mkdir()
    db = folder / "kryt.db"
    db.write_bytes(stopped_db.read_bytes())
    folder.chmod(0o700)
    for command in (["status"], ["resume", "1"], ["cancel", "1"]):
        done = kryt(open_folder, "tournament", *command, "--db", str(db), user=NOBODY)
        assert done.returncode == 3, (command, done.stderr[-600:])
        one_error_line(done.stderr)


def test_status_answers_while_another_process_holds_the_write_lock(
    tmp_path: Path, stopped_db: Path
) -> None:
    db = tmp_path / "kryt.db"
    db.write_bytes(stopped_db.read_bytes())
    writer = sqlite3.connect(db, isolation_level=None, timeout=60)
    try:
        assert writer.execute("pragma journal_mode").fetchone()[0] == "wal"
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("update tournaments set name = name")
        try:
            status = kryt(tmp_path, "tournament", "status", "1", "--db", str(db), timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail("`kryt tournament status` still waiting after 15 s")
        assert status.returncode == 0, status.stderr
        assert "status: stopped" in flat(status.stdout)
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_short_write_lock_is_waited_for_not_an_error(tmp_path: Path, stopped_db: Path) -> None:
    """A writer holding SQLite's lock for a moment: a resume queues for it (busy timeout)."""
    db = tmp_path / "kryt.db"
    db.write_bytes(stopped_db.read_bytes())
    writer = sqlite3.connect(db, isolation_level=None, timeout=60)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("update tournaments set name = name")
    resume = start(tmp_path, "tournament", "resume", "1", "--db", str(db))
    try:
        time.sleep(3)
        writer.execute("COMMIT")
        writer.close()
        out, err = resume.communicate(timeout=DEADLINE)
    finally:
        stop(resume)
    assert resume.returncode == 0, (out[-2000:], err)
    store = Store(str(db))
    games = store.counted()
    exactly_once(games)
    assert len(games) == 200
    store.close()


def test_wrong_database_urls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for url in ("mysql://a@b/c", "foo://bar", "sqlite://"):
        code, _, err = in_process(capsys, "tournament", "status", "--db", url)
        assert code == 2, (url, err)
        assert "Traceback" not in err and "error:" in err, err
    # A server that is not there: a missing service, exit 3, password masked.
    url = "postgresql://someone:s3cret@127.0.0.1:1/nothing"
    for command in (["status"], ["resume", "1"], ["run", *BOTS, "-n", "2"]):
        code, out, err = in_process(capsys, "tournament", *command, "--db", url)
        assert code == 3, (command, err)
        line = one_error_line(err)
        assert "cannot connect" in line and "s3cret" not in err + out


@pytest.mark.postgres
def test_wrong_postgres_password_and_missing_database(
    capsys: pytest.CaptureFixture[str],
) -> None:
    admin_url = os.environ.get("KRYT_TEST_POSTGRES_URL")
    if not admin_url:
        pytest.skip("KRYT_TEST_POSTGRES_URL is not set")
    wrong = make_url(admin_url).set(password="definitely-wrong")
    code, out, err = in_process(
        capsys, "tournament", "status", "--db", wrong.render_as_string(hide_password=False)
    )
    assert code == 3 and "definitely-wrong" not in out + err
    assert "password authentication failed" in one_error_line(err)
    missing = make_url(admin_url).set(database=f"kryt_none_{uuid.uuid4().hex[:8]}")
    code, _, err = in_process(
        capsys, "tournament", "status", "--db", missing.render_as_string(hide_password=False)
    )
    assert code == 3 and "does not exist" in one_error_line(err)


def test_a_tournament_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], stopped_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "kryt.db"
    db.write_bytes(stopped_db.read_bytes())
    for command in (["status", "99"], ["resume", "99"], ["resume", "99", "--take-over"]):
        code, _, err = in_process(capsys, "tournament", *command, "--db", str(db))
        assert code == 2, (command, err)
        assert "no tournament with id 99" in one_error_line(err)
    code, _, err = in_process(capsys, "tournament", "cancel", "99", "--db", str(db))
    assert code == 2 and "no tournament with id 99" in one_error_line(err)
    for bad in ("0", "-1", "abc", "2147483648"):
        code, _, err = in_process(capsys, "tournament", "resume", bad, "--db", str(db))
        assert code == 2 and "Traceback" not in err, (bad, err)


Case = tuple[list[str], str]
CONFLICTS: list[Case] = [
    (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler is for --executor dask"),
    (["--worker-store", "/tmp/x"], "--worker-store is for --executor dask"),
    (["--format", "duplicate", "-n", "3"], "even number"),
    (["--time", "1+10", "--move-seconds", "2"], "--time"),
    (["--table-size", "3"], "table size"),
    (["--book", "nothing.book", "--format", "standard"], "book"),
]


@pytest.mark.parametrize("flags,says", CONFLICTS, ids=lambda v: str(v)[:30])
def test_conflicting_flags_store_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    db = tmp_path / "kryt.db"
    code, _, err = in_process(
        capsys, "tournament", "run", *BOTS, "-n", "2", *flags, "--db", str(db)
    )
    assert code == 2, err
    assert says in one_error_line(err), err
    store = Store(str(db))
    assert store.rows("select id from tournaments") == []
    store.close()


def test_resume_flags_that_do_not_belong(
    capsys: pytest.CaptureFixture[str], stopped_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "kryt.db"
    db.write_bytes(stopped_db.read_bytes())
    checks: list[tuple[list[str], Callable[[str], bool]]] = [
        (["--scheduler", "tcp://127.0.0.1:8786"], lambda e: "--executor dask" in e),
        (["--games", "4"], lambda e: "No such option" in e),
        (["--executor", "threads"], lambda e: "threads" in e),
    ]
    for flags, ok in checks:
        code, _, err = in_process(capsys, "tournament", "resume", "1", *flags, "--db", str(db))
        assert code == 2 and ok(one_error_line(err)), (flags, err)
    store = Store(str(db))
    (status,) = store.rows("select status from tournaments where id = 1")
    assert status[0] != "running"
    store.close()
