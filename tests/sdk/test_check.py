"""check_bot through the real gRPC path: a good bot passes; crashes, illegal or slow replies,
a bot that dies at start and a bad manifest are reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.protocol.messages import TimeControl
from sdk.examples.random.bot import RandomBot
from sdk.tools.check import check_bot
from tests.protocol.helpers import served

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
pytestmark = pytest.mark.timeout(300)

STARTUP = 120.0
"""Seconds a bot may take to start: not under test, and a busy machine starts them slowly."""
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""For checks whose verdict is not about time: no reply is slow or late on a busy machine."""


def _bot(tmp_path: Path, name: str, body: str, attributes: str = "") -> Path:
    """A bot folder whose ``act`` is ``body``; ``attributes`` are class lines (indented)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "0.0.1"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(
        "import sys, time\nfrom sdk import Bot, serve\n\n"
        f"class B(Bot):\n{attributes}    def act(self, view):\n{body}\n\n"
        "if __name__ == '__main__':\n    serve(B())\n"
    )
    return folder


def test_an_example_bot_passes() -> None:
    report = check_bot(EXAMPLES / "random", games=3, time_control=ROOMY, startup_timeout=STARTUP)
    assert report.ok, report.format()
    assert (report.name, report.version) == ("random", "1.0.0")
    assert report.series is not None and len(report.series.games) == 3
    assert report.reply_times and not report.problems
    assert "OK" in report.format()


def test_a_running_bot_can_be_checked_by_address() -> None:
    with served(RandomBot(seed=2), "tcp") as (address, _):
        report = check_bot(address, games=2, time_control=ROOMY, startup_timeout=STARTUP)
    assert report.ok, report.format()


def test_illegal_actions_are_reported_per_game(tmp_path: Path) -> None:
    folder = _bot(tmp_path, "cheat", "        return 'take' if not view.pile else 'lead 6C'")
    report = check_bot(folder, games=3, time_control=ROOMY, startup_timeout=STARTUP)
    assert not report.ok
    (problem,) = report.problems
    assert problem.kind == "illegal action" and problem.games == (1, 2, 3)
    assert "FAILED" in report.format()


def test_a_crash_in_act_is_reported_with_the_traceback(tmp_path: Path) -> None:
    folder = _bot(tmp_path, "crasher", "        raise ZeroDivisionError('oops')")
    report = check_bot(folder, games=2, time_control=ROOMY, startup_timeout=STARTUP)
    (problem,) = report.problems
    assert problem.kind == "crash" and "ZeroDivisionError: oops" in problem.detail
    assert "Traceback" in report.stderr


def test_a_bot_that_exits_at_start_is_reported(tmp_path: Path) -> None:
    folder = _bot(tmp_path, "quitter", "        return 'take'")
    (folder / "bot.py").write_text("import sys\nprint('no thanks', file=sys.stderr)\nsys.exit(3)\n")
    report = check_bot(folder, games=2, startup_timeout=20)
    (problem,) = report.problems
    assert "exited with code 3 before serving" in problem.detail
    assert "no thanks" in report.stderr and "no thanks" in report.format()


def test_slow_replies_are_flagged_and_timeouts_forfeit(tmp_path: Path) -> None:
    slow = _bot(
        tmp_path,
        "sloth",
        "        time.sleep(0.12 if len(view.history) < 2 else 0)\n"
        "        return view.legal_actions[0]",
    )
    # A bank far above the 0.12 s naps: a busy machine must not turn "slow" into "timeout".
    report = check_bot(
        slow,
        games=1,
        time_control=TimeControl(move_ms=100, bank_ms=30_000),
        startup_timeout=STARTUP,
    )
    assert report.ok, report.format()
    assert [p.kind for p in report.problems] == ["slow replies"]
    # It sleeps far past its deadline and the check's few seconds for Shutdown: still
    # asleep when Shutdown arrives, so it also fails to exit in time (a warning). (A 5 s nap
    # could end within that wait, on a busy machine or not.)
    hang = _bot(tmp_path, "hang", "        time.sleep(120)\n        return 'take'")
    report = check_bot(
        hang,
        games=1,
        time_control=TimeControl(move_ms=100, bank_ms=100),
        startup_timeout=STARTUP,
    )
    assert [(p.kind, p.severity) for p in report.problems] == [
        ("timeout", "error"),
        ("shutdown", "warning"),
    ]


def test_a_bad_manifest_is_reported(tmp_path: Path) -> None:
    folder = _bot(tmp_path, "bad", "        return 'take'")
    (folder / "bot.toml").write_text('name = "Bad Name"\n')
    report = check_bot(folder, games=1)
    (problem,) = report.problems
    assert problem.kind == "manifest" and "version" in problem.detail


def test_a_bot_folder_can_be_checked_inside_a_sandbox_backend(tmp_path: Path) -> None:
    report = check_bot(
        EXAMPLES / "greedy",
        games=2,
        sandbox="process",
        time_control=ROOMY,
        startup_timeout=STARTUP,
    )
    assert report.ok, report.format()
    assert report.sandbox.startswith("process")
    # The limits it ran under, as numbers (issue 14: stated in the check's output).
    assert "limits: memory 256 MiB, 64 processes" in report.format()
    assert "submission up to 20 MiB (10 MiB a file)" in report.format()
    folder = _bot(tmp_path, "crasher", "        raise ZeroDivisionError('oops')")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    bad = check_bot(folder, games=2, sandbox="process", time_control=ROOMY, startup_timeout=STARTUP)
    assert not bad.ok and bad.problems[0].kind == "crash"
    assert "ZeroDivisionError" in bad.problems[0].detail or "ZeroDivisionError" in bad.stderr


def test_a_target_that_is_neither_folder_nor_address_is_reported_at_once(tmp_path: Path) -> None:
    report = check_bot(tmp_path / "missing", games=1)
    assert not report.ok and report.problems[0].kind == "not found"


def test_a_handshake_that_does_not_match_bot_toml_fails_the_check(tmp_path: Path) -> None:
    # The arena refuses such a bot at every game; the checker must not pass it.
    folder = _bot(
        tmp_path, "liar", "        return view.legal_actions[0]", "    version = '9.9.9'\n"
    )
    report = check_bot(folder, games=1, time_control=ROOMY, startup_timeout=STARTUP)
    assert not report.ok
    (problem,) = [p for p in report.problems if p.kind == "handshake"]
    assert "'9.9.9'" in problem.detail and "'0.0.1'" in problem.detail


def test_a_crash_under_docker_shows_the_bots_stderr(tmp_path: Path) -> None:
    """The container's output is read before the container is removed (it went with it)."""
    from tests.sandbox.conftest import _docker_problem
    from tests.services import require

    problem = _docker_problem()
    require(problem is None, "Docker", problem or "")
    folder = _bot(tmp_path, "crasher", "        raise ZeroDivisionError('oops')")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    report = check_bot(
        folder, games=2, sandbox="docker", time_control=ROOMY, startup_timeout=STARTUP
    )
    assert not report.ok and report.problems[0].kind == "crash", report.format()
    assert "Traceback" in report.stderr and "ZeroDivisionError" in report.stderr


def test_a_bot_of_another_runtime_needs_a_sandbox_to_be_checked(tmp_path: Path) -> None:
    from kryt.cli import main

    assert main(["bot", "new", "jsbot", "--dir", str(tmp_path), "--language", "node"]) == 0
    report = check_bot(tmp_path / "jsbot", games=1, startup_timeout=STARTUP)
    (problem,) = report.problems
    assert problem.kind == "sandbox" and "kryt bot check FOLDER --backend bwrap" in problem.detail


def test_a_problem_of_several_lines_keeps_its_lines() -> None:
    from sdk.tools.check import CheckReport, Problem

    report = CheckReport(target="x")
    report.problems.append(Problem("crash", "build failed:\nbot.cc:3: error: \x1b[31mno\n1 error"))
    text = report.format()
    assert "  ERROR crash: build failed:\n    bot.cc:3: error: \\x1b[31mno\n    1 error" in text


def test_after_a_failed_handshake_the_checker_says_the_arena_forfeits_every_game(
    tmp_path: Path,
) -> None:
    """The checker plays on over the stream it has; the arena would forfeit every game of
    the bot, so the report says so instead of letting later results look like play."""
    folder = _bot(
        tmp_path,
        "shy",
        "        return view.legal_actions[0]",
        "    def on_handshake(self, series):\n        raise RuntimeError('not today')\n",
    )
    report = check_bot(folder, games=3, time_control=ROOMY, startup_timeout=STARTUP)
    assert not report.ok
    notes = [p.detail for p in report.problems if p.kind == "handshake"]
    assert any("forfeits every game" in note for note in notes), report.format()
