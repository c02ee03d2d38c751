"""The bot template: ``new_bot`` / ``kryt bot new`` make a folder whose own test passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kryt.commands.bot import app
from sandbox.submission import load_submission
from sdk.tools.template import BotTemplateError, class_name, new_bot

ROOT = Path(__file__).resolve().parents[2]


def test_new_bot_makes_a_valid_submission_whose_tests_pass(tmp_path: Path) -> None:
    folder = new_bot("my-bot_2", tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "bot.py",
        "bot.toml",
        "test_bot.py",
    ]
    assert load_submission(folder).manifest.name == "my-bot_2"
    # The manifest's canonical key, as docs/protocol.md and docs/writing-a-bot.md name it.
    assert 'runtime = "python"' in (folder / "bot.toml").read_text()
    assert "class MyBot2Bot(Bot)" in (folder / "bot.py").read_text()
    done = subprocess.run(
        [sys.executable, "test_bot.py"],
        cwd=folder,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok  test_") == 3


@pytest.mark.parametrize(
    ("name", "cls"), [("x", "XBot"), ("9lives", "Bot9livesBot"), ("rob-bot", "RobBot")]
)
def test_class_names_are_identifiers(name: str, cls: str) -> None:
    assert class_name(name) == cls and cls.isidentifier()


def test_bad_names_and_existing_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BotTemplateError, match="must match"):
        new_bot("Bad Name", tmp_path)
    new_bot("taken", tmp_path)
    before = (tmp_path / "taken" / "bot.py").read_text()
    with pytest.raises(BotTemplateError, match="already exists"):
        new_bot("taken", tmp_path)
    assert (tmp_path / "taken" / "bot.py").read_text() == before


def test_kryt_bot_new_and_check(tmp_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["new", "clibot", "--dir", str(tmp_path)])
    assert made.exit_code == 0, made.output
    assert (tmp_path / "clibot" / "bot.toml").exists()
    checked = runner.invoke(app, ["check", str(tmp_path / "clibot"), "--games", "2"])
    assert checked.exit_code == 0, checked.output
    assert "bot clibot 0.1.0" in checked.output and "OK" in checked.output
    (tmp_path / "clibot" / "bot.toml").write_text("broken")
    failed = runner.invoke(app, ["check", str(tmp_path / "clibot"), "--games", "1"])
    assert failed.exit_code == 1 and "manifest" in failed.output
