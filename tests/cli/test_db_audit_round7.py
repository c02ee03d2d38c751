"""Defects of the database audit (seventh round) reached through the CLI: a submitter name
that is not UTF-8 or holds control characters, a quoted ``tournament set`` value that is not
TOML, and ``--db`` known to ``kryt leaderboard`` only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from tests.cli.helpers import kryt


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    return tmp_path


def _submissions(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from submissions").fetchone()[0])


@pytest.mark.parametrize(
    ("by", "said"),
    [
        ("caf\udce9", "not UTF-8 text"),  # the byte 0xe9 as a shell passes it to Python
        ("\x1b[31mred", "printable"),
        ("a" * 201, "printable"),
        ("  ", "printable"),
    ],
)
def test_a_submitter_that_cannot_be_stored_is_one_line(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, by: str, said: str
) -> None:
    """A name that is not UTF-8 crashed the store (UnicodeEncodeError, 80 lines) and an ESC
    was stored as given."""
    code, _, err = kryt(capsys, "bot", "new", "mybot")
    assert code == 0, err
    code, _, err = kryt(capsys, "submit", "mybot", "--by", by)
    assert code == ExitCode.BAD_INPUT and "Traceback" not in err
    assert err.startswith(("error: --by: ", "error: the value of --by ")) and said in err, err
    assert "\x1b" not in err
    assert _submissions(in_tmp / "kryt.db") == 0


def test_a_login_name_that_is_not_utf8_asks_for_by(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(variable, "caf\udce9")
    code, _, err = kryt(capsys, "bot", "new", "mybot")
    assert code == 0, err
    code, _, err = kryt(capsys, "submit", "mybot")
    assert code == ExitCode.BAD_INPUT and "give --by" in err and "Traceback" not in err
    code, out, err = kryt(capsys, "submit", "mybot", "--by", "café")
    assert code == 0 and "stored as submission 1" in out, err


def test_a_quoted_value_of_tournament_set_must_be_toml(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """``name="\\uD800"`` (not TOML) was stored as text, quotes and all."""
    from arena.tournament.config import ConfigError, parse_assignment

    assert parse_assignment("name=spring") == ("name", "spring")
    assert parse_assignment('name="spring cup"') == ("name", "spring cup")
    for raw in ('"\\uD800"', '"unclosed', "[1, 2", "{a = }"):
        with pytest.raises(ConfigError, match="not a valid TOML value"):
            parse_assignment(f"name={raw}")


def test_every_command_takes_db_as_the_database(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """docs/database.md writes ``--db``; only ``kryt leaderboard`` took it."""
    where = str(in_tmp / "other.db")
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "-n", "1",
        "--backend", "process", "--db", where,
    )  # fmt: skip
    assert code == 0, err
    assert (in_tmp / "other.db").exists() and not (in_tmp / "kryt.db").exists()
    for command in (("games", "list"), ("tournament", "status"), ("replay", "1")):
        code, _, err = kryt(capsys, *command, "--db", where)
        assert code == 0, (command, err)
