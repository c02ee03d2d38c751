"""The pages show a tournament whose run is gone as ``kryt tournament status`` does:
``stopped``, and its series stored as running ``stopped`` too, not ``running`` forever (with
a page that reloads itself for a run that will never record another game)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from arena.db import open_database, release_lease, series_of_tournament
from leaderboard.web import create_app
from tests.web.test_app import section
from tests.web.world import RUNNING_HOLDER, World

REFRESH = 'http-equiv="refresh"'


@pytest.fixture
def pages(sqlite_world: tuple[str, World], request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """The web app over a world whose running tournament's run has stopped (``stopped``) or
    still holds its lease (``live``)."""
    path, world = sqlite_world
    db = open_database(f"sqlite:///{path}")
    try:
        if request.param == "stopped":
            with db.session() as session:
                assert release_lease(
                    world.running_tournament, RUNNING_HOLDER.runner_id, session=session
                )
        with TestClient(create_app(db)) as client:
            yield client
    finally:
        db.close()


@pytest.mark.parametrize(
    ("pages", "shown"), [("stopped", "stopped"), ("live", "running")], indirect=["pages"]
)
def test_pages_show_whether_a_run_plays_the_tournament(
    pages: TestClient, sqlite_world: tuple[str, World], shown: str
) -> None:
    _, world = sqlite_world
    tid = world.running_tournament
    other = "running" if shown == "stopped" else "stopped"

    index = pages.get("/").text
    tournaments = section(index, "Tournaments")
    row = tournaments[tournaments.index(f'href="/tournaments/{tid}"') :]
    row = row[: row.index("</tr>")]
    assert f'class="status-{shown}">{shown}<' in row and other not in row, row
    assert (REFRESH in index) == (shown == "running")

    page = pages.get(f"/tournaments/{tid}").text
    assert f'<strong class="status-{shown}">{shown}</strong>' in page
    assert f'class="status-{shown}">{shown}</td>' in section(page, "Series")
    assert (REFRESH in page) == (shown == "running")

    api = pages.get("/api/leaderboard", params={"tournament": tid}).json()
    assert api["tournament"]["status"] == shown

    path, _ = sqlite_world
    db = open_database(f"sqlite:///{path}")
    try:
        with db.read_session() as session:
            (series,) = series_of_tournament(tid, session=session)
            stored, series_id = series.status, series.id
    finally:
        db.close()
    assert stored == "running"  # as stored: only what is shown changes
    assert f"status {shown}" in pages.get(f"/series/{series_id}").text
    bravo = pages.get(f"/submissions/{world.submissions['bravo']}").text
    series_row = bravo[bravo.index(f'href="/series/{series_id}"') :]
    series_row = series_row[: series_row.index("</tr>")]
    assert f'class="status-{shown}">{shown}</td>' in series_row, series_row


@pytest.mark.parametrize("pages", ["stopped"], indirect=True)
def test_a_finished_tournament_is_finished_whoever_held_it(
    pages: TestClient, sqlite_world: tuple[str, World]
) -> None:
    _, world = sqlite_world
    page = pages.get(f"/tournaments/{world.finished_tournament}").text
    assert '<strong class="status-finished">finished</strong>' in page
