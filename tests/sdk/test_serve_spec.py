"""``python -m sdk serve module:Class``: a class that cannot be made into a bot is one clear
error line (exit 2), while an error in the bot's own constructor keeps its traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BOTS = """
from sdk import Bot


class Abstract(Bot):
    name = "abstract"


class NeedsArguments(Bot):
    name = "needs-arguments"

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def act(self, view):
        return view.legal_actions[0]


class Broken(Bot):
    name = "broken"

    def __init__(self) -> None:
        raise TypeError("my own bug")

    def act(self, view):
        return view.legal_actions[0]
"""


def _serve(tmp_path: Path, cls: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bots.py").write_text(BOTS, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "sdk", "serve", f"bots:{cls}", f"unix://{tmp_path}/b.sock"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        ("Abstract", "'bots:Abstract' cannot be served: it does not implement act"),
        ("NeedsArguments", "'bots:NeedsArguments' must be constructible without arguments"),
    ],
)
def test_a_class_that_cannot_be_a_bot_is_one_error_line(
    tmp_path: Path, cls: str, words: str
) -> None:
    done = _serve(tmp_path, cls)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], done.stderr


def test_an_error_in_the_bots_own_constructor_keeps_its_traceback(tmp_path: Path) -> None:
    done = _serve(tmp_path, "Broken")
    assert done.returncode == 1, done
    assert "Traceback" in done.stderr and "TypeError: my own bug" in done.stderr, done.stderr
