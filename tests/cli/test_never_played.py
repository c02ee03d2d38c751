"""A run in which a bot never played (every game its start-up failure) is not a success."""

from __future__ import annotations

from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]


def test_a_tournament_with_a_bot_that_never_starts_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["tournament", "run", "builtin:greedy", str(ROOT / "tests/referee/bots/exits-at-start"),
         "--games", "2", "--backend", "process", "--unsafe", "--name", "idle"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.FAILED
    assert "exits-at-start 1.0.0 never played" in " ".join(err.split())


def test_a_tournament_where_everyone_played_exits_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["tournament", "run", "builtin:greedy", "builtin:random", "--games", "2",
         "--backend", "process", "--name", "busy"]
    )  # fmt: skip
    assert code == ExitCode.OK
    assert "never played" not in capsys.readouterr().err


def test_play_with_a_bot_that_never_starts_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        ["play", "builtin:greedy", str(ROOT / "tests/referee/bots/exits-at-start"),
         "--games", "2", "--backend", "process"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.FAILED
    assert "never played" in " ".join(err.split())


def test_two_bots_that_never_start_at_one_table_are_both_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several seats of a table that could not start: the record's forfeit names the first
    of them only, and the others passed for having played (exit 0, no line)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    second = tmp_path / "exits-too"
    shutil.copytree(ROOT / "tests/referee/bots/exits-at-start", second)
    manifest = second / "bot.toml"
    manifest.write_text(manifest.read_text().replace('"exits-at-start"', '"exits-too"'))
    code = main(
        ["tournament", "run", "builtin:greedy", str(ROOT / "tests/referee/bots/exits-at-start"),
         str(second), "--ruleset", "classic", "--table-size", "3", "--games", "2",
         "--backend", "process", "--unsafe", "--name", "idle table"]
    )  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert code == ExitCode.FAILED
    assert "exits-at-start 1.0.0 never played" in err and "exits-too 1.0.0 never played" in err
    assert "greedy 1.0.0 never played" not in err
