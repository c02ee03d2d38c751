"""The leaderboard web site (FastAPI + Jinja2, plain CSS and JavaScript, no build step).

:func:`create_app` serves it (``kryt leaderboard serve``); :mod:`leaderboard.export` writes the
same pages as static files. The replay viewer's states come from the rules engine
(:mod:`leaderboard.web.replay`); the standings from :mod:`leaderboard.standings`.
"""

from __future__ import annotations

from leaderboard.web.app import create_app

__all__ = ["create_app"]
