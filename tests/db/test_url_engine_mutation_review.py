"""Tests from a mutation review of ``arena/db/url.py`` and ``arena/db/engine.py``: each one
kills mutants the suite let live, and each checks behaviour a user sees (docs/database.md,
docs/configuration.md).

- URLs: a URL or path given with blanks around it (``$(cat url-file)``) names the same
  database; a plain path holding ``:`` is a SQLite file, not a malformed URL; the spellings
  we ship (``sqlite+pysqlite``) come out canonical; port 65536 is refused; no error about a
  URL shows its password, also for a URL SQLAlchemy cannot parse at all, one with a NUL
  byte, or a ``?passwd=`` parameter; an unsupported scheme names the URL (masked); a NUL
  byte at the very start of a path is refused in one typed error; a byte that is not UTF-8
  is named by its position.
- Opening: a database that is up to date is opened without any write lock (a reading command
  beside a running tournament's write does not wait for it); a new SQLite file whose opening
  fails (refused, interrupted) is not left behind as an empty file, but a file that has
  something in it is never removed; discarding a database a refused command created keeps a
  tournament another command stored in it and never removes a file put in its place; a read
  session commits nothing; one database serves several threads; a file opened read-only is
  the file named (``#``, ``%`` in its path), and so is a writable file in a read-only
  folder (run as nobody); it serves several threads, reads one snapshot per
  read session, refuses writes and keeps its journal mode; a PostgreSQL server that does
  not answer fails within the connect timeout instead of hanging; a refused connection is
  one line; a pooled PostgreSQL connection the server dropped is replaced, not used.

Everything runs on SQLite or on no server at all (a closed port, a silent listener), but for
one PostgreSQL case: a pooled connection the server dropped is replaced before it is used.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

import arena.db.engine as engine_module
import arena.db.migrate as migrate_module
from arena.db import (
    DatabaseMissingError,
    DatabaseUnavailableError,
    DatabaseURLError,
    SchemaOutdatedError,
    mask_url,
    normalize_url,
    open_database,
)
from arena.db.engine import sqlite_path
from tests.db.helpers import build_world
from tests.services import require

_ROOT = Path(__file__).resolve().parents[2]
_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# ---------------------------------------------------------------------------- URLs


def test_blanks_around_a_url_or_path_are_ignored(tmp_path: Path) -> None:
    """A value read from a file (``-d "$(cat url)"``) often ends in a newline: it names the
    same database, not a file whose name starts or ends with blanks."""
    assert normalize_url(f"  {tmp_path}/a.db\n") == f"sqlite:///{tmp_path}/a.db"
    assert normalize_url(" postgresql://kryt:s3cret@dbhost/kryt\n") == (
        "postgresql+psycopg://kryt:s3cret@dbhost/kryt"
    )


def test_a_plain_path_with_a_colon_is_a_sqlite_file(tmp_path: Path) -> None:
    """Only ``://`` makes a URL: ``results:2024.db`` is a file name, not a malformed URL."""
    url = normalize_url(tmp_path / "results:2024.db")
    assert url.startswith("sqlite:///")
    assert sqlite_path(url) == tmp_path / "results:2024.db"


def test_the_sqlite_spellings_we_ship_come_out_canonical(tmp_path: Path) -> None:
    """``sqlite+pysqlite://`` names the driver we ship: accepted, and written as
    ``sqlite:///`` with an absolute path, the canonical form every caller compares."""
    assert normalize_url(f"sqlite+pysqlite:///{tmp_path}/a.db") == f"sqlite:///{tmp_path}/a.db"


def test_port_65536_is_refused() -> None:
    with pytest.raises(DatabaseURLError, match="port 65536 is not in 1-65535") as refused:
        normalize_url("postgresql://kryt:s3cret@dbhost:65536/kryt")
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # SQLAlchemy cannot parse it at all (a blank in the scheme): nothing of it is shown.
        ("postgres ql://kryt:s3cret@dbhost/kryt", "'<unparseable URL>'"),
        # A NUL byte as such (not %00), as a program may pass it: refused, masked.
        ("postgresql://kryt:s3cret@dbhost/kr\x00yt", "kryt:***@dbhost"),
        ("postgresql+psycopg://kryt:s3cret@db\x00host/kryt", "kryt:***@db%00host"),
    ],
)
def test_no_error_about_a_url_shows_its_password(raw: str, shown: str) -> None:
    with pytest.raises(DatabaseURLError) as refused:
        normalize_url(raw)
    message = str(refused.value)
    assert "s3cret" not in message and shown in message, message
    assert "\x00" not in message


def test_an_unsupported_scheme_names_the_url_masked() -> None:
    """The error says which URL (a `-d` option or `KRYT_DATABASE_URL`) is wrong, password
    hidden."""
    with pytest.raises(DatabaseURLError) as refused:
        normalize_url("mysql://kryt:s3cret@dbhost/kryt")
    assert "'mysql://kryt:***@dbhost/kryt'" in str(refused.value)
    assert "s3cret" not in str(refused.value)


def test_a_passwd_query_parameter_is_masked() -> None:
    shown = mask_url("postgresql+psycopg://kryt@dbhost/kryt?passwd=s3cret")
    assert shown == "postgresql+psycopg://kryt@dbhost/kryt?passwd=***"


@pytest.mark.parametrize("raw", ["\x00kryt.db", "sqlite:///%00kryt.db"])
def test_a_nul_byte_at_the_start_of_a_path_is_refused(raw: str) -> None:
    """A NUL byte anywhere (the first character too) is one typed error, not a traceback
    from the file system layer ("embedded null byte")."""
    with pytest.raises(DatabaseURLError, match="NUL byte"):
        normalize_url(raw)


def test_a_byte_that_is_not_utf8_is_named_by_its_position() -> None:
    """`/tmp/x\\xffy.db`: the byte 0xff is the 7th character."""
    with pytest.raises(DatabaseURLError, match=r"\(character 7 is not\)"):
        normalize_url("/tmp/x\udcffy.db")


# ---------------------------------------------------------------------------- opening


@pytest.fixture(scope="module")
def migrated_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty Kryt database, migrated once for the module (each test copies it)."""
    path = tmp_path_factory.mktemp("template") / "kryt.db"
    open_database(f"sqlite:///{path}").close()
    assert not Path(f"{path}-wal").exists()  # closed: the file alone is the database
    return path


@pytest.fixture
def arena(migrated_file: Path, tmp_path: Path) -> Path:
    """A copy of :func:`migrated_file` of this test's own."""
    path = tmp_path / "kryt.db"
    shutil.copyfile(migrated_file, path)
    return path


def test_an_up_to_date_database_is_opened_without_a_write_lock(
    arena: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/database.md: "An up-to-date database is opened without a write lock at all":
    `kryt leaderboard` beside a tournament that is writing does not queue behind its
    write. The busy timeout is cut to 2 s so that a wait shows as a failure, not as 60 s."""
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_S", 2.0)
    writer = sqlite3.connect(arena, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process's write transaction
        started = time.monotonic()
        with open_database(f"sqlite:///{arena}", create=False) as db, db.read_session() as s:
            assert s.execute(text("SELECT count(*) FROM tournaments")).scalar() == 0
        assert time.monotonic() - started < 1.9  # it did not wait for the lock
    finally:
        writer.execute("ROLLBACK")
        writer.close()


class _Refused(Exception):
    """What the fake migration raises."""


@pytest.mark.parametrize("how", ["upgrade not allowed", "interrupted"])
def test_a_new_file_whose_opening_fails_is_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Left there (0 bytes), the next reading command would say "an empty file, not a
    database; was it truncated?" instead of "no database at ...". Ctrl-C while a new
    database is set up counts too (KeyboardInterrupt is no Exception)."""
    path = tmp_path / "new.db"
    if how == "interrupted":

        def interrupted(*args: object, **kwargs: object) -> str:
            raise KeyboardInterrupt

        monkeypatch.setattr(migrate_module, "upgrade_engine", interrupted)
        with pytest.raises(KeyboardInterrupt):
            open_database(f"sqlite:///{path}")
    else:
        with pytest.raises(SchemaOutdatedError):
            open_database(f"sqlite:///{path}", upgrade=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(DatabaseMissingError, match="no database at"):
        open_database(f"sqlite:///{path}", create=False)


def test_a_file_with_something_in_it_is_never_removed_after_a_failed_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file this process found missing may be filled meanwhile by another (two commands
    starting on a fresh path): when this one's opening then fails, the file is left alone."""
    path = tmp_path / "new.db"

    def filled_by_another_then_failing(*args: object, **kwargs: object) -> str:
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE precious (x TEXT)")
            other.execute("INSERT INTO precious VALUES ('keep me')")
        other.close()
        raise _Refused

    monkeypatch.setattr(migrate_module, "upgrade_engine", filled_by_another_then_failing)
    with pytest.raises(_Refused):
        open_database(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT x FROM precious").fetchall() == [("keep me",)]
    conn.close()


def _tournaments(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("SELECT count(*) FROM tournaments").fetchone()
    conn.close()
    return int(count)


def test_discarding_a_new_database_keeps_a_tournament_stored_in_it(tmp_path: Path) -> None:
    """A command that created the file and was refused removes it only while it holds no
    tournament and no game: another command on the same fresh path may have stored its
    tournament meanwhile (its games not yet played)."""
    path = tmp_path / "new.db"
    fresh = open_database(path)
    assert fresh.created
    with open_database(path) as other:
        build_world(other, games=2)  # a tournament, no game yet
    assert fresh.discard_if_unused() is False
    assert _tournaments(path) == 1


def test_discarding_never_removes_a_file_put_in_its_place(
    migrated_file: Path, tmp_path: Path
) -> None:
    """The created file was replaced (an arena restored from a backup at that path): the
    pool still reads the old, unused file, but what is at the path now is not removed."""
    arena_copy = tmp_path / "backup.db"
    shutil.copyfile(migrated_file, arena_copy)
    with open_database(arena_copy) as restored:
        build_world(restored, games=2)
    path = tmp_path / "new.db"
    fresh = open_database(path)
    assert fresh.created
    with fresh.read_session() as s:  # a pooled connection now holds the created file
        s.execute(text("SELECT count(*) FROM tournaments")).scalar()
    arena_copy.replace(path)
    assert fresh.discard_if_unused() is False
    assert _tournaments(path) == 1


def test_a_read_session_commits_nothing(arena: Path) -> None:
    """docs/database.md: a read session is read-only, nothing is committed; what a bug
    writes in one is rolled back."""
    with open_database(f"sqlite:///{arena}") as db:
        with db.read_session() as s:
            s.execute(text("INSERT INTO bots (name, created_at) VALUES ('ghost', '2024-01-01')"))
        with db.read_session() as s:
            assert s.execute(text("SELECT count(*) FROM bots")).scalar() == 0


def test_one_database_serves_several_threads(arena: Path) -> None:
    """Series run in threads of one process: a pooled SQLite connection made in one thread is
    used by the next thread that takes it."""
    with open_database(f"sqlite:///{arena}") as db:
        with db.session() as s:
            s.execute(text("INSERT INTO bots (name, created_at) VALUES ('main', '2024-01-01')"))
        seen: list[object] = []

        def other_thread() -> None:
            try:
                with db.read_session() as s:
                    seen.append(s.execute(text("SELECT name FROM bots")).scalar())
            except Exception as exc:  # shown by the assertion below
                seen.append(exc)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(timeout=60)
        assert seen == ["main"]


def test_a_read_only_open_reads_the_named_file_and_changes_nothing(
    migrated_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file this process cannot write is opened with SQLite's read-only URI: the file named
    (a folder with `#` or `%` in its name too, which a URI would read as a fragment or an
    escape), from any thread, and nothing about it changes: not its journal mode, and a
    write transaction is refused before it starts. Permissions do not hold for root, so
    the reason to open it read-only is given here as the file-system check would."""
    folder = tmp_path / "cup #1 100%41"
    folder.mkdir()
    path = folder / "kryt.db"
    shutil.copyfile(migrated_file, path)
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.execute("INSERT INTO bots (name, created_at) VALUES ('kept', '2024-01-01')")
        conn.execute("PRAGMA journal_mode=DELETE")  # as a copy of an arena may come
    conn.close()
    before = path.read_bytes()
    monkeypatch.setattr(engine_module, "_read_only_reason", lambda _: "not writable (test)")
    with open_database(path, create=False) as db:  # a plain path: `%41` is no escape
        assert db.read_only == "not writable (test)"
        with db.read_session() as s:
            assert s.execute(text("SELECT name FROM bots")).scalar() == "kept"
        seen: list[object] = []

        def other_thread() -> None:
            try:
                with db.read_session() as s:
                    seen.append(s.execute(text("SELECT count(*) FROM bots")).scalar())
            except Exception as exc:  # shown by the assertion below
                seen.append(exc)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(timeout=60)
        assert seen == [1]
        with pytest.raises(DatabaseUnavailableError, match="read-only here"), db.session() as s:
            s.execute(text("DELETE FROM bots"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["kryt.db"]


_READ_AS_NOBODY = """
import sys
from sqlalchemy import text
from arena.db import open_database
with open_database(sys.argv[1], create=False) as db, db.read_session() as s:
    print(db.read_only, "|", s.execute(text("SELECT count(*) FROM bots")).scalar())
"""


def test_a_writable_file_in_a_read_only_folder_is_opened_read_only(migrated_file: Path) -> None:
    """docs/database.md: a file whose folder this process cannot write is opened read-only
    (SQLite could not create its ``-wal`` and ``-shm`` files there), even when the file itself
    is writable. Run as the user nobody: permissions do not hold for root."""
    require(shutil.which("setpriv") is not None, "setpriv", "util-linux's setpriv")
    folder = Path(tempfile.mkdtemp(prefix="kryt-ro-folder-", dir="/tmp"))
    try:
        path = folder / "kryt.db"
        shutil.copyfile(migrated_file, path)
        path.chmod(0o666)
        folder.chmod(0o555)
        done = subprocess.run(
            [*_NOBODY, sys.executable, "-c", _READ_AS_NOBODY, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(_ROOT), "HOME": "/tmp"},
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"its folder {folder} is not writable by this process | 0"
        assert sorted(p.name for p in folder.iterdir()) == ["kryt.db"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_a_read_session_on_a_read_only_file_reads_one_snapshot(
    arena: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/database.md: a read session sees one state of the database from its first query
    to its end; on a file opened read-only too, while its owner's process writes it."""
    monkeypatch.setattr(engine_module, "_read_only_reason", lambda _: "not writable (test)")
    with open_database(arena, create=False) as db, db.read_session() as s:
        assert db.read_only is not None
        assert s.execute(text("SELECT count(*) FROM bots")).scalar() == 0
        with sqlite3.connect(arena, isolation_level=None) as writer:
            writer.execute("INSERT INTO bots (name, created_at) VALUES ('new', '2024-01-01')")
        writer.close()
        assert s.execute(text("SELECT count(*) FROM bots")).scalar() == 0


@pytest.mark.postgres
def test_a_pooled_postgres_connection_the_server_dropped_is_replaced(postgres_url: str) -> None:
    """After a PostgreSQL restart (or pg_terminate_backend) the pooled connections are dead:
    the next read gets a fresh one (pool pre-ping) instead of failing once per pooled
    connection (`kryt leaderboard serve` answering 503)."""
    with open_database(postgres_url) as db:
        with db.read_session() as s:
            pid = s.execute(text("SELECT pg_backend_pid()")).scalar()
        killer = create_engine(postgres_url, poolclass=NullPool)
        try:
            with killer.connect() as conn:
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        finally:
            killer.dispose()
        with db.read_session() as s:
            assert s.execute(text("SELECT pg_backend_pid()")).scalar() != pid


@pytest.fixture
def silent_server() -> Iterator[int]:
    """The port of a TCP listener that accepts connections and never says a word."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


def test_a_server_that_does_not_answer_fails_within_the_connect_timeout(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a connect timeout libpq waits for ever (a firewall that drops packets, a
    hung server): `kryt` would hang. The timeout is cut to 1 s for the test."""
    monkeypatch.setattr(engine_module, "POSTGRES_CONNECT_TIMEOUT_S", 1)
    url = f"postgresql+psycopg://kryt:s3cret@127.0.0.1:{silent_server}/kryt"
    outcome: list[BaseException] = []

    def opening() -> None:
        try:
            open_database(url).close()
        except BaseException as exc:  # checked below
            outcome.append(exc)

    thread = threading.Thread(target=opening, daemon=True)
    thread.start()
    thread.join(timeout=45)
    assert not thread.is_alive(), "open_database still waiting for a silent server"
    assert len(outcome) == 1 and isinstance(outcome[0], DatabaseUnavailableError), outcome
    assert "s3cret" not in str(outcome[0])


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_is_one_line() -> None:
    """libpq breaks "Connection refused" and its hint over two lines: `kryt` prints errors as
    one `error:` line."""
    with pytest.raises(DatabaseUnavailableError, match="cannot connect") as refused:
        open_database(f"postgresql+psycopg://kryt:s3cret@127.0.0.1:{_closed_port()}/kryt")
    message = str(refused.value)
    assert "\n" not in message and "\t" not in message, message
    assert "s3cret" not in message
