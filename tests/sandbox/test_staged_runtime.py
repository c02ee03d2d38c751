"""What a sandbox stages into a bot is the bot runtime and nothing above it (issue: no
referee game loop, client or series, author tools, sandbox, arena, leaderboard or CLI)."""

from __future__ import annotations

from pathlib import Path

from sandbox.base_image import BaseImageSpec, _project_files
from sandbox.bot_runtime import runtime_files
from sandbox.local import stage_runtime

ROOT = Path(__file__).resolve().parents[2]

MUST_HAVE = {
    "referee/__init__.py",
    "referee/rules/game.py",
    "referee/protocol/messages.py",
    "referee/protocol/wire.py",
    "kryt_proto/v1/bot_pb2.py",
    "sdk/__init__.py",
    "sdk/bot.py",
    "sdk/server.py",
    "sdk/examples/greedy/bot.py",
}
NEVER = (
    "referee/match.py",
    "referee/client.py",
    "referee/series.py",
    "referee/record.py",
    "sdk/tools/",
    "sandbox/",
    "arena/",
    "leaderboard/",
    "kryt/",
)


def _listing(files: list[Path], root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in files}


def _check(staged: set[str]) -> None:
    assert staged >= MUST_HAVE, sorted(MUST_HAVE - staged)
    leaked = sorted(f for f in staged if any(f == n or f.startswith(n) for n in NEVER))
    assert not leaked, leaked
    tops = {f.split("/")[0] for f in staged}
    assert tops == {"referee", "kryt_proto", "sdk"}, tops
    assert {f.split("/")[1] for f in staged if f.startswith("referee/")} == {
        "__init__.py",
        "rules",
        "protocol",
    }


def test_the_runtime_list_holds_only_the_bot_runtime() -> None:
    _check(_listing(list(runtime_files(ROOT)), ROOT))


def test_the_docker_base_image_gets_exactly_the_runtime() -> None:
    files = [p for p in _project_files(BaseImageSpec().project_root) if p.name != "pyproject.toml"]
    _check(_listing(files, BaseImageSpec().project_root))


def test_the_bwrap_staging_holds_only_the_runtime() -> None:
    staged = stage_runtime()
    project = {
        p.relative_to(staged).as_posix()
        for top in ("referee", "sdk", "kryt_proto", "sandbox", "arena", "leaderboard", "kryt")
        if (staged / top).exists()
        for p in (staged / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    _check(project)
