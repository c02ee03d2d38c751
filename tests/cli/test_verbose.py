"""The root ``kryt --verbose``/``-v`` adds tracebacks to errors; a command's own ``-v`` (one
line per game) does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from kryt.errors import ExitCode
from tests.cli.helpers import kryt


def test_a_commands_own_v_does_not_add_tracebacks(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ("tournament", "run", "builtin:random", "builtin:greedy", "--time", "1+x", "-v")
    code, out, err = kryt(capsys, *args)
    assert code == ExitCode.BAD_INPUT
    assert "Traceback" not in out + err and err.startswith("error: --time")
    assert not any(r.exc_info for r in caplog.records), "a traceback for a user error"


def test_the_roots_verbose_adds_the_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = str(tmp_path / "absent.db")
    code, _, err = kryt(capsys, "-v", "games", "list", "-d", missing)
    assert code == ExitCode.UNAVAILABLE and "error: no database at" in err
    assert any(r.exc_info for r in caplog.records), "no traceback logged under -v"
    caplog.clear()
    code, _, err = kryt(capsys, "games", "list", "-d", missing)
    assert code == ExitCode.UNAVAILABLE
    assert not any(r.exc_info for r in caplog.records)
