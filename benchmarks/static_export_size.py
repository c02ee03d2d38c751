#!/usr/bin/env python3
"""Bytes per game of the static leaderboard export, and of the full game data (what each
game page embedded before its steps were packed and its move list drawn by the viewer).

    .venv/bin/python benchmarks/static_export_size.py [--database kryt.db]

Exports the database into a temporary folder and prints, per game page: the page's bytes
and the bytes of the game's full JSON (``/api/games/ID``), then the totals and the ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.db import open_database
from leaderboard.export import export_html
from leaderboard.web.pages import game_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="kryt.db")
    opts = parser.parse_args()
    with open_database(opts.database, create=False) as db, tempfile.TemporaryDirectory() as tmp:
        summary = export_html(db, Path(tmp))
        pages = sorted((Path(tmp) / "games").glob("*.html"), key=lambda p: int(p.stem))
        page_bytes = full_bytes = 0
        with db.read_session() as session:
            for page in pages:
                full = len(json.dumps(game_json(int(page.stem), session=session)))
                size = page.stat().st_size
                page_bytes += size
                full_bytes += full
        static = sum(p.stat().st_size for p in (Path(tmp) / "static").iterdir())
    games = max(1, len(pages))
    print(f"{summary.games} game pages; shared assets {static} bytes (once)")
    print(
        f"per game: page {page_bytes / games:8.0f} bytes   full game JSON {full_bytes / games:8.0f}"
    )
    print(f"page / full JSON: {page_bytes / max(1, full_bytes):.2f}")


if __name__ == "__main__":
    main()
