"""Example bots bundled with the SDK; each folder is a complete bot with its ``bot.toml``.

They ship inside the package, so a user can name them from anywhere as ``builtin:NAME``
(``kryt play mybot builtin:greedy``): :func:`resolve_bot_ref` turns that into the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

BUILTIN_PREFIX: Final = "builtin:"
EXAMPLES_DIR: Final = Path(__file__).resolve().parent


class UnknownBuiltinError(ValueError):
    """``builtin:NAME`` names no bundled bot."""


def builtin_names() -> list[str]:
    """The bundled bots, by name (their folder names)."""
    return sorted(p.name for p in EXAMPLES_DIR.iterdir() if (p / "bot.toml").is_file())


def resolve_bot_ref(ref: str) -> str:
    """``builtin:NAME`` -> the bundled bot's folder; any other reference unchanged."""
    if not ref.startswith(BUILTIN_PREFIX):
        return ref
    name = ref.removeprefix(BUILTIN_PREFIX)
    folder = EXAMPLES_DIR / name
    if "/" in name or name not in builtin_names():
        raise UnknownBuiltinError(
            f"no bundled bot {ref!r}; bundled bots: "
            + ", ".join(BUILTIN_PREFIX + n for n in builtin_names())
        )
    return str(folder)
