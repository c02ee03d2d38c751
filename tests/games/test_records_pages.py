"""A game's web page shows what a bot controls (its crash message, what it sent, a void
reason, an action an older import stored) with control and format characters made visible,
as ``kryt replay`` does, and escaped once for HTML: no ESC or BEL byte, no right-to-left
override reversing the text on screen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
    void_game,
)
from leaderboard.web.pages import game_page
from leaderboard.web.render import Links
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.db.helpers import build_world, deck, forfeit_game, game, new_submission

HOSTILE = "\x1b[2J\x1b]0;PWNED\x07<script>x</script>\r\nFAKE \u202e txet"
SHOWN = "\\x1b[2J\\x1b]0;PWNED\\x07&lt;script&gt;x&lt;/script&gt;\\x0d\nFAKE \\u202e txet"
"""HOSTILE as the page shows it: made printable, then HTML-escaped once (newlines kept)."""


def visible(page: str) -> str:
    """The page without the replay data its script reads (a JSON string there is data)."""
    return re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.S)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_database(f"sqlite:///{tmp_path / 'pages.db'}")
    try:
        yield database
    finally:
        database.close()


def test_a_forfeit_and_a_void_reason_are_shown_escaped(db: Database) -> None:
    world = build_world(db, games=3)
    with db.session() as s:
        crash = forfeit_game(
            world, 1, 0, GameEndReason.CRASH, offending_input=HOSTILE, detail=HOSTILE
        )
        record_game(*crash, session=s)
        record_game(*game(world, 2), session=s)
        void_game(2, f"audit {HOSTILE}", session=s)
        stored = record_game(
            *game(world, 3, moves=(Move(1, "lead \x1b[31m6C\u202e", 0.1),)), session=s
        )
        assert stored.game.id == 3
    with db.read_session() as s:
        pages = [visible(game_page(n, session=s, links=Links())) for n in (1, 2, 3)]
    for page in pages:
        assert "\x1b" not in page and "\x07" not in page and "\u202e" not in page
        assert "\r" not in page and "&amp;lt;" not in page  # escaped once, not twice
    assert pages[0].count(SHOWN) == 2  # the detail, and what it sent
    one_line = SHOWN.replace("\\x0d\n", "\\x0d\\x0a")  # a void reason keeps no newline
    assert f"<dd>audit {one_line}</dd>" in pages[1]
    # An action an older import stored (the replay stops at it: its error names it).
    assert "Replay incomplete:" in pages[2] and "\\x1b[31m" in pages[2]


def test_a_table_page_shows_its_actions_escaped(db: Database) -> None:
    with db.session() as s:
        ids = []
        for name in ("alpha", "bravo", "charlie"):
            sub = submit(new_submission(name), session=s).submission
            assert sub.id is not None
            ids.append(sub.id)
        spec = SeriesSpec(ids[0], ids[1], 1, 5, ruleset="classic", seats=tuple(ids))
        tournament = create_tournament(
            TournamentSpec(name="table \u202e cup", seed=3, config={}, series=[spec]), session=s
        )
        assert tournament.id is not None
        (series,) = series_of_tournament(tournament.id, session=s)
        assert series.id is not None
        record = GameRecord(
            tuple(deck(5)),
            0,
            300,
            (Move(1, "lead \x1b[31m6C", 0.1),),
            GameEndReason.ILLEGAL_ACTION,
            None,
            forfeit=Forfeit(1, GameEndReason.ILLEGAL_ACTION, HOSTILE, HOSTILE),
            players=("a", "b", "c"),
            started=1.7e9,
            finished=1.7e9 + 1,
            ruleset="classic",
            seats=3,
            loser=1,
            pairwise=((0, 1), (2, 1)),
        )
        stored = record_game(record, GamePlace(series.id, 1, 1, tuple(ids)), session=s)
        game_id = stored.game.id
        assert game_id is not None
    with db.read_session() as s:
        page = game_page(game_id, session=s, links=Links())
    shown = visible(page)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "table \\u202e cup" in shown and shown.count(SHOWN) == 2
    assert "<td>lead \\x1b[31m6C</td>" in shown and "&amp;lt;" not in shown
