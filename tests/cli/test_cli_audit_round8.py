"""Findings of an outside audit of the command line (2026-12-04): what a command prints when
it is interrupted, an input's control characters in an error, Python's warnings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kryt.cli
from kryt import entry
from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_the_entry_point_answers_a_ctrl_c_at_any_moment_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while the command line was being imported printed the import's traceback."""

    def interrupted(argv: list[str] | None = None) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(kryt.cli, "main", interrupted)
    with pytest.raises(SystemExit) as exited:
        entry.run()
    assert exited.value.code == ExitCode.INTERRUPTED == entry.INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"


def test_the_console_script_is_the_entry_point() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'kryt = "kryt.entry:run"' in text


def test_a_command_interrupted_claims_nothing_it_did_not_keep(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """'work done so far is saved' was said of every command, of `kryt play` (which stores
    nothing) and of an import (all or nothing) too."""
    import kryt.commands.games as games

    def stopped(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(games, "open_db", stopped)
    code = main(["games", "list"])
    assert code == ExitCode.INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize(
    "given",
    ["bad\x1b[31mred.db", "bell\x07.db", "over\u202eride.db"],
    ids=["escape sequence", "bell", "bidi override"],
)
def test_an_error_shows_the_control_characters_of_an_input_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    given: str,
) -> None:  # fmt: skip
    """Click's echo stripped an ESC sequence (naming another path than the one given) and
    passed BEL or a bidi override raw."""
    monkeypatch.chdir(tmp_path)
    code = main(["leaderboard", "-d", given])
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err
    assert "no database at" in err
    assert not any(ch in err for ch in "\x1b\x07\u202e"), repr(err)
    shown = given.encode("unicode_escape").decode()  # as sandbox.death.printable shows it
    assert shown in err, (shown, err)


def test_the_unsafe_warning_is_one_warning_line(tmp_path: Path) -> None:
    """It came as Python's warning: a source path and line, then the source line."""
    bot = tmp_path / "mine"
    shutil.copytree(EXAMPLES / "random", bot)
    manifest = bot / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', 'name = "mine"'))
    done = subprocess.run(
        [
            sys.executable, "-m", "kryt", "tournament", "run", str(bot), "builtin:greedy",
            "--games", "2", "--backend", "process", "--unsafe", "-d", str(tmp_path / "k.db"),
            "--store", str(tmp_path / "store"), "-j", "2",
        ],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=ENV,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "WITHOUT isolation" in line]
    assert lines and all(line.startswith("warning: running untrusted bot 'mine'") for line in lines)
    assert "UnsafeSandboxWarning" not in done.stderr and ".py:" not in done.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["leaderboard", "--html", ""], "the value of --html"),
        (["leaderboard", "--html="], "the value of --html"),
        (["tournament", "run", "builtin:random", "builtin:greedy", "--store", ""], "--store"),
        (["play", "builtin:random", "builtin:greedy", "--seed", ""], "the value of --seed"),
        (["submit", ""], "the argument after 'submit'"),
    ],
)
def test_an_empty_argument_is_refused_before_anything_is_done(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    args: list[str], named: str,
) -> None:  # fmt: skip
    """An unset shell variable: `--html ''` wrote the site into the current folder, `--store
    ''` unpacked submissions there, `submit ''` submitted it."""
    monkeypatch.chdir(tmp_path)
    code = main(args)
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT
    assert named in err and "is empty" in err
    assert list(tmp_path.iterdir()) == []  # nothing written, no database created


@pytest.mark.parametrize("command", ["tournament", "play"])
def test_a_refused_bot_is_named_by_its_argument(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:  # fmt: skip
    """Of several bots given, the error did not say which one was refused."""
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "oddbot"
    bad.mkdir()
    (bad / "bot.py").write_text("x = 1\n")
    (bad / "bot.toml").write_text(
        'name = "odd"\nversion = "1"\nruntime = "python"\nentry = "bot.py"\nfrobnicate = 1\n'
    )
    args = ["builtin:random", str(bad), "--backend", "process", "--unsafe", "-n", "2"]
    if command == "tournament":
        args = ["tournament", "run", *args, "-d", str(tmp_path / "k.db")]
    else:
        args = ["play", *args[:-3], "-n", "2"]  # play takes trusted bots only without it
    code = main(args)
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert f"error: {bad}: bot.toml has unknown field(s): 'frobnicate'" in err, err


def test_a_database_of_a_newer_release_exits_3_as_every_other_unusable_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import sqlite3

    from arena.db import open_database

    path = tmp_path / "newer.db"
    open_database(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute("update alembic_version set version_num = '9999_future'")
    code = main(["leaderboard", "-d", str(path)])
    assert code == ExitCode.UNAVAILABLE, capsys.readouterr().err


def test_an_interrupted_play_sums_up_the_games_played(tmp_path: Path) -> None:
    """Its summary (Elo, interval, LOS) was lost and it said 'work done so far is saved',
    though kryt play stores nothing."""
    import signal
    import time

    run = subprocess.Popen(
        [
            sys.executable, "-m", "kryt", "play", "builtin:random", "builtin:greedy",
            "-n", "100000", "--backend", "process",
        ],
        cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    assert run.stdout is not None
    deadline = time.monotonic() + 300
    while "Score of" not in run.stdout.readline():  # a game was played
        assert run.poll() is None and time.monotonic() < deadline
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == ExitCode.INTERRUPTED, err
    assert "random 1.0.0 vs greedy 1.0.0: Elo" in out and "LOS" in out, out
    assert "interrupted after " in err and "of 100000 games" in err and "stores nothing" in err
    assert "saved" not in err and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == []
