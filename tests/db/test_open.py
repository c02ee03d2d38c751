"""Opening databases: migrations from empty, settings, and every way opening can fail."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from arena.db import (
    Database,
    DatabaseMissingError,
    DatabaseUnavailableError,
    ForeignDatabaseError,
    SchemaOutdatedError,
    SchemaTooNewError,
    list_bots,
    open_database,
    submit,
)
from arena.db.migrate import current_revision, head_revision
from arena.db.models import metadata
from tests.db.helpers import new_submission

OUR_TABLES = set(metadata.tables)


def test_migrates_empty_database_to_head(database_url: str) -> None:
    with open_database(database_url) as db, db.engine.connect() as conn:
        assert current_revision(conn) == head_revision()
        tables = set(inspect(conn).get_table_names())
    assert tables >= OUR_TABLES and "alembic_version" in tables


def test_migrations_match_the_models(db: Database) -> None:
    # If this fails, a model changed without a migration: see docs/database.md.
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_reopening_keeps_data(database_url: str) -> None:

    with open_database(database_url) as db, db.session() as s:
        submit(new_submission("keeper"), session=s)
    with open_database(database_url) as db, db.read_session() as s:
        assert [b.name for b in list_bots(session=s)] == ["keeper"]


def test_sqlite_settings(tmp_path: Path) -> None:
    with open_database(tmp_path / "k.db") as db, db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        busy_timeout_ms = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
        assert busy_timeout_ms is not None and busy_timeout_ms >= 10_000


def test_default_is_kryt_db_in_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    with open_database() as db:
        assert db.backend == "sqlite"
    assert (tmp_path / "kryt.db").is_file()


def test_environment_variable_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KRYT_DATABASE_URL", f"sqlite:///{tmp_path}/from-env.db")
    with open_database():
        pass
    assert (tmp_path / "from-env.db").is_file() and not (tmp_path / "kryt.db").exists()


def test_schema_newer_than_code_is_refused_and_untouched(database_url: str) -> None:
    with open_database(database_url) as db, db.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(SchemaTooNewError, match=r"'9999'.*upgrade kryt-arena"):
        open_database(database_url)
    engine = create_engine(database_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "9999"
        assert set(inspect(conn).get_table_names()) >= OUR_TABLES
    engine.dispose()


def test_foreign_tables_are_not_touched(database_url: str) -> None:
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE games (id INTEGER PRIMARY KEY, precious TEXT)"))
        conn.execute(text("INSERT INTO games VALUES (1, 'keep me')"))
    with pytest.raises(ForeignDatabaseError, match="games"):
        open_database(database_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT precious FROM games")).scalar() == "keep me"
        assert "alembic_version" not in inspect(conn).get_table_names()
    engine.dispose()


def test_another_applications_database_is_refused_and_left_as_it_was(
    database_url: str, tmp_path: Path
) -> None:
    """No table clashes with ours, but the database is somebody else's: we add nothing to it,
    and an SQLite file keeps its journal mode (WAL is set only on a file that is ours)."""
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT)"))
    engine.dispose()
    path = Path(database_url.removeprefix("sqlite:///")) if "sqlite" in database_url else None
    before = path.read_bytes() if path is not None else b""
    with pytest.raises(ForeignDatabaseError, match="tables of its own: invoices"):
        open_database(database_url)
    if path is not None:
        assert path.read_bytes() == before  # not even the header's journal mode changed
    engine = create_engine(database_url)
    with engine.connect() as conn:
        assert inspect(conn).get_table_names() == ["invoices"]
    engine.dispose()


def test_a_new_sqlite_database_is_in_wal_mode(tmp_path: Path) -> None:
    database = open_database(tmp_path / "k.db")
    with database.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    database.close()


def test_no_upgrade_allowed_on_outdated_schema(database_url: str) -> None:
    with pytest.raises(SchemaOutdatedError, match=r"python -m arena\.db\.migrate upgrade"):
        open_database(database_url, upgrade=False)


def test_missing_sqlite_file_without_create(tmp_path: Path) -> None:
    with pytest.raises(DatabaseMissingError, match="no database at"):
        open_database(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUnavailableError, match="does not exist"):
        open_database(tmp_path / "no" / "such" / "dir" / "k.db")


def test_a_missing_directory_without_create_is_no_database(tmp_path: Path) -> None:
    """A command that only reads (create=False) would not create the folder either: it says
    the database is not there, not that it cannot create it."""
    for path in (tmp_path / "no" / "dir" / "k.db", tmp_path / "file.txt" / "k.db"):
        (tmp_path / "file.txt").write_text("x")
        with pytest.raises(DatabaseMissingError, match=f"no database at {path}"):
            open_database(path, create=False)
    assert not (tmp_path / "no").exists()


def test_a_file_where_the_folder_should_be_is_named(tmp_path: Path) -> None:
    (tmp_path / "text.db").write_text("a file")
    with pytest.raises(DatabaseUnavailableError, match=r"text\.db is a file, not a directory"):
        open_database(tmp_path / "text.db" / "inner" / "k.db")
    assert (tmp_path / "text.db").read_text() == "a file"


def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(DatabaseUnavailableError, match="not a SQLite database"):
        open_database(path)
    assert path.read_bytes().startswith(b"these are my notes")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_postgres_server() -> None:
    url = f"postgresql+psycopg://kryt:pw@127.0.0.1:{_closed_port()}/kryt"
    with pytest.raises(DatabaseUnavailableError, match="cannot connect") as info:
        open_database(url)
    assert "pw@" not in str(info.value) and "KRYT_DATABASE_URL" in str(info.value)


@pytest.mark.postgres
def test_missing_postgres_database(postgres_url: str) -> None:
    missing = make_url(postgres_url).set(database="kryt_no_such_database")
    with pytest.raises(DatabaseMissingError, match="does not exist"):
        open_database(missing.render_as_string(hide_password=False))


def test_migrate_module_reports_revision(database_url: str) -> None:
    open_database(database_url).close()
    out = subprocess.run(
        [sys.executable, "-m", "arena.db.migrate", "current", database_url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"database: {head_revision()}" in out.stdout
    assert "Warning" not in out.stderr, out.stderr  # runpy: not imported twice


@pytest.mark.postgres
def test_connection_lost_mid_transaction(postgres_url: str) -> None:

    with open_database(postgres_url) as db:
        killer = create_engine(postgres_url)
        with pytest.raises(DatabaseUnavailableError, match="failed"), db.session() as s:
            pid = s.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar()
            with killer.connect() as conn:
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            submit(new_submission("lost"), session=s)
        killer.dispose()
        with db.read_session() as s:  # the pool recovers; nothing half-written
            assert list_bots(session=s) == []


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_writes_to_a_sqlite_file_deleted_or_replaced_under_it_are_refused(
    tmp_path: Path, how: str
) -> None:
    """A write went on into the deleted file (its inode, open in the pool): acknowledged,
    and lost when the process stopped. Now it is refused, naming the file; the file that
    holds the arena is left as it is."""
    path = tmp_path / "arena.db"
    with open_database(f"sqlite:///{path}") as db:
        with db.session() as session:
            submit(new_submission("kept"), session=session)
        moved = tmp_path / "moved.db"
        path.rename(moved)
        for end in ("-wal", "-shm"):
            Path(f"{path}{end}").rename(f"{moved}{end}")
        if how == "replaced":  # an empty SQLite file where the arena was
            sqlite3.connect(path).close()
        refusal = pytest.raises(DatabaseUnavailableError, match="writes are refused")
        with refusal as refused, db.session() as session:
            submit(new_submission("lost"), session=session)
        assert str(path) in str(refused.value)
        expected = "no longer the file" if how == "replaced" else "is gone"
        assert expected in str(refused.value)
    with open_database(f"sqlite:///{moved}") as db, db.read_session() as session:
        assert [bot.name for bot in list_bots(session=session)] == ["kept"]


def test_an_empty_file_is_not_opened_as_a_new_database_by_a_reader(tmp_path: Path) -> None:
    """`kryt leaderboard` on a 0-byte kryt.db (a truncated copy) wrote the schema into it
    and showed an empty arena; a missing file was refused."""
    path = tmp_path / "kryt.db"
    path.touch()
    with pytest.raises(DatabaseMissingError, match="empty file") as refused:
        open_database(f"sqlite:///{path}", create=False)
    assert str(path) in str(refused.value)
    assert path.stat().st_size == 0  # untouched
    with open_database(f"sqlite:///{path}") as db, db.read_session() as session:
        assert list_bots(session=session) == []  # a writer still makes it a database


def test_a_table_dropped_by_hand_is_named_as_damage(tmp_path: Path) -> None:
    """It said 'check that it is reachable and has free space'."""
    path = tmp_path / "arena.db"
    open_database(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute("drop table board_pairs")
    with (
        pytest.raises(DatabaseUnavailableError, match="schema is damaged") as refused,
        open_database(f"sqlite:///{path}") as db,
        db.session() as session,
    ):
        session.execute(text("select count(*) from board_pairs"))
    assert "free space" not in str(refused.value)
