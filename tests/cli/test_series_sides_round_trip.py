"""A series' sides survive ``kryt games export`` then ``kryt games import``.

A series is between bot A and bot B (its first and second submission: the pair's order,
which the standings and the seed derivation use); each game seats them in either order, and
the game file says which seat A holds (``SeriesASeat``, docs/games-format.md). A mutation
review found that neither the export writing ``0`` always nor the import ignoring the header
was noticed: both would swap A and B of an imported series whose first game seats B first.
Here the first game recorded seats B first, and the imported series must name the same A and
B (by content hash) as the exporting database.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.db import (
    GamePlace,
    SeriesStatus,
    TournamentStatus,
    get_submission,
    list_tournaments,
    open_database,
    record_game,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
)
from referee.record import GameRecord
from tests.cli.helpers import kryt
from tests.db.helpers import build_world, game, replayable


def _sides(path: Path) -> list[tuple[str, str]]:
    """Each series' (A's sha256, B's sha256), in tournament and series order."""
    db = open_database(f"sqlite:///{path}", create=False)
    try:
        with db.read_session() as s:
            sides = []
            for tournament in list_tournaments(session=s):
                assert tournament.id is not None
                for series in series_of_tournament(tournament.id, session=s):
                    a = get_submission(series.submission_a_id, session=s).sha256
                    b = get_submission(series.submission_b_id, session=s).sha256
                    sides.append((a, b))
            return sides
    finally:
        db.close()


@pytest.mark.parametrize("suffix", [".kgn", ".json"])
def test_a_series_whose_first_game_seats_b_first_keeps_its_sides(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str
) -> None:
    source = tmp_path / "source.db"
    db = open_database(f"sqlite:///{source}")
    world = build_world(db, games=2)
    with db.session() as s:
        a_sha = get_submission(world.sub_a, session=s).sha256
        b_sha = get_submission(world.sub_b, session=s).sha256
        # Game 1 seats B at seat 0 and A at seat 1; game 2 the other way round.
        record_game(*_legal(game(world, 1, swap=True)), session=s)
        record_game(*_legal(game(world, 2)), session=s)
        set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
        set_tournament_status(world.tournament_id, TournamentStatus.FINISHED, session=s)
    db.close()
    assert _sides(source) == [(a_sha, b_sha)]

    file = tmp_path / f"games{suffix}"
    code, _, err = kryt(capsys, "games", "export", str(file), "-d", str(source))
    assert code == 0, err
    text = file.read_text(encoding="utf-8")
    if suffix == ".kgn":
        # The docs' header: which seat A holds in that game, game by game.
        headers = re.findall(r'\[SeriesASeat "(\d)"\]', text)
        assert headers == ["1", "0"], headers

    target = tmp_path / "target.db"
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == 0, err
    assert _sides(target) == [(a_sha, b_sha)]


def _legal(made: tuple[GameRecord, GamePlace]) -> tuple[GameRecord, GamePlace]:
    """A game of the helpers with moves the rules replay (an import replays every game)."""
    record, place = made
    return replayable(record), place
