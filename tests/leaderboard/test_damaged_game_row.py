"""A game row damaged by hand (its ``packed`` deal and moves no longer unpack): the static
export writes every other page and warns once, the site answers that game with a page saying
it is stored inconsistently, and every list that shows the game still loads. Never a
traceback, the same words as ``kryt replay`` (``game N is stored inconsistently: ...``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db import InvalidRecordError, get_game, open_database, stored_record
from arena.service.app import create_service_app
from arena.service.settings import ServiceSettings
from kryt.errors import ExitCode
from leaderboard.export import export_html
from leaderboard.web import create_app
from tests.cli.helpers import kryt
from tests.service.helpers import problem
from tests.web.world import BOTS, World, build_world


@dataclass(frozen=True)
class Damaged:
    """A filled SQLite file with one game's ``packed`` column damaged."""

    path: Path
    world: World
    game_id: int
    message: str
    """What ``stored_record`` (``kryt replay``, ``kryt games export``) says of the game."""

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    def every_game(self) -> list[int]:
        with sqlite3.connect(self.path) as connection:
            return [row[0] for row in connection.execute("select id from games order by id")]


DAMAGES = {
    # A byte that starts no packed format, as the audit wrote it.
    "zero-byte": "update games set packed = x'00' where id = ?",
    # The deal and moves cut short.
    "cut-short": "update games set packed = substr(packed, 1, 3) where id = ?",
}


@pytest.fixture(scope="module", params=sorted(DAMAGES))
def damaged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Damaged:
    path = tmp_path_factory.mktemp("damaged") / "kryt.db"
    db = open_database(f"sqlite:///{path}")
    try:
        world = build_world(db)
    finally:
        db.close()
    game_id = world.won_game
    with sqlite3.connect(path) as connection:
        connection.execute(DAMAGES[request.param], (game_id,))
    db = open_database(f"sqlite:///{path}", create=False)
    try:
        with db.read_session() as session, pytest.raises(InvalidRecordError) as caught:
            stored_record(get_game(game_id, session=session))
    finally:
        db.close()
    message = str(caught.value)
    assert message.startswith(f"game {game_id} is stored inconsistently: ")
    return Damaged(path, world, game_id, message)


@pytest.fixture(scope="module")
def leaderboard_client(damaged: Damaged) -> Iterator[TestClient]:
    db = open_database(damaged.url, create=False)
    try:
        with TestClient(create_app(db), raise_server_exceptions=False) as client:
            yield client
    finally:
        db.close()


def _says_stored_inconsistently(text: str, damaged: Damaged) -> None:
    assert "Game stored inconsistently" in text
    assert damaged.message in text
    assert "Traceback" not in text and "PackError" not in text


# ------------------------------------------------------------------ kryt leaderboard --html


def test_html_export_writes_every_other_page_and_warns_once(
    damaged: Damaged, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    args = ("leaderboard", "--html", str(out), "--db", str(damaged.path))
    code, stdout, stderr = kryt(capsys, *args)
    assert code == ExitCode.FAILED, stderr
    assert "Traceback" not in stderr and "PackError" not in stderr
    (line,) = stderr.splitlines()
    assert line.startswith(f"warning: {damaged.message}")
    assert stdout.startswith("wrote ") and f"open {out / 'index.html'}" in stdout
    # The whole site is there: no page is missing because of one row.
    games = damaged.every_game()
    assert damaged.game_id in games and len(games) > 1
    for game_id in games:
        page = (out / "games" / f"{game_id}.html").read_text(encoding="utf-8")
        if game_id == damaged.game_id:
            _says_stored_inconsistently(page, damaged)
            assert "replay.js" not in page
        else:
            assert "replay.js" in page, game_id
    world = damaged.world
    for relative in (
        "index.html",
        "leaderboard.json",
        f"tournaments/{world.finished_tournament}.html",
        f"tournaments/{world.running_tournament}.html",
        *(f"series/{s}.html" for s in world.series),
        *(f"submissions/{s}.html" for s in world.submissions.values()),
        "static/style.css",
        "static/replay.js",
    ):
        assert (out / relative).is_file(), relative
    # The lists still link the damaged game (its page says what is wrong).
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f'href="games/{damaged.game_id}.html"' in index


def test_export_summary_names_the_damaged_game(damaged: Damaged, tmp_path: Path) -> None:
    with open_database(damaged.url, create=False) as db:
        summary = export_html(db, tmp_path / "site")
    assert summary.damaged == (damaged.message,)
    assert summary.games == len(damaged.every_game()) - 1


# ------------------------------------------------------------------ kryt leaderboard serve


def test_served_game_page_says_the_game_is_stored_inconsistently(
    damaged: Damaged, leaderboard_client: TestClient
) -> None:
    response = leaderboard_client.get(f"/games/{damaged.game_id}")
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("text/html")
    _says_stored_inconsistently(response.text, damaged)
    api = leaderboard_client.get(f"/api/games/{damaged.game_id}")
    assert api.status_code == 500
    assert api.json() == {"error": damaged.message}
    # Another game of the same series is untouched.
    other = next(g for g in damaged.every_game() if g != damaged.game_id)
    assert leaderboard_client.get(f"/games/{other}").status_code == 200
    assert leaderboard_client.get(f"/api/games/{other}").status_code == 200


def test_pages_listing_the_damaged_game_still_load(
    damaged: Damaged, leaderboard_client: TestClient
) -> None:
    world = damaged.world
    link = f'href="/games/{damaged.game_id}"'
    for path in (
        "/",
        f"/tournaments/{world.finished_tournament}",
        f"/series/{world.series[0]}",
        f"/submissions/{world.submissions[BOTS[0]]}",
        f"/bots/{BOTS[0]}",
    ):
        response = leaderboard_client.get(path)
        assert response.status_code == 200, (path, response.text[-500:])
        assert link in response.text, path
    assert leaderboard_client.get("/api/leaderboard").status_code == 200


def test_arena_server_answers_the_damaged_game_the_same_way(
    damaged: Damaged, tmp_path: Path
) -> None:
    with open_database(damaged.url, create=False) as db:
        settings = ServiceSettings(store=tmp_path / "store")
        app = create_service_app(db, settings, run_background=False)
        with TestClient(app, raise_server_exceptions=False) as client:
            response = client.get(f"/games/{damaged.game_id}")
            assert response.status_code == 500
            _says_stored_inconsistently(response.text, damaged)
            # Under /api/ the arena answers a problem document (a 500's detail is generic).
            body = problem(client.get(f"/api/games/{damaged.game_id}"), 500)
            assert "Traceback" not in body["detail"]
            assert client.get(f"/series/{damaged.world.series[0]}").status_code == 200
            assert client.get("/").status_code == 200
