"""A database that is not ours (another application's, even one whose Alembic revision is
spelled like ours) is refused before anything is written to it: not a migration, not
SQLite's journal mode. ``python -m arena.db.migrate current`` says in one line (and a
non-zero exit) when a database is newer than the code or not ours."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from arena.db import ForeignDatabaseError, SchemaTooNewError, open_database
from arena.db.migrate import head_revision, known_revisions, newest_revision_file
from kryt.cli import main
from kryt.errors import ExitCode
from tests.db.helpers import table_names

ROOT = Path(__file__).resolve().parents[2]


def _sqlite_path(url: str) -> Path | None:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite") else None


def _journal_mode(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])


def _another_application(url: str, revision: str) -> None:
    """Another application's Alembic-managed database at ``revision``."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            conn.execute(text("INSERT INTO alembic_version VALUES (:r)"), {"r": revision})
            conn.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT)"))
            conn.execute(text("INSERT INTO invoices VALUES (1, '12.50')"))
    finally:
        engine.dispose()


def test_the_revision_file_names_are_alembics_revisions() -> None:
    from alembic.script import ScriptDirectory

    from arena.db.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    assert known_revisions() == {r.revision for r in script.walk_revisions()}


@pytest.mark.parametrize(
    "revision",
    [
        pytest.param(newest_revision_file(), id="our-head"),  # took the fast path as ours
        pytest.param("0005", id="one-of-ours"),  # was migrated (and failed half-way)
        pytest.param("0099", id="unknown"),
    ],
)
def test_another_applications_alembic_database_is_refused_untouched(
    database_url: str, revision: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _another_application(database_url, revision)
    path = _sqlite_path(database_url)
    before = path.read_bytes() if path is not None else b""
    with pytest.raises(ForeignDatabaseError, match=f"schema revision '{revision}' of another"):
        open_database(database_url)
    # Every command refuses it the same way: one line, exit 3.
    code = main(["leaderboard", "--database", database_url])
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "invoices" in err, err
    if path is not None:
        assert _journal_mode(path) == "delete"  # was switched to WAL before the refusal
        assert path.read_bytes() == before
        assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert table_names(database_url) == ["alembic_version", "invoices"]


def test_a_kryt_database_with_tables_of_anothers_beside_its_own_opens(
    database_url: str,
) -> None:
    """A shared PostgreSQL database, or an analyst's table in the file: Kryt's own tables
    are what it checks; the others are left alone."""
    open_database(database_url).close()
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT)"))
    engine.dispose()
    tables = table_names(database_url)
    open_database(database_url).close()
    assert table_names(database_url) == tables


def test_a_newer_kryt_database_is_still_named_newer(database_url: str) -> None:
    """A newer Kryt may add tables: a revision we do not know beside our tables is a newer
    Kryt Arena's database, not another application's."""
    open_database(database_url).close()
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        conn.execute(text("CREATE TABLE added_later (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    with pytest.raises(SchemaTooNewError, match=r"'9999', newer than .*upgrade kryt-arena"):
        open_database(database_url)


def _migrate_current(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.db.migrate", "current", url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_migrate_current_on_a_newer_database_fails_in_one_line(database_url: str) -> None:
    """It printed ``database: 9999; code head: 0011`` and exited 0."""
    open_database(database_url).close()
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    done = _migrate_current(database_url)
    assert done.returncode != 0, done
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "'9999'" in lines[0] and f"'{head_revision()}'" in lines[0], lines[0]
    assert "newer" in lines[0] and "upgrade kryt-arena" in lines[0], lines[0]
    assert table_names(database_url)  # untouched


def test_migrate_current_on_another_applications_alembic_database_fails(
    database_url: str,
) -> None:
    _another_application(database_url, newest_revision_file())
    done = _migrate_current(database_url)
    assert done.returncode != 0, done
    assert len(done.stderr.splitlines()) == 1 and "of another application" in done.stderr
    assert table_names(database_url) == ["alembic_version", "invoices"]
