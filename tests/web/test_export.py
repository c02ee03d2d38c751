"""The static export: every page written, every relative link resolving to a written file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from arena.db import open_database
from leaderboard.export import ExportError, export_html
from tests.web.world import World


def test_export_writes_every_page_and_links_resolve(
    sqlite_world: tuple[str, World], tmp_path: Path
) -> None:
    path, world = sqlite_world
    out = tmp_path / "site"
    with open_database(path, create=False) as db:
        summary = export_html(db, out)
    assert summary.tournaments == 2 and summary.submissions == 3 and summary.series == 4
    assert summary.games == 19  # 15 + 1 voided attempt in the spring cup, 3 in the summer cup
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == summary.pages
    for game_id in (world.won_game, world.drawn_game, world.voided_game):
        assert (out / "games" / f"{game_id}.html").is_file()
    checked = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for link in re.findall(r'(?:href|src)="([^"]+)"', text):
            if urlsplit(link).scheme:
                continue
            assert not link.startswith("/"), f"absolute link {link} in {page}"
            target = (page.parent / urlsplit(link).path).resolve()
            assert target.is_file(), f"{page.relative_to(out)} links to missing {link}"
            checked += 1
    assert checked > 100
    data = json.loads((out / "leaderboard.json").read_text())
    assert [r["bot"] for r in data["rows"]] and data["progress"]["games_planned"] == 21
    running = json.loads((out / f"leaderboard-{world.running_tournament}.json").read_text())
    assert running["progress"]["games_done"] == 3
    assert "replay-data" in (out / "games" / f"{world.won_game}.html").read_text()
    # A running tournament makes live pages reload; an exported page never changes.
    assert 'http-equiv="refresh"' not in (out / "index.html").read_text()
    assert (out / "static" / "replay.js").read_text().startswith("//")


def test_export_keeps_unrelated_files_and_can_run_twice(
    sqlite_world: tuple[str, World], tmp_path: Path
) -> None:
    path, _ = sqlite_world
    out = tmp_path / "site"
    out.mkdir()
    (out / "README.txt").write_text("mine")
    with open_database(path, create=False) as db:
        first = export_html(db, out, include_games=False)
        again = export_html(db, out, include_games=False)
    assert first == again and first.games == 0
    assert (out / "README.txt").read_text() == "mine"
    assert not list((out / "games").iterdir())


def test_export_to_a_file_is_a_clear_error(sqlite_world: tuple[str, World], tmp_path: Path) -> None:
    path, _ = sqlite_world
    target = tmp_path / "taken"
    target.write_text("not a folder")
    with open_database(path, create=False) as db, pytest.raises(ExportError, match="not a folder"):
        export_html(db, target)
    assert target.read_text() == "not a folder"


def test_exported_game_pages_are_a_small_fraction_of_the_full_game_data(
    sqlite_world: tuple[str, World], tmp_path: Path
) -> None:
    from leaderboard.web.pages import game_json

    path, world = sqlite_world
    out = tmp_path / "site"
    with open_database(path, create=False) as db:
        export_html(db, out)
        with db.read_session() as session:
            full = {
                game_id: len(json.dumps(game_json(game_id, session=session), indent=None))
                for game_id in (world.won_game, world.drawn_game)
            }
    for game_id, full_bytes in full.items():
        page = (out / "games" / f"{game_id}.html").read_bytes()
        # Before: the page embedded this JSON whole and listed every move in HTML besides.
        assert len(page) < 0.5 * full_bytes + 6000, (game_id, len(page), full_bytes)
    assert (out / "static" / "replay.js").is_file()  # the viewer is shared, not per page
