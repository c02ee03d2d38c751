"""The leaderboard web site (FastAPI + Jinja2, plain CSS and JavaScript, no build step).

:func:`create_app` serves it (``kryt leaderboard serve``); :mod:`leaderboard.export` writes the
same pages as static files. The replay viewer's states come from the rules engine
(:mod:`leaderboard.web.replay`); the standings from :mod:`leaderboard.standings`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from leaderboard.web.app import create_app


def __getattr__(name: str) -> Any:
    # Lazy: FastAPI costs ~0.2 s to import, and `kryt leaderboard` only prints a table.
    if name == "create_app":
        from leaderboard.web.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["create_app"]
