"""Which board a leaderboard shows when the caller leaves it open, and what an empty board
says: a database of classic tables alone used to show an empty default board captioned
"16/16 games played" with the note "no games recorded yet" (CLI, JSON and the web API)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from kryt.commands.leaderboard import app
from leaderboard.standings import Leaderboard, standings
from leaderboard.web import create_app
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, Move
from referee.rules import shuffled_deck
from tests.standings.test_standings import play, setup

DECK = tuple(str(c) for c in shuffled_deck(5))
T0 = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
runner = CliRunner()


def submissions(db: Database, names: list[str]) -> list[int]:
    ids = []
    with db.session() as session:
        for i, name in enumerate(names):
            row = submit(
                NewSubmission(bot_name=name, version="1", sha256=f"{i:064x}", submitted_by="t"),
                session=session,
            ).submission
            assert row.id is not None
            ids.append(row.id)
    return ids


def table_tournament(db: Database, name: str, seats: list[int], games: int) -> int:
    """A classic tournament at a table of ``len(seats)`` whose ``games`` games all end with
    the last seat holding cards (it loses to every other seat)."""
    size = len(seats)
    with db.session() as session:
        tournament = create_tournament(
            TournamentSpec(
                name=name,
                seed=1,
                config={"ruleset": "classic", "table_size": size},
                series=[
                    SeriesSpec(seats[0], seats[1], games, 7, ruleset="classic", seats=tuple(seats))
                ],
            ),
            session=session,
        )
        assert tournament.id is not None
        tournament_id = tournament.id
    with db.read_session() as session:
        series_id = series_of_tournament(tournament_id, session=session)[0].id
        assert series_id is not None
    loser = size - 1
    with db.session() as session:
        for number in range(1, games + 1):
            record_game(
                GameRecord(
                    deck=DECK,
                    dealer=number % size,
                    turn_limit=500,
                    moves=(Move((number + 1) % size, "lead 6C", 0.01),),
                    ending=GameEndReason.LAST_HOLDER,
                    winner=0 if size == 2 else None,  # two seats: the other one wins
                    referee_version="test",
                    players=tuple(f"p{s}" for s in range(size)),
                    started=T0,
                    finished=T0 + number,
                    ruleset="classic",
                    seats=size,
                    loser=loser,
                    pairwise=tuple((s, loser) for s in range(size) if s != loser),
                ),
                GamePlace(series_id, number, 1, tuple(seats)),
                session=session,
            )
    return tournament_id


def board(db: Database, **options: object) -> Leaderboard:
    with db.read_session() as session:
        return standings(session=session, **options)  # type: ignore[arg-type]


def test_a_database_of_one_classic_board_shows_that_board_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    db = open_database(f"sqlite:///{path}")
    ids = submissions(db, ["alpha", "bravo", "charlie"])
    table_tournament(db, "tables", ids, 4)

    shown = board(db)  # nothing chosen: the only board with games
    assert (shown.ruleset, shown.table_size, shown.games) == ("classic", 3, 4)
    assert shown.rows and shown.fit is not None and "no games" not in shown.note
    assert board(db, ruleset="classic").rows == shown.rows  # the size left open too

    result = runner.invoke(app, ["--database", str(path)])
    assert result.exit_code == 0, result.output
    assert "(classic, table of 3)" in result.stdout and "charlie" in result.stdout
    assert "4/4 games played" in result.stdout
    assert "no games recorded yet" not in result.stdout

    as_json = runner.invoke(app, ["--database", str(path), "--json"])
    data = json.loads(as_json.stdout)
    assert data["board"] == {"ruleset": "classic", "table_size": 3, "games": 4}
    assert data["rows"] == shown.to_dict()["rows"] and data["other_boards"] == []

    with TestClient(create_app(db)) as client:
        api = client.get("/api/leaderboard").json()
        assert api["board"] == data["board"] and api["rows"] == data["rows"]
        by_ruleset = client.get("/api/leaderboard?ruleset=classic").json()
        assert by_ruleset["board"] == data["board"] and by_ruleset["rows"] == data["rows"]
        page = client.get("/").text
        assert "Board: classic, table of 3 seats" in page and ">charlie</a>" in page
    db.close()


def test_an_empty_board_names_the_boards_that_have_games(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    db = open_database(f"sqlite:///{path}")
    ids = submissions(db, ["alpha", "bravo", "charlie", "delta"])
    table_tournament(db, "threes", ids[:3], 2)
    table_tournament(db, "fours", ids, 3)

    for options in ({}, {"ruleset": "classic"}):  # two boards fit: none is picked
        empty = board(db, **options)
        assert empty.rows == [] and empty.fit is None and empty.games == 0
        assert "no games recorded yet" not in empty.note
        assert "--ruleset classic --table-size 3" in empty.note
        assert "--ruleset classic --table-size 4" in empty.note
        assert [(b.ruleset, b.table_size, b.games) for b in empty.other_boards] == [
            ("classic", 3, 2),
            ("classic", 4, 3),
        ]
    chosen = board(db, ruleset="classic", table_size=4)
    assert (chosen.ruleset, chosen.table_size, chosen.games) == ("classic", 4, 3) and chosen.rows

    result = runner.invoke(app, ["--database", str(path)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())  # the caption wraps
    assert "0 games on this board (default game); all boards: 5/5 games played" in out
    assert "--ruleset classic --table-size 4" in out
    data = json.loads(runner.invoke(app, ["--database", str(path), "--json"]).stdout)
    assert data["board"] == {"ruleset": "default", "table_size": 2, "games": 0}
    assert data["other_boards"] == [
        {"ruleset": "classic", "table_size": 3, "games": 2},
        {"ruleset": "classic", "table_size": 4, "games": 3},
    ]
    with TestClient(create_app(db)) as client:
        assert client.get("/api/leaderboard").json()["note"] == data["note"]
    db.close()


def test_a_board_chosen_in_full_is_shown_even_when_empty(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'c.db'}")
    ids = submissions(db, ["alpha", "bravo", "charlie"])
    table_tournament(db, "tables", ids, 2)
    empty = board(db, ruleset="default", table_size=2)
    assert empty.rows == [] and (empty.ruleset, empty.table_size) == ("default", 2)
    assert "no games on this board (default game)" in empty.note
    assert "classic, table of 3: 2 games (--ruleset classic --table-size 3)" in empty.note
    db.close()


def test_the_progress_line_says_when_the_board_holds_only_some_of_the_games(
    tmp_path: Path,
) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "bravo", "charlie"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "draw"])
    table_tournament(db, "tables", ids, 2)
    path = str(tmp_path / "k.db")
    result = runner.invoke(app, ["--database", path])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    # 3 default games on the board shown; the progress counts the 2 table games as well.
    assert "3 games on this board (default game); all boards: 5/" in out
    tables = runner.invoke(app, ["--database", path, "--ruleset", "classic", "--table-size", "3"])
    assert "2 games on this board (classic, table of 3); all boards: 5/" in " ".join(
        tables.stdout.split()
    )
    db.close()
