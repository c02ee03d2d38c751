"""What a sandbox stages into every bot: the bot runtime and nothing above it.

A bot needs the rules core (``referee.rules``), the protocol (``referee.protocol`` and the
generated ``kryt_proto``) and the SDK's runtime (``sdk`` with its example bots). It never
gets the referee's game loop, client or series, the author tools (``sdk.tools``), the
sandbox, the arena's records, the leaderboard or the CLI: a bot cannot read how the
referee works from inside its box, and nothing it could import is tempting to attack.
Both the bwrap staging and the Docker base image copy exactly :func:`runtime_files`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

RUNTIME_PATHS: Final = (
    "referee/__init__.py",
    "referee/rules",
    "referee/protocol",
    "kryt_proto",
    "sdk",
)
"""Paths (relative to the project root) of the bot runtime."""

EXCLUDED: Final = ("sdk/tools",)
"""Folders under :data:`RUNTIME_PATHS` that are not runtime (the author tools)."""


def runtime_files(root: Path) -> Iterator[Path]:
    """Every file of the bot runtime under the project ``root`` (sorted, no byte-code)."""
    for rel in RUNTIME_PATHS:
        base = root / rel
        if base.is_file():
            yield base
            continue
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if any(relative == e or relative.startswith(e + "/") for e in EXCLUDED):
                continue
            if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
                continue
            yield path
