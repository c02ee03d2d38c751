"""Bad settings are refused before anything is stored; ``cancel`` and ``set`` manage a
tournament that has not finished (in-process ``kryt``, SQLite in a scratch folder)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
BOTS = [str(EXAMPLES / "random"), str(EXAMPLES / "greedy")]


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def tournaments(db: Path) -> list[tuple[object, ...]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("select id, status, name from tournaments").fetchall()
        except sqlite3.OperationalError:
            return []


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / "kryt.db"


@pytest.mark.parametrize(
    ("flags", "toml", "message"),
    [
        (["--memory-mb", "0"], "", "memory_mb"),
        (["--memory-mb", "-1"], "", "memory_mb"),
        (["--pids", "2"], "", "pids"),
        (["--move-seconds", "1e300"], "", "move_seconds"),
        (["--games", "3000000000"], "", "games per pair"),
        ([], "turn_limit = true", "turn limit"),
        ([], "games_per_pair = true", "games per pair"),
        ([], "name = 123", "name"),
        ([], "[sandbox]\nmemory_mb = -1", "memory_mb"),
        ([], "[sandbox]\npids = 2", "pids"),
        ([], "[time_control]\nmove_seconds = 1e300", "move_seconds"),
    ],
)
def test_each_bad_setting_is_one_line_exit_2_and_nothing_is_created(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    tmp_path: Path,
    flags: list[str],
    toml: str,
    message: str,
) -> None:
    config = tmp_path / "t.toml"
    config.write_text(toml + "\n")
    code, _, err = kryt(
        capsys, "tournament", "run", *BOTS, "--backend", "process", "-c", str(config), *flags
    )
    assert code == ExitCode.BAD_INPUT, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], err
    assert "Traceback" not in err
    assert tournaments(db) == []


def _store_bad_setting(db: Path) -> None:
    """Make the stored config invalid, as an older release could store it."""
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute("select config from tournaments where id = 1").fetchone()
        config = json.loads(raw)
        config["sandbox"]["memory_mb"] = -1
        conn.execute("update tournaments set config = ? where id = 1", (json.dumps(config),))


def test_set_fixes_a_stored_setting_then_resume_finishes(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    code, _, err = kryt(capsys, "tournament", "run", *BOTS, "--games", "2", "--backend", "process")
    assert code == 0, err
    with sqlite3.connect(db) as conn:  # reopen one series, as if the run had stopped
        conn.execute("delete from games where series_id = 1 and number = 2")
        conn.execute("update series set status = 'running' where id = 1")
        conn.execute("update tournaments set status = 'pending' where id = 1")
    _store_bad_setting(db)
    code, _, err = kryt(capsys, "tournament", "resume", "1")
    assert code == ExitCode.BAD_INPUT and "memory_mb" in err and "kryt tournament set 1" in err
    assert "Traceback" not in err
    for bad, message in [
        ("sandbox.memory_mb=0", "memory_mb"),
        ("games_per_pair=4", "cannot change"),
        ("ruleset=classic", "cannot change"),  # the series are pairs, not tables
        ("nonsense", "KEY=VALUE"),
    ]:
        code, _, err = kryt(capsys, "tournament", "set", "1", bad)
        assert code == ExitCode.BAD_INPUT and message in err, err
    code, _, err = kryt(capsys, "tournament", "set", "1", "sandbox.memory_mb=300", "name=fixed")
    assert code == 0, err
    assert tournaments(db) == [(1, "pending", "fixed")]
    code, _, err = kryt(capsys, "tournament", "resume", "1")
    assert code == 0, err
    assert tournaments(db) == [(1, "finished", "fixed")]
    code, _, err = kryt(capsys, "tournament", "set", "1", "concurrency=3")
    assert code == ExitCode.BAD_INPUT and "finished" in err


def test_cancel_stops_a_tournament_for_good(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, _, err = kryt(capsys, "tournament", "run", *BOTS, "--games", "2", "--backend", "process")
    assert code == 0, err
    code, _, err = kryt(capsys, "tournament", "cancel", "1")
    assert code == ExitCode.BAD_INPUT and "finished" in err  # a finished one stays
    with sqlite3.connect(db) as conn:
        conn.execute("update series set status = 'pending' where id = 1")
        conn.execute("update tournaments set status = 'pending' where id = 1")
    code, _, err = kryt(capsys, "tournament", "cancel", "1")
    assert code == 0 and "cancelled (1 series stopped)" in err, err
    code, _, err = kryt(capsys, "tournament", "resume", "1")
    assert code == ExitCode.BAD_INPUT and "cancelled" in err and "Traceback" not in err
    code, out, _ = kryt(capsys, "tournament", "status")
    assert "cancelled" in out
    code, _, err = kryt(capsys, "tournament", "cancel", "1")
    assert code == ExitCode.BAD_INPUT and "already cancelled" in err
