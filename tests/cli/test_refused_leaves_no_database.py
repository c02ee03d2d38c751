"""A command refused before it stores anything leaves no database it created behind (a typo
in a bot name must not turn a fresh path into an empty arena), and never removes one that
was there before or that holds a tournament."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from arena.db import open_database
from tests.cli.helpers import finished_games_db, kryt


def _beside(path: Path) -> list[str]:
    """The database file and the files SQLite keeps beside it, those that exist."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))


def _tournaments(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        (count,) = conn.execute("select count(*) from tournaments").fetchone()
    conn.close()
    return int(count)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default store (.kryt) goes here, not in the checkout


def test_a_misspelt_bot_name_leaves_no_new_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "new.db"
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "nosuchbot", "--backend", "process",
        "-d", str(target),
    )  # fmt: skip
    assert code == 2, err
    assert "'nosuchbot' is neither a bot folder/archive nor a stored bot name" in err
    assert _beside(target) == []


def test_an_invalid_bot_folder_leaves_no_new_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "notabot").mkdir()
    target = tmp_path / "new.db"
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", str(tmp_path / "notabot"),
        "--backend", "process", "-d", str(target),
    )  # fmt: skip
    assert code == 2, err
    assert "no bot.toml" in err
    assert _beside(target) == []


def test_a_refused_run_keeps_a_database_that_was_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = finished_games_db(tmp_path)
    before = _tournaments(target)
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "nosuchbot", "--backend", "process",
        "-d", str(target),
    )  # fmt: skip
    assert code == 2, err
    assert target.exists() and _tournaments(target) == before == 1


def test_an_empty_database_that_was_there_is_kept_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A database made earlier (by another command) is the user's, however empty."""
    target = tmp_path / "made.db"
    open_database(f"sqlite:///{target}").close()
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "nosuchbot", "--backend", "process",
        "-d", str(target),
    )  # fmt: skip
    assert code == 2, err
    assert target.exists() and _tournaments(target) == 0


def test_importing_a_file_with_no_games_creates_no_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.kgn"
    empty.write_text("", encoding="utf-8")
    for source in (empty, Path(os.devnull)):
        target = tmp_path / "imported.db"
        code, out, err = kryt(capsys, "games", "import", str(source), "-d", str(target))
        assert code == 0, err
        assert f"{source} holds no games: nothing imported, no database created" in out
        assert _beside(target) == []


def test_importing_no_games_into_a_database_leaves_it_as_it_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = finished_games_db(tmp_path)
    code, out, err = kryt(capsys, "games", "import", os.devnull, "-d", str(target))
    assert code == 0, err
    assert "imported 0 new games of 0 read" in out
    assert target.exists() and _tournaments(target) == 1


def test_discard_removes_only_a_database_it_created_and_left_unused(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    fresh = open_database(f"sqlite:///{path}")
    assert fresh.created and path.exists()
    assert fresh.discard_if_unused() is True
    assert _beside(path) == []
    # Opened again (it is there now): not created by this opening, so never removed.
    open_database(f"sqlite:///{path}").close()
    again = open_database(f"sqlite:///{path}")
    assert not again.created
    assert again.discard_if_unused() is False and path.exists()
