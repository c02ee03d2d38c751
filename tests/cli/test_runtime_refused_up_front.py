"""A bot the sandbox cannot start is refused before the first game, by the commands that
play: a Python bot on Docker without the bot base image (a run of bots of other runtimes does
not need that image), and on ``resume`` a bot whose runtime cannot run any more (each of its
games would fail to start, three times each)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import arena.tournament.runner as runner
from kryt.errors import ExitCode
from sandbox.local import ProcessBackend
from tests.cli.helpers import counted_games, flat, kryt
from tests.services import require

MISSING = "kryt-bot-base:no-such-tag"


def _docker_engine() -> None:
    from sandbox.docker_backend import docker_client

    try:
        docker_client(timeout=10)
    except Exception as exc:  # the engine's absence is another test's subject
        require(False, "Docker", str(exc))


@pytest.mark.docker
@pytest.mark.parametrize(
    "command",
    [
        ["play", "builtin:random", "builtin:greedy", "--games", "2"],  # stores nothing
        ["tournament", "run", "builtin:random", "builtin:greedy", "--games", "2", "--database"],
    ],
    ids=["play", "tournament-run"],
)
def test_python_bots_on_docker_without_the_base_image_are_refused_before_any_game(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    _docker_engine()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KRYT_SANDBOX_BASE_IMAGE", MISSING)
    path = tmp_path / "kryt.db"
    if command[-1] == "--database":
        command = [*command, str(path)]
    code, out, err = kryt(capsys, *command, "--backend", "docker")
    said = flat(out + err)
    assert code != ExitCode.OK, said
    assert "Traceback" not in said
    assert MISSING in said and "python -m sandbox.base_image build" in said, said
    if path.exists():  # nothing was played, and no tournament was created
        with sqlite3.connect(path) as conn:
            tables = {row[0] for row in conn.execute("select name from sqlite_master")}
            if "tournaments" in tables:
                assert conn.execute("select count(*) from tournaments").fetchone() == (0,)
            if "games" in tables:
                assert conn.execute("select count(*) from games").fetchone() == (0,)
        conn.close()


def test_resume_refuses_a_bot_whose_runtime_cannot_run_now_before_any_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "kryt.db"
    where = ["--database", str(path)]
    real = runner.record_game  # type: ignore[attr-defined]  # imported there, patched here
    calls = [0]

    def record_game(*args: Any, **kwargs: Any) -> Any:  # Ctrl-C after two games
        calls[0] += 1
        if calls[0] >= 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "record_game", record_game)
    run = ["tournament", "run", "builtin:random", "builtin:greedy", "--games", "4", "-j", "1"]
    code, _out, err = kryt(capsys, *run, "--backend", "process", *where)
    assert code == ExitCode.INTERRUPTED, err
    assert counted_games(path) == 2
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)

    def gone(self: ProcessBackend, runtime: str) -> str | None:
        return f"the {runtime} toolchain is gone"

    monkeypatch.setattr(ProcessBackend, "runtime_problem", gone)
    code, out, err = kryt(capsys, "tournament", "resume", "1", *where)
    said = flat(out + err)
    assert code != ExitCode.OK, said
    assert "Traceback" not in said
    assert "refusing bot random@1.0.0: the python toolchain is gone; nothing was played" in said
    assert "no tournament was created" not in said
    assert counted_games(path) == 2
    _, out, _ = kryt(capsys, "tournament", "status", "1", *where)
    assert "status: stopped" in flat(out), out  # as it was: resumable

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code, out, err = kryt(capsys, "tournament", "resume", "1", *where)
    assert code == ExitCode.OK, (out, err)
    assert counted_games(path) == 4
