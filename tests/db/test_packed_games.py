"""Games of every shape come back from the database exactly as recorded, packed compactly.

The classic table (3 and 4 seats), CPU times on every move, a forfeit whose offending input
is no legal action: recorded through ``record_game``, read back with ``stored_record``,
taken down to revision 0005 (JSON) and up again.
"""

from __future__ import annotations

import random
from typing import Any

from alembic import command

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    find_games,
    record_game,
    series_of_tournament,
    stored_record,
    submit,
)
from arena.db.gamecodec import REPLAYED_VERSION
from arena.db.migrate import alembic_config, head_revision, upgrade_engine
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import Game
from tests.db.helpers import new_submission


def _table_series(db: Database, seats: int) -> tuple[int, tuple[int, ...]]:
    """A classic series of ``seats`` new submissions."""
    with db.session() as s:
        ids = []
        for seat in range(seats):
            name = f"table{seats}-seat{seat}"
            submission = submit(new_submission(name), session=s).submission
            assert submission.id is not None
            ids.append(submission.id)
        spec = SeriesSpec(ids[0], ids[1], 4, 5, ruleset="classic", seats=tuple(ids))
        tournament = create_tournament(
            TournamentSpec(f"table of {seats}", 3, series=[spec]), session=s
        )
        assert tournament.id is not None
        (series,) = series_of_tournament(tournament.id, session=s)
        assert series.id is not None
        return series.id, tuple(ids)


def _played(seed: int, seats: int, moves: int) -> tuple[tuple[str, ...], tuple[Move, ...]]:
    """``moves`` random moves of a classic table, with wall and CPU times."""
    rng = random.Random(seed)
    game: Any = Game.new(seed=seed, ruleset="classic", players=seats, dealer=0)
    played: list[Move] = []
    while not game.over and len(played) < moves:
        seat = game.to_move
        assert seat is not None
        action = rng.choice(game.legal_actions())
        game.play(action)
        wall, cpu = round(rng.uniform(1e-4, 0.02), 6), round(rng.uniform(0, 1e-3), 6)
        played.append(Move(seat, str(action), wall, cpu))
    return tuple(str(c) for c in game.deck), tuple(played)


def _table_records(seats: int) -> list[GameRecord]:
    names = tuple("abcd"[:seats])
    deck, moves = _played(seats, seats, 60)
    deck2, moves2 = _played(seats + 10, seats, 25)
    offender = seats - 1
    return [
        GameRecord(
            deck=deck,
            dealer=0,
            turn_limit=60,
            moves=moves,
            ending=GameEndReason.TURN_LIMIT,
            winner=None,
            players=names,
            started=1_780_000_000.5,
            finished=1_780_000_010.25,
            ruleset="classic",
            seats=seats,
        ),
        GameRecord(
            deck=deck2,
            dealer=0,
            turn_limit=500,
            moves=moves2,
            ending=GameEndReason.ILLEGAL_ACTION,
            winner=None,
            forfeit=Forfeit(offender, GameEndReason.ILLEGAL_ACTION, "cover 6C:6C ♠", "no"),
            players=names,
            started=1_780_000_020.5,
            finished=1_780_000_030.25,
            ruleset="classic",
            seats=seats,
            loser=offender,
            pairwise=tuple((s, offender) for s in range(seats) if s != offender),
        ),
        GameRecord(  # nobody could start: the record keeps why
            deck=deck2,
            dealer=1,
            turn_limit=500,
            moves=(),
            ending=GameEndReason.DOUBLE_FORFEIT,
            winner=None,
            players=names,
            started=1_780_000_040.5,
            finished=1_780_000_040.5,
            ruleset="classic",
            seats=seats,
            double_forfeit_detail="no bot could start: a crashed; b timed out",
        ),
    ]


def test_table_games_come_back_exactly_and_survive_the_migration(db: Database) -> None:
    expected = []
    for seats in (3, 4):
        series_id, ids = _table_series(db, seats)
        for number, record in enumerate(_table_records(seats)):
            with db.session() as s:
                place = GamePlace(series_id, number, 1, ids)
                assert record_game(record, place, session=s).created
            expected.append(record)
    with db.read_session() as s:
        games = find_games(session=s)
        # The replayed format: a few bytes a move even with two times each.
        assert all(g.packed[0] == REPLAYED_VERSION for g in games)
        assert all(len(g.packed) <= 20 + 4 * len(g.actions) for g in games)
        assert [g.move_count for g in games] == [len(r.moves) for r in expected]
        back = [stored_record(g, tuple("abcd"[: g.players])) for g in games]
    assert back == expected
    with db.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0005")
    assert upgrade_engine(db.engine, where="the test database") == head_revision()
    with db.read_session() as s:
        again = [stored_record(g, tuple("abcd"[: g.players])) for g in find_games(session=s)]
    assert again == expected
