"""Bot folders the tests write on the fly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def python_bot(folder: Path, name: str, version: str, source: str) -> Path:
    """``folder`` made a Python bot: a ``bot.toml`` naming ``name`` and ``version``, and
    ``source`` as its ``bot.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "{version}"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(source)
    return folder


def liar_bot(folder: Path, version: str) -> Path:
    """A greedy bot whose bot.toml says ``liar`` but whose handshake names it
    ``evil\\x1b]0;x\\x07`` (an escape sequence that would retitle a terminal)."""
    return python_bot(
        folder,
        "liar",
        version,
        "from sdk import Bot, serve\nfrom sdk.strategy import greedy_action\n\n\n"
        f"class B(Bot):\n    name = 'evil\\x1b]0;x\\x07'\n    version = '{version}'\n\n"
        "    def act(self, view):\n        return greedy_action(view.legal_actions, view.trump)"
        "\n\n\nif __name__ == '__main__':\n    serve(B())\n",
    )


def planned_bot(folder: Path, name: str, source: str, plan: dict[str, Any]) -> Path:
    """A Python bot (``source``) that follows ``plan``, read from its ``plan.json``; it logs
    what it does as JSON lines to ``plan["log"]``, by default ``NAME.log.jsonl`` beside its
    folder (read them with :func:`read_log`)."""
    python_bot(folder, name, "1.0.0", source)
    plan = {"log": str(folder.parent / f"{name}.log.jsonl"), **plan}
    (folder / "plan.json").write_text(json.dumps(plan))
    return folder


def read_log(path: Path) -> list[dict[str, Any]]:
    """The JSON lines a planned bot logged (none when it never wrote its log)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
