"""The web app over a filled database: pages, JSON API, replay data, errors."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from arena.db import Database, TournamentSpec, create_tournament, get_game, open_database
from leaderboard.standings import standings
from leaderboard.web import create_app, pages
from leaderboard.web.replay import unpack_steps
from tests.web.world import RUNNING_NAME, World


def embedded_replay(page: str) -> dict[str, Any]:
    """The JSON the game page embeds for its viewer, with its packed steps unpacked."""
    match = re.search(
        r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S
    )
    assert match is not None, "no embedded replay data"
    data: dict[str, Any] = json.loads(match.group(1))
    assert "steps" not in data["replay"] and "actions" not in data  # compact: packed once
    data["replay"]["steps"] = unpack_steps(data["replay"]["packed"])
    return data


def section(page: str, heading: str) -> str:
    """The HTML of the <section> whose <h2> is ``heading``."""
    start = page.index(f"<h2>{heading}</h2>")
    return page[start : page.index("</section>", start)]


def test_index_shows_overall_standings_tournaments_and_progress(
    client: TestClient, filled: tuple[Database, World]
) -> None:
    db, world = filled
    response = client.get("/")
    assert response.status_code == 200
    page = response.text
    with db.read_session() as session:
        board = standings(session=session)
    table = section(page, "Standings")
    positions = [table.index(f">{row.bot}</a>") for row in board.rows]
    assert positions == sorted(positions), "rows are not in rank order"
    for row in board.rows:
        assert f'href="/submissions/{row.submission_id}"' in table
        assert f"{row.wins} / {row.draws} / {row.losses}" in table
        assert row.rating is not None and f"{row.rating:.0f}" in table
    assert "timeout 1" in table  # charlie's forfeit, by reason
    tournaments = section(page, "Tournaments")
    assert f'href="/tournaments/{world.finished_tournament}"' in tournaments
    assert "15 / 15 games" in tournaments
    assert f"{world.played_running} / {world.planned_running} games" in tournaments
    assert "18 / 21 games" in page  # overall progress
    assert html.escape(RUNNING_NAME) in page and RUNNING_NAME not in page
    assert f'href="/games/{world.forfeit_game}"' in section(page, "Recent games")


def test_tournament_page_has_its_own_standings_series_and_progress(
    client: TestClient, world: World
) -> None:
    page = client.get(f"/tournaments/{world.running_tournament}").text
    table = section(page, "Standings")
    assert ">bravo</a>" in table and ">charlie</a>" in table
    assert ">alpha</a>" not in table  # alpha plays no game in this tournament
    assert "3 / 6 games" in page
    assert "0 / 1 series done" in page
    assert "running" in page
    series = section(page, "Series")
    assert "3 / 6" in series


def test_submission_page_has_results_per_opponent_and_rating_history(
    client: TestClient, filled: tuple[Database, World]
) -> None:
    db, world = filled
    charlie = world.submissions["charlie"]
    page = client.get(f"/submissions/{charlie}").text
    with db.read_session() as session:
        row = next(r for r in standings(session=session).rows if r.submission_id == charlie)
    assert f"{row.wins} / {row.draws} / {row.losses}" in section(page, "Standing (all tournaments)")
    opponents = section(page, "Results against each opponent")
    rows = re.findall(
        r'href="/submissions/(\d+)">[^<]*</a></td>\s*<td class="num">(\d+)</td>\s*'
        r'<td class="num">(\d+) / (\d+) / (\d+)</td>',
        opponents,
    )
    assert {int(r[0]) for r in rows} == {world.submissions["alpha"], world.submissions["bravo"]}
    assert sum(int(r[1]) for r in rows) == row.games
    assert sum(int(r[2]) for r in rows) == row.wins
    assert sum(int(r[4]) for r in rows) == row.losses
    # Games against bravo: 5 in the spring cup (one a timeout loss) and 3 in the summer cup.
    bravo = next(r for r in rows if int(r[0]) == world.submissions["bravo"])
    assert int(bravo[1]) == 8
    history = section(page, "Rating history")
    assert history.count('<svg class="plot"') == 2  # live Elo, and the stored snapshots
    elo_svg = history[history.index('id="elo-plot"') :]
    points = re.search(r'<polyline class="line" points="([^"]+)"', elo_svg)
    assert points is not None and len(points.group(1).split()) == row.games + 1


def test_game_page_embeds_engine_states_for_every_step(
    client: TestClient, filled: tuple[Database, World]
) -> None:
    db, world = filled
    page = client.get(f"/games/{world.won_game}").text
    data = embedded_replay(page)
    with db.read_session() as session:
        game = get_game(world.won_game, session=session)
        actions, deck, dealer, result = game.actions, game.deck, game.dealer, game.result
    steps = data["replay"]["steps"]
    assert data["replay"]["error"] is None
    assert len(steps) == len(actions) + 1
    deal = steps[0]
    assert deal["action"] is None and deal["pile"] == []
    assert [len(h) for h in deal["hands"]] == [3, 3]
    assert deal["stock"] == 30 and deal["face_up"] == deck[6]
    assert deal["to_move"] == 1 - dealer
    for i, action in enumerate(actions, start=1):
        assert steps[i]["action"] == action["action"] and steps[i]["seat"] == action["seat"]
    winner = 0 if result == "seat0" else 1
    assert steps[-1]["over"] and steps[-1]["hands"][winner] == []
    assert data["replay"]["rules_outcome"] == winner
    for seat in (0, 1):  # the moves are listed, with cards drawn as suit symbols
        assert f"seat {seat}" in page
    assert 'id="btn-next"' in page and 'id="btn-play"' in page and "replay.js" in page
    # The embedded steps are exactly the API's (the page only packs them).
    full = client.get(f"/api/games/{world.won_game}").json()
    assert steps == full["replay"]["steps"]


def test_drawn_game_shows_the_automatic_final_cover_as_its_own_step(
    client: TestClient, world: World
) -> None:
    data = client.get(f"/api/games/{world.drawn_game}").json()
    steps = data["replay"]["steps"]
    last, before = steps[-1], steps[-2]
    assert data["result"] == "draw" and data["end_reason"] == "draw by final answer"
    assert last["auto"] and last["action"].startswith("cover ")
    cover = last["action"].split()[1]
    assert last["pile"][-1] == cover and before["pile"] == last["pile"][:-1]
    answerer = 1 - before["seat"]
    assert before["hands"][answerer] == [cover] and last["hands"] == [[], []]
    assert not before["over"] and last["over"]


def test_forfeit_and_voided_games_say_what_happened(client: TestClient, world: World) -> None:
    data = client.get(f"/api/games/{world.forfeit_game}").json()
    assert data["forfeit"]["reason"] == "timeout"
    assert data["players"][data["forfeit"]["seat"]]["bot"] == "charlie"
    assert data["result_text"].endswith("won") and "bravo" in data["result_text"]
    assert len(data["replay"]["steps"]) == 10 and not data["replay"]["steps"][-1]["over"]
    page = client.get(f"/games/{world.forfeit_game}").text
    assert "timeout" in page and 'id="forfeit"' in page
    voided = client.get(f"/games/{world.voided_game}").text
    assert "voided" in voided and "the sandbox host went away" in voided


def test_api_leaderboard_matches_the_standings(
    client: TestClient, filled: tuple[Database, World]
) -> None:
    db, world = filled
    with db.read_session() as session:
        expected = standings(session=session, tournament_id=world.running_tournament).to_dict()
    data = client.get(f"/api/leaderboard?tournament={world.running_tournament}").json()
    assert data["rows"] == expected["rows"]
    assert data["progress"]["games_done"] == 3 and data["progress"]["games_planned"] == 6
    assert data["tournament"]["name"] == RUNNING_NAME
    overall = client.get("/api/leaderboard").json()
    assert overall["tournament"] is None and overall["progress"]["voided"] == 1
    assert len(overall["rows"]) == 3


@pytest.mark.parametrize(
    "path",
    [
        "/games/0",
        "/games/abc",
        "/games/999999",
        "/games/99999999999999999999999",
        "/games/-1",
        "/submissions/999",
        "/submissions/x",
        "/tournaments/77",
        "/series/1e3",
        "/no/such/page",
        # Past PostgreSQL's INTEGER ids, and a NUL it cannot store: no row, not a 500.
        "/games/2147483648",
        "/tournaments/2147483648",
        "/series/2147483648",
        "/submissions/2147483648",
        "/bots/a%00b",
    ],
)
def test_bad_ids_give_a_404_page(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "<h1>Not found</h1>" in response.text
    assert "Traceback" not in response.text


@pytest.mark.parametrize(
    "path",
    [
        "/api/games/999999",
        "/api/games/zz",
        "/api/leaderboard?tournament=555",
        "/api/games/2147483648",
        "/api/leaderboard?tournament=2147483648",
    ],
)
def test_bad_ids_give_a_json_404_under_api(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert "error" in response.json() and response.json()["error"]


@pytest.mark.parametrize(
    ("query", "bad"),
    [
        ("ruleset=<script>", "'<script>'"),
        ("table_size=3", "the default ruleset seats 2 players, got 3"),
        ("ruleset=classic&table_size=9", "got 9"),
        ("ruleset=classic&table_size=%2B3", "'+3'"),
        ("ruleset=classic&table_size=99999999999999999999", "'99999999999999999999'"),
    ],
)
def test_a_filter_no_game_can_match_is_a_json_422(client: TestClient, query: str, bad: str) -> None:
    response = client.get(f"/api/leaderboard?{query}")
    assert response.status_code == 422
    assert bad in response.json()["error"]


def test_the_leaderboard_filters_by_table(client: TestClient) -> None:
    classic = client.get("/api/leaderboard?ruleset=classic&table_size=3")
    assert classic.status_code == 200 and classic.json()["rows"] == []  # no classic games here
    assert client.get("/api/leaderboard?ruleset=default").json()["rows"]


def test_a_tournaments_ruleset_decides_which_table_sizes_its_api_board_has(
    sqlite_world: tuple[str, World],
) -> None:
    path, _ = sqlite_world
    db = open_database(path, create=False)
    try:
        with db.session() as session:
            classic = create_tournament(
                TournamentSpec("tables", 7, {"ruleset": "classic", "table_size": 3}),
                session=session,
            )
            default = create_tournament(TournamentSpec("pairs", 8, {}), session=session)
            ids = (classic.id, default.id)
        with TestClient(create_app(db)) as client:
            # No ruleset named: the tournament's decides, so 3 seats are a classic board.
            for size in (3, 4):
                response = client.get(f"/api/leaderboard?tournament={ids[0]}&table_size={size}")
                assert response.status_code == 200, response.text
            response = client.get(f"/api/leaderboard?tournament={ids[1]}&table_size=3")
            assert response.status_code == 422
            assert "the default ruleset seats 2 players, got 3" in response.json()["error"]
    finally:
        db.close()


def test_static_files_are_served(client: TestClient) -> None:
    css = client.get("/static/style.css")
    js = client.get("/static/replay.js")
    assert css.status_code == 200 and ".card" in css.text
    assert js.status_code == 200 and "replay-data" in js.text


def test_unreachable_database_gives_a_503_with_the_reason() -> None:
    # Nothing listens on port 9: every query fails with a driver error.
    url = "postgresql+psycopg://kryt:secret@127.0.0.1:9/kryt"
    engine = create_engine(url, connect_args={"connect_timeout": 2})
    app = create_app(Database(url, engine))
    with TestClient(app) as unreachable:
        page = unreachable.get("/")
        api = unreachable.get("/api/leaderboard")
    assert page.status_code == 503 and "Database unavailable" in page.text
    assert "secret" not in page.text  # the password is masked in the message
    assert api.status_code == 503 and "127.0.0.1:9" in api.json()["error"]


def test_live_pages_of_running_tournaments_reload_themselves(
    client: TestClient, world: World
) -> None:
    refresh = '<meta http-equiv="refresh" content="30">'
    assert refresh in client.get("/").text  # the summer cup is running
    assert refresh in client.get(f"/tournaments/{world.running_tournament}").text
    assert refresh not in client.get(f"/tournaments/{world.finished_tournament}").text
    assert refresh not in client.get(f"/games/{world.won_game}").text


def test_long_series_lists_are_cut_with_a_note(
    client: TestClient, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "SERIES_ON_PAGE", 2)
    page = client.get(f"/tournaments/{world.finished_tournament}").text
    series = section(page, "Series")
    assert "Showing the first 2 of 3 series" in series
    assert len(re.findall(r'href="/series/\d+"', series)) == 2
    full = client.get(f"/tournaments/{world.running_tournament}").text
    assert 'id="series-cut"' not in full
