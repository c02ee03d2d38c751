"""A stop (Ctrl-C, SIGTERM) after a tournament's last game, while its ratings are fitted or
its report printed: the line it prints says the tournament is finished, not to resume it
(resume would only say it is already finished). A stop before the end still names the
resume command."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import kryt.commands.tournament as tournament_command
from kryt.cli import main
from kryt.errors import ExitCode

RUN = [
    "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
    "--backend", "process",
]  # fmt: skip


def stopped_line(err: str) -> str:
    (line,) = [line for line in err.splitlines() if line.startswith("interrupted")]
    return line


def status(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        (row,) = conn.execute("select status from tournaments").fetchall()
    return str(row[0]).lower()


def stop_at_first_call(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Make ``kryt.commands.tournament.NAME`` raise KeyboardInterrupt (a Ctrl-C, or the
    SIGTERM the command turns into one) the first time it is called."""
    real = getattr(tournament_command, name)
    calls: list[str] = []

    def stop(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(tournament_command, name, stop)
    return calls


@pytest.mark.parametrize("where", ["refit_and_store", "_report"])
def test_a_stop_after_the_last_game_says_the_tournament_is_finished(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
) -> None:
    db = tmp_path / "kryt.db"
    calls = stop_at_first_call(monkeypatch, where)
    monkeypatch.chdir(tmp_path)
    code = main([*RUN, "--database", str(db)])
    err = capsys.readouterr().err
    assert calls, "the stop was never reached"
    assert code == ExitCode.INTERRUPTED, err
    assert status(db) == "finished"
    line = stopped_line(err)
    assert line.endswith("tournament 1 is finished and every game is saved"), line
    assert "resume" not in line, line


def test_a_stop_after_the_last_game_of_a_resume_says_it_is_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "kryt.db"
    monkeypatch.chdir(tmp_path)
    # A run stopped as it starts playing: the tournament is stored, nothing played.
    calls = stop_at_first_call(monkeypatch, "service_run")
    assert main([*RUN, "--database", str(db)]) == ExitCode.INTERRUPTED
    assert calls
    line = stopped_line(capsys.readouterr().err)
    assert line.endswith("resume with: kryt tournament resume 1"), line
    assert status(db) != "finished"
    # The resume plays every game, then is stopped while it fits the ratings.
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    calls = stop_at_first_call(monkeypatch, "refit_and_store")
    code = main(["tournament", "resume", "1", "--database", str(db)])
    err = capsys.readouterr().err
    assert calls and code == ExitCode.INTERRUPTED, err
    assert status(db) == "finished"
    line = stopped_line(err)
    assert line.endswith("tournament 1 is finished and every game is saved"), line
