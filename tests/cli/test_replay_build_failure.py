"""How ``kryt replay`` shows a forfeit whose bot did not build: the reason on the forfeit's
line, the compiler's output below it line by line (marked as the bot's), never one line of
``\\x0a`` escapes."""

from __future__ import annotations

from pathlib import Path

from kryt.commands.replay import detail_parts
from sandbox.runtimes import REGISTRY, containers
from sandbox.submission import load_submission

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_build_is_its_reason_then_the_compilers_lines() -> None:
    sub = load_submission(ROOT / "sdk" / "tools" / "starters" / "java")
    errors = ["./Bot.java:29: error: ';' expected", "    int x = 1", "1 error"]
    log = [
        *({"stream": line + "\n"} for line in errors),
        {"stream": f"{containers.BUILD_FAILED} the java build exited with status 1\n"},
    ]
    message = containers.build_failure(REGISTRY["java"], sub, log)
    assert message is not None
    detail = f"bot 'kryt-x' did not start: {message}"
    first, rest = detail_parts(detail)
    assert first.endswith("did not build: the java build exited with status 1")
    assert "\n" not in first
    assert rest.splitlines() == errors


def test_other_details_are_unchanged() -> None:
    assert detail_parts("illegal action 'lead 6C'\nsecond line") == (
        "illegal action 'lead 6C'\nsecond line",
        "",
    )
