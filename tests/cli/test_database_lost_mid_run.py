"""The database going away in the middle of a run (a PostgreSQL restart, a full disk): the
run ends as after any other stop, with the resume command, on one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kryt.commands.tournament as tournament_command
from arena.db import DatabaseUnavailableError
from kryt.cli import main
from kryt.errors import ExitCode

LOST = (
    "database postgresql+psycopg://kryt:***@127.0.0.1:15432/arena failed: connection failed:"
    ' connection to server at "127.0.0.1", port 15432 failed: Connection refused\n\tIs the'
    " server running on that host and accepting TCP/IP connections?; check that it is"
    " reachable and has free space"
)


def test_a_database_lost_mid_run_ends_with_the_resume_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def lost(*args: Any, **kwargs: Any) -> None:
        raise DatabaseUnavailableError(LOST)

    monkeypatch.setattr(tournament_command, "service_run", lost)
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
            "--backend", "process", "--database", str(tmp_path / "k.db"),
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err
    lines = [line for line in err.splitlines() if line.startswith(("error:", "hint:"))]
    assert len(lines) == 2, err
    error, hint = lines
    assert "Connection refused Is the server running" in error, error
    assert "\\x0a" not in error and "\\t" not in error, error
    assert hint.endswith("once the database is back: kryt tournament resume 1"), hint
    assert "that the server is running" in hint, hint
