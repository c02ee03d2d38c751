"""Running the CLI in process, as a user would from a shell."""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path

import pytest

from arena.db import (
    SeriesStatus,
    TournamentStatus,
    open_database,
    record_game,
    set_series_status,
    set_tournament_status,
)
from kryt.cli import main
from leaderboard.gamefile import GameEntry, Seat
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, Move
from tests.db.helpers import build_world, game, replayable


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kryt ARGS...``: its exit status, standard output and standard error."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flat(text: str) -> str:
    """``text`` with every run of white space one space (a rich line wraps anywhere)."""
    return re.sub(r"\s+", " ", text)


def finished_games_db(tmp_path: Path) -> Path:
    """A SQLite file with a finished tournament of two games between alpha and bravo."""
    path = tmp_path / "games.db"
    database = open_database(f"sqlite:///{path}")
    world = build_world(database, games=2)
    with database.session() as s:
        for number in (1, 2):
            record_game(*game(world, number), session=s)
        set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
        set_tournament_status(world.tournament_id, TournamentStatus.FINISHED, session=s)
    database.close()
    return path


def game_entry(
    number: int = 1, *, seats: tuple[Seat, Seat], deck: tuple[str, ...], position: int = 0
) -> GameEntry:
    """A two-move game of a file's tournament 'cup' between ``seats`` (as a game file holds
    it), dealt from ``deck``."""
    record = GameRecord(
        deck,
        0,
        200,
        (Move(0, "lead 6H", 0.012), Move(1, "take", 0.5)),
        GameEndReason.OUT,
        1,
        players=(seats[0].label, seats[1].label),
        started=1.7e9,
        finished=1.7e9 + 2,
    )
    return GameEntry(
        record=replayable(record),  # an import replays every game by the rules
        seats=seats,
        number=number,
        attempt=1,
        tournament="cup",
        tournament_seed=7,
        tournament_status="finished",
        series_position=position,
        series_format="standard",
        series_games=2,
        series_seed=123456789012,
        series_status="finished",
        series_a_seat=0,
    )


def table_counts(db: Path) -> dict[str, int]:
    """Rows of the tables a game file's import writes."""
    with sqlite3.connect(db) as connection:
        return {
            t: connection.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("submissions", "tournaments", "series", "games")
        }


def counted_games(db: Path) -> int:
    """The games of the SQLite file ``db`` that count (not voided)."""
    with sqlite3.connect(db) as connection:
        (count,) = connection.execute("SELECT count(*) FROM games WHERE NOT voided").fetchone()
    connection.close()
    return int(count)


class HttpAnswer(io.BytesIO):
    """An HTTP 200 answer as ``urllib.request.urlopen`` gives it (a context manager), for
    tests that stand in for a server."""

    def __enter__(self) -> HttpAnswer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
