"""Mutation review of what leaves the database: the game file's headers and the CSV export
(docs/games-format.md), checked field by field against the games the test recorded, and the
packed form of a game (arena.db.gamecodec) against what went in."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.db import Database, find_games, open_database, record_game, void_game
from arena.db.gamecodec import Table, pack, unpack
from leaderboard.gamefile import format_games, headers, parse_games, to_csv
from leaderboard.games_io import export_entries
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, Move
from tests.db.helpers import World, build_world, deck, game


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_database(f"sqlite:///{tmp_path}/kryt.db")
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def world(db: Database) -> World:
    return build_world(db)


def _entries(db: Database) -> dict[int, tuple[int, dict[str, str], list[str]]]:
    """number -> (series_a_seat, headers, CSV row) of every stored game."""
    with db.read_session() as s:
        entries = export_entries(find_games(session=s), session=s)
    rows = list(csv.reader(io.StringIO(to_csv(entries))))
    assert rows[0][:11] == [
        "game_id",
        "tournament",
        "tournament_id",
        "series_id",
        "game",
        "attempt",
        "seat0",
        "seat0_version",
        "seat1",
        "seat1_version",
        "dealer",
    ]
    by_game = {int(row[4]): row for row in rows[1:]}
    return {e.number: (e.series_a_seat, headers(e), by_game[e.number]) for e in entries}


def test_export_says_who_sat_where_and_who_won(db: Database, world: World) -> None:
    """Seat0/Seat1 and the CSV's seat columns name the bots in those seats; Result 1-0 is
    seat 0's win, 0-1 seat 1's, 1/2-1/2 a draw; SeriesASeat is the seat of the series'
    first bot (alpha) in that game; ForfeitSeat is the offender's seat."""
    with db.session() as s:
        record_game(*game(world, 1, winner=0), session=s)  # alpha seat 0 wins
        record_game(*game(world, 2, winner=0, swap=True), session=s)  # bravo seat 0 wins
        record_game(*game(world, 3, winner=None), session=s)
        record_game(
            *game(
                world,
                4,
                winner=0,
                swap=True,
                ending=GameEndReason.TIMEOUT,
                forfeit=Forfeit(1, GameEndReason.TIMEOUT, "", "slow"),
            ),
            session=s,
        )
    found = _entries(db)
    a_seat, head, row = found[1]
    assert (a_seat, head["SeriesASeat"], head["Seat0"], head["Seat1"]) == (0, "0", "alpha", "bravo")
    assert (head["Result"], row[6], row[8], row[11]) == ("1-0", "alpha", "bravo", "1-0")
    a_seat, head, row = found[2]
    assert (a_seat, head["SeriesASeat"], head["Seat0"], head["Seat1"]) == (1, "1", "bravo", "alpha")
    assert (head["Result"], row[6], row[8], row[11]) == ("1-0", "bravo", "alpha", "1-0")
    assert found[3][1]["Result"] == "1/2-1/2" and found[3][2][11] == "1/2-1/2"
    a_seat, head, row = found[4]
    assert (head["Seat0"], head["Result"], head["ForfeitSeat"], row[13]) == (
        "bravo",
        "1-0",
        "1",
        "1",
    )
    assert (head["Ending"], row[12]) == ("timeout", "timeout")


def test_a_game_voided_after_recording_exports_the_result_it_had(
    db: Database, world: World
) -> None:
    """Result "*" and Ending "void", with VoidedResult/VoidedEnding what it was played to
    (here seat 1's win by going out) and the void reason; it reads back the same."""
    with db.session() as s:
        record_game(*game(world, 1, winner=1), session=s)
        (stored,) = find_games(session=s)
        assert stored.id is not None
        void_game(stored.id, "sandbox fault found later", session=s)
    with db.read_session() as s:
        (entry,) = export_entries(find_games(session=s), session=s)
    head = headers(entry)
    assert (head["Result"], head["Ending"]) == ("*", "void")
    assert (head["VoidedResult"], head["VoidedEnding"]) == ("0-1", "out")
    assert head["VoidReason"] == "sandbox fault found later"
    assert parse_games(format_games([entry])) == [entry]


def test_packed_games_come_back_exactly() -> None:
    """The general format keeps seats 2 and 3 of a table, times that are not whole
    microseconds, and the deal; the replayed format keeps the deal too."""
    cards = tuple(deck(11))
    moves = (
        Move(0, "lead 6C", 0.25),
        Move(3, "take", 1.0 / 3, 0.1),
        Move(2, "cover 7C:8C", 1e-7),
        Move(1, "not an action at all", 2.5),
    )
    assert unpack(pack(cards, moves)).moves == moves
    assert unpack(pack(cards, moves)).deck == cards
    for seed in range(5):
        other = tuple(deck(seed))
        assert unpack(pack(other, (), Table(0, 100)), Table(0, 100)).deck == other
