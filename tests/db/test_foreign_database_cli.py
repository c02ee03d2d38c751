"""Another application's database is refused by every entry point in the same terms as a file
that is not a database at all: one line, exit 3 (a service that cannot be used), untouched;
``python -m arena.db.migrate current`` does not call it empty."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from arena.db import migrate
from kryt.cli import main
from kryt.errors import ExitCode
from tests.db.helpers import table_names


def _foreign(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT)"))
            conn.execute(text("INSERT INTO invoices VALUES (1, '12.50')"))
    finally:
        engine.dispose()


def test_a_foreign_database_is_exit_3_in_one_line(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _foreign(database_url)
    code = main(["leaderboard", "--db", database_url])
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err
    assert err.startswith("error: ") and "invoices" in err and "Traceback" not in err
    assert "--database / KRYT_DATABASE_URL" in err
    assert table_names(database_url) == ["invoices"]


def test_migrate_current_names_a_foreign_database(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _foreign(database_url)
    assert migrate.main(["current", database_url]) == 1
    out = capsys.readouterr().out
    assert "not a Kryt Arena database" in out and "invoices" in out, out
    assert "(empty)" not in out
    assert table_names(database_url) == ["invoices"]


def test_migrate_current_still_calls_an_empty_database_empty(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert table_names(database_url) == []  # (made, for a SQLite file)
    assert migrate.main(["current", database_url]) == 0
    assert "database: (empty)" in capsys.readouterr().out
