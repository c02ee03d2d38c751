"""``kryt play --time`` (a control per bot, with an increment) and ``--book`` (a deal book)
through the command line, with real bot processes."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode
from referee.rules import Card

# Sleeps 100 ms past the move limit it is told: only its own control (with the increment
# paying the overrun back) keeps it in time.
SLOW_BOT = """
import time

from sdk import Bot, serve


class Overrun(Bot):
    def on_game_start(self, game):
        self.move = game.time_control.move_ms / 1000

    def act(self, view):
        time.sleep(self.move + 0.1)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Overrun())
"""


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def slow_bot(tmp_path: Path) -> Path:
    folder = tmp_path / "overrun"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "overrun"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(SLOW_BOT)
    return folder


@pytest.fixture
def book(tmp_path: Path) -> Path:
    cards = [str(c) for c in Card.all()]
    random.Random(7).shuffle(cards)
    path = tmp_path / "book.txt"
    path.write_text(f"# one deck\n{' '.join(cards)}\n")
    return path


def ending_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("game ")]


def test_an_increment_for_one_bot_pays_back_its_overruns(
    capsys: pytest.CaptureFixture[str], slow_bot: Path, book: Path
) -> None:
    args = ("play", str(slow_bot), "builtin:greedy", "-n", "2", "-v", "--backend", "process")
    code, out, err = kryt(capsys, *args, "--book", str(book), "--time", "overrun=0.05+0.3+0.3")
    assert code == 0, err
    assert "overrun 1.0.0 0.05+0.3+0.3, greedy 1.0.0 1+10+0" in err
    assert f"deal book: 1 decks from {book}" in err
    lines = ending_lines(out)
    assert len(lines) == 2 and not any("timeout" in line for line in lines), out
    # The one deck of the book, played twice with the hands swapped.
    assert {re.search(r"dealer seat (\d)", line).group(1) for line in lines} == {"0", "1"}  # type: ignore[union-attr]

    # The same bot under the same control without the increment runs out of bank.
    code, out, err = kryt(capsys, *args, "--book", str(book), "--time", "1=0.05+0.3")
    assert code == 0, err
    lines = ending_lines(out)
    assert len(lines) == 2 and all("greedy 1.0.0 wins by timeout" in line for line in lines)
    assert all(": seat 0 " in line for line in lines), out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--time", "1+ten"), "the bank 'ten' is not a number of seconds"),
        (("--time", "nobody=1+10"), "no bot is called 'nobody'"),
        (("--time", "1=1+10", "--time", "1=2+10"), "gives bot '1' two time controls"),
    ],
)
def test_a_bad_time_control_is_one_line(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "2", "--backend", "process", *args
    )
    assert code == ExitCode.BAD_INPUT, err
    assert message in err and "Traceback" not in err


def test_a_bad_book_names_its_line_and_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.txt"
    cards = [str(c) for c in Card.all()]
    bad.write_text("# header\n" + " ".join([*cards[:35], "ZZ"]) + "\n")
    code, _, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "2", "--book", str(bad)
    )
    assert code == ExitCode.BAD_INPUT
    assert "line 2, card 36: 'ZZ' is not a card" in err and "Traceback" not in err


def test_a_cpu_clock_the_sandbox_cannot_keep_is_the_wall_clock_and_says_so(
    capsys: pytest.CaptureFixture[str], slow_bot: Path
) -> None:
    """Plain processes are not accounted: ``--clock cpu`` there charges wall time, and says
    so up front (sleeping would cost the bot nothing on a CPU clock)."""
    args = ("play", str(slow_bot), "builtin:greedy", "-n", "2", "-v", "--backend", "process")
    code, out, err = kryt(capsys, *args, "--clock", "cpu", "--time", "1=0.05+0.3")
    assert code == 0, err
    assert "warning: --clock cpu: the process sandbox does not measure a bot's CPU time" in err
    lines = ending_lines(out)
    assert len(lines) == 2 and all("greedy 1.0.0 wins by timeout" in line for line in lines)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--time", "1+2", "--time", "3+4"], "given 2 times for every bot"),
        (["--time", "1+2", "--move-seconds", "3"], "--move-seconds would set it"),
        (["--time", "1+2", "--increment-seconds", "0.5"], "--increment-seconds would set it"),
    ],
)
def test_contradictory_time_flags_are_refused(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """Which of two time controls would win is a guess: one line, exit 2, nothing played."""
    code = main(["play", "builtin:greedy", "builtin:random", "-n", "2", *args])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert said in err and "Traceback" not in err
