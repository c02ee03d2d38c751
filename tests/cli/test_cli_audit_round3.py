"""Defects of the third CLI audit: a damaged SQLite file, a password in a URL's query, a
``--store`` that cannot be made, and one bot given two time controls. Each is one ``error:``
line with the documented exit code, and nothing is written."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from arena.tournament.config import ConfigError, TournamentConfig
from kryt.errors import ExitCode
from tests.cli.helpers import kryt

RUN = ("tournament", "run", "builtin:random", "builtin:greedy", "--games", "2")
RUN_FLAGS = ("--backend", "process")


def tournaments(db: Path) -> list[tuple[object, ...]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("select id, status, config from tournaments").fetchall()
        except sqlite3.OperationalError:
            return []


def one_error(err: str) -> str:
    """The single ``error:`` line of ``err`` (no traceback)."""
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    return tmp_path


# --- a damaged database ------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_damaged_database_is_one_line_exit_3_and_is_not_written(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    code, out, err = kryt(capsys, *RUN, *RUN_FLAGS)
    assert code == ExitCode.OK, (out, err)
    code, out, err = kryt(capsys, "games", "export", "games.kgn")
    assert code == ExitCode.OK, (out, err)
    db = workdir / "kryt.db"
    with sqlite3.connect(db) as conn:  # everything in the main file, nothing in the WAL
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
    assert pages > 4
    with open(db, "r+b") as f:  # one page mid-file overwritten
        f.seek(page_size * 3)
        f.write(b"\xde\xad" * (page_size // 2))
    before = _digest(db)
    for args in (
        ("games", "list"),
        ("leaderboard",),
        ("games", "import", "games.kgn"),
        (*RUN, *RUN_FLAGS),
    ):
        code, out, err = kryt(capsys, *args)
        assert code == ExitCode.UNAVAILABLE, (args, out, err)
        line = one_error(err)
        assert "damaged" in line and "malformed" in line, (args, err)
        assert "hint:" in err and "damaged" in err.split("hint:", 1)[1], (args, err)
        assert _digest(db) == before, args


# --- a password in the query string --------------------------------------------------------


def test_a_password_in_the_query_string_is_masked(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    for url in (
        # nothing listens on port 1: the connection is refused at once
        "postgresql://kryt@127.0.0.1:1/kryt?password=s3cret-query&sslpassword=k3y-secret",
        # a port that cannot be read: the URL is shown as given, masked
        "postgresql://kryt@127.0.0.1:54x/kryt?sslmode=require&password=s3cret-query",
    ):
        code, out, err = kryt(capsys, "tournament", "status", "-d", url)
        assert code in (ExitCode.BAD_INPUT, ExitCode.UNAVAILABLE), (out, err)
        line = one_error(err)
        assert "s3cret" not in err + out and "k3y" not in err + out, err
        assert "password=***" in line, line


# --- a --store that cannot be created ------------------------------------------------------


@pytest.mark.parametrize(
    ("store", "blocker"), [("afile", "afile"), ("afile/sub", "afile"), ("/proc/kryt-x", "/proc")]
)
def test_a_store_that_cannot_be_created_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], workdir: Path, store: str, blocker: str
) -> None:
    (workdir / "afile").write_text("not a folder\n")
    code, out, err = kryt(capsys, *RUN, *RUN_FLAGS, "--store", store)
    assert code == ExitCode.BAD_INPUT, (out, err)
    line = one_error(err)
    assert repr(store) in line and repr(blocker) in line and "--store" in line, line
    assert tournaments(workdir / "kryt.db") == []
    assert (workdir / "afile").read_text() == "not a folder\n"


# --- one bot, two time controls ------------------------------------------------------------


def test_time_naming_one_bot_by_name_and_version_is_refused(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    code, out, err = kryt(
        capsys, *RUN, *RUN_FLAGS, "--time", "random=1+10", "--time", "random@1.0.0=2+10"
    )
    assert code == ExitCode.BAD_INPUT, (out, err)
    line = one_error(err)
    assert "random@1.0.0" in line and "twice" in line, line
    assert tournaments(workdir / "kryt.db") == []


def test_a_bot_time_table_naming_one_bot_twice_is_refused(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    config = workdir / "cup.toml"
    config.write_text(
        'bots = ["builtin:random", "builtin:greedy"]\ngames_per_pair = 2\n'
        '[bot_time]\nrandom = "1+10"\n"random@1.0.0" = "2+10"\n'
    )
    code, out, err = kryt(capsys, "tournament", "run", "--config", str(config), *RUN_FLAGS)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "random@1.0.0" in one_error(err)
    assert tournaments(workdir / "kryt.db") == []


def test_set_refuses_a_bot_time_naming_one_bot_twice(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    code, out, err = kryt(capsys, *RUN, *RUN_FLAGS)
    assert code == ExitCode.OK, (out, err)
    db = workdir / "kryt.db"
    with sqlite3.connect(db) as conn:
        conn.execute("update tournaments set status = 'pending' where id = 1")
    ((_, _, stored),) = tournaments(db)
    code, out, err = kryt(
        capsys, "tournament", "set", "1", 'bot_time={random="1+10", "random@1.0.0"="2+10"}'
    )
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "random@1.0.0" in one_error(err)
    ((_, _, after),) = tournaments(db)
    assert json.loads(str(after)) == json.loads(str(stored))
    # One entry per bot is still welcome.
    code, out, err = kryt(capsys, "tournament", "set", "1", 'bot_time={"random@1.0.0"="2+10"}')
    assert code == ExitCode.OK, (out, err)


def test_play_refuses_two_time_controls_for_one_bot(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    code, out, err = kryt(
        capsys, "play", "builtin:random", "builtin:greedy", "-n", "2", *RUN_FLAGS,
        "--time", "random=1+10", "--time", "1=2+10",
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, (out, err)
    line = one_error(err)
    assert "twice" in line and "'random'" in line and "'1'" in line, line


def test_a_name_entry_beside_another_entered_versions_pinned_one_is_kept() -> None:
    """``name`` sets every entered version of the bot but the pinned one: not a duplicate."""
    config = TournamentConfig(
        bots=("a", "b"), bot_time=(("random", "1+10"), ("random@1.0.0", "2+10"))
    )
    config.check_bot_time([("random", "1.0.0"), ("random", "2.0.0")])
    with pytest.raises(ConfigError, match="twice"):
        config.check_bot_time([("random", "1.0.0"), ("greedy", "1.0.0")])


def test_mask_url_hides_credentials_given_as_query_parameters() -> None:
    from arena.db import mask_url

    assert mask_url("postgresql://kryt@h:5432/kryt?password=s3cret&sslmode=require") == (
        "postgresql://kryt@h:5432/kryt?password=***&sslmode=require"
    )
    masked = mask_url("postgresql+psycopg://u:pw@h/db?sslpassword=k3y&Password=x")
    assert masked == "postgresql+psycopg://u:***@h/db?Password=***&sslpassword=***", masked
    unparseable = mask_url("postgresql://u:pw@h:5x/db?password=s3cret&application_name=a")
    assert "s3cret" not in unparseable and "application_name=a" in unparseable, unparseable
    assert mask_url("sqlite:////tmp/kryt.db") == "sqlite:////tmp/kryt.db"
