"""A version (or a description) stored with control or format characters is shown with
them made visible.

``bot.toml`` restricts a version to ``[0-9A-Za-z.+_-]``, but the database takes any text
(a direct ``arena.db.submit``, a database filled by an older release): the pages must treat
it as every other bot text, as the CLI does, so a bidi override cannot reorder a standings
row and an escape sequence reaches no terminal that a saved page is printed on. Checked on
every page that names a version: the standings, a bot's, a submission's, a series' and a
game's (its seat list, its result line and the replay viewer's data).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db import (
    Database,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    open_database,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    submit,
)
from arena.db.enums import SeriesStatus
from leaderboard.standings import refit_and_store
from leaderboard.web import create_app
from tests.web.world import T0, _record, play

BIDI_VERSION = "1.0\u202e2.0"
"""A right-to-left override in the middle: shown raw, it reverses the rest of the line."""
ESCAPE_VERSION = "2.0\x1b[2J\x1b]0;owned\x07"
"""Clear-screen and retitle sequences."""
DESCRIPTION = "plays\u202e backwards\x1b]0;owned\x07\nsecond\u2028line\u200b"
"""A description with the same characters, shown on the submission pages, beside a line
separator and a zero-width space that ``bot.toml`` accepts (shown as written)."""
RAW = ("\u202e", "\x1b", "\x07")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, int]]]:
    """Two bots with hostile versions, a finished series of two games between them."""
    path: Path = tmp_path_factory.mktemp("versions") / "kryt.db"
    db: Database = open_database(f"sqlite:///{path}")
    try:
        ids: dict[str, int] = {}
        with db.session() as s:
            for name, version in (("rtl", BIDI_VERSION), ("esc", ESCAPE_VERSION)):
                row = submit(
                    NewSubmission(
                        bot_name=name,
                        version=version,
                        sha256=hashlib.sha256(name.encode()).hexdigest(),
                        submitted_by="tester",
                        # A manifest stored as is: bot.toml refuses such a description.
                        manifest={"name": name, "version": version, "description": DESCRIPTION},
                    ),
                    session=s,
                ).submission
                assert row.id is not None
                ids[name] = row.id
            cup = create_tournament(
                TournamentSpec(
                    name="cup",
                    seed=3,
                    config={"turn_limit": 1000},
                    series=[SeriesSpec(ids["rtl"], ids["esc"], 2, 1)],
                ),
                session=s,
            )
            assert cup.id is not None
            (series,) = series_of_tournament(cup.id, session=s)
            assert series.id is not None
            ids["series"] = series.id
            ids["tournament"] = cup.id
        seats = [(ids["rtl"], ids["esc"]), (ids["esc"], ids["rtl"])]
        for number in range(2):
            ids[f"game{number}"] = _record(
                db,
                ids["series"],
                number,
                seats[number],
                play(40 + number, number % 2),
                at=T0 + timedelta(minutes=number),
            )
        with db.session() as s:
            set_series_status(ids["series"], SeriesStatus.FINISHED, session=s)
            set_tournament_status(ids["tournament"], TournamentStatus.FINISHED, session=s)
        refit_and_store(db, tournament_id=ids["tournament"])
        with TestClient(create_app(db)) as client:
            yield client, ids
    finally:
        db.close()


def _pages(ids: dict[str, int]) -> list[str]:
    return [
        "/",
        f"/tournaments/{ids['tournament']}",
        "/bots/rtl",
        "/bots/esc",
        f"/submissions/{ids['rtl']}",
        f"/submissions/{ids['esc']}",
        f"/series/{ids['series']}",
        f"/games/{ids['game0']}",
        f"/games/{ids['game1']}",
    ]


def test_no_page_holds_a_raw_control_or_format_character(
    site: tuple[TestClient, dict[str, int]],
) -> None:
    client, ids = site
    for url in _pages(ids):
        response = client.get(url)
        assert response.status_code == 200, url
        for char in RAW:
            assert char not in response.text, f"raw {char!r} on {url}"


def test_each_page_names_the_versions_with_their_characters_visible(
    site: tuple[TestClient, dict[str, int]],
) -> None:
    client, ids = site
    bidi_shown = "1.0\\u202e2.0"
    escape_shown = "2.0\\x1b[2J\\x1b]0;owned\\x07"
    for url, expected in (
        ("/", (bidi_shown, escape_shown)),
        ("/bots/rtl", (bidi_shown,)),
        ("/bots/esc", (escape_shown,)),
        (f"/submissions/{ids['rtl']}", (bidi_shown,)),
        (f"/submissions/{ids['esc']}", (escape_shown,)),
        (f"/games/{ids['game0']}", (bidi_shown, escape_shown)),
    ):
        html = client.get(url).text
        for shown in expected:
            assert shown in html, f"{shown!r} not on {url}"


def test_the_replay_viewer_gets_the_visible_form(
    site: tuple[TestClient, dict[str, int]],
) -> None:
    client, ids = site
    html = client.get(f"/games/{ids['game0']}").text
    data = html.split('<script type="application/json" id="replay-data">', 1)[1]
    data = json.loads(data.split("</script>", 1)[0])
    versions = {p["bot"]: p["version"] for p in data["players"]}
    assert versions == {"rtl": "1.0\\u202e2.0", "esc": "2.0\\x1b[2J\\x1b]0;owned\\x07"}


def test_a_stored_description_is_shown_with_its_characters_visible(
    site: tuple[TestClient, dict[str, int]],
) -> None:
    client, ids = site
    html = client.get(f"/submissions/{ids['rtl']}").text
    shown = html.split('<p class="description">', 1)[1].split("</p>", 1)[0]
    assert shown == "plays\\u202e backwards\\x1b]0;owned\\x07\nsecond\u2028line\u200b", shown
