"""Bots played in one process keep their own names (not the working directory's bot.toml),
and a crash in act() says where it happened."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.server import bot_identity
from sdk.tools.check import check_bot
from sdk.tools.local import play_local
from sdk.tools.template import new_bot
from tests.sdk.helpers import liar_bot, python_bot

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def in_my_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory is the author's bot folder (name ``mybot``)."""
    folder = new_bot("mybot", tmp_path)
    monkeypatch.chdir(folder)
    return folder


def test_bundled_bots_keep_their_names_inside_another_bots_folder(in_my_bot: Path) -> None:
    assert bot_identity(GreedyBot()) == ("greedy", "1.0.0")
    result = play_local(GreedyBot(), RandomBot(seed=1), games=1)
    assert result.names == ("greedy", "random")
    assert str(result).startswith("greedy vs random:")


def test_two_copies_of_one_bot_are_told_apart() -> None:
    result = play_local(GreedyBot(), GreedyBot(), games=1)
    assert result.names == ("greedy", "greedy (2)")


def test_sdk_check_names_the_bot_and_its_opponent(in_my_bot: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "sdk.tools", "check", ".", "--games", "2"],
        cwd=in_my_bot,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "series: mybot vs greedy" in done.stdout
    assert "mybot vs mybot" not in done.stdout


def test_a_crash_in_act_names_the_file_and_line(tmp_path: Path) -> None:
    folder = python_bot(
        tmp_path / "crasher",
        "crasher",
        "0.0.1",
        "from sdk import Bot, serve\n\n\nclass B(Bot):\n    def act(self, view):\n"
        "        return {}['AS']\n\n\nif __name__ == '__main__':\n    serve(B())\n",
    )
    report = check_bot(folder, games=1)
    (problem,) = report.problems
    assert problem.kind == "crash"
    assert "KeyError: 'AS' at bot.py:6 in act" in problem.detail


def test_check_finds_bundled_bots_by_name(in_my_bot: Path) -> None:
    report = check_bot("builtin:random", games=1)
    assert report.ok, report.format()
    assert report.name == "random"
    missing = check_bot("builtin:nope", games=1)
    assert not missing.ok and "builtin:greedy" in missing.problems[0].detail


def test_a_handshake_name_with_escapes_is_escaped_once(tmp_path: Path) -> None:
    """The name was made printable and then repr()'d: each escape showed two backslashes."""
    report = check_bot(liar_bot(tmp_path / "liar", "0.0.1"), games=1)
    handshake = [p for p in report.problems if p.kind == "handshake"]
    assert handshake, report.format()
    assert "the handshake says it is 'evil\\x1b]0;x\\x07' version '0.0.1'" in handshake[0].detail
    assert "\x1b" not in report.format()
