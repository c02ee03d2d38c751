"""A bot the process backend would refuse (not bundled, no --unsafe) is refused before a
tournament is stored or a game played; with --unsafe the same run plays."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from tests.cli.helpers import kryt

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def mybot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The random example under another name: the same code, but not a bundled bot."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "mybot"
    shutil.copytree(ROOT / "sdk" / "examples" / "random", folder)
    toml = folder / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "random"', 'name = "mybot"'))
    return folder


def _count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(f"select count(*) from {table}").fetchone()[0])


def test_an_untrusted_bot_is_refused_before_anything_is_played(
    capsys: pytest.CaptureFixture[str], mybot: Path, tmp_path: Path
) -> None:
    args = ("tournament", "run", "builtin:random", "builtin:greedy", str(mybot), "-n", "1")
    code, out, err = kryt(capsys, *args, "--backend", "process")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "refusing untrusted bot(s) 'mybot@1.0.0'" in err and "--unsafe" in err
    assert "forfeits" not in out + err  # no game was started, so no bot was blamed
    db = tmp_path / "kryt.db"
    assert not db.exists()  # refused before a tournament was stored: no database left behind
    # Allowed, the same run plays every game.
    code, out, err = kryt(capsys, *args, "--backend", "process", "--unsafe")
    assert code == ExitCode.OK, (out, err)
    assert _count(db, "tournaments") == 1 and _count(db, "games") == 3
