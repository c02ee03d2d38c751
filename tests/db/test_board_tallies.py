"""The boards' stored tallies (migration 0010), on SQLite and PostgreSQL: per-pair results
and forfeits kept up to date by record_game and record_games, rebuilt when a game is voided,
backfilled by the migration, and never trusted when they do not account for every counted
game (the standings then count the games themselves)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlalchemy as sa
from alembic import command
from sqlmodel import col

from arena.db import Database, record_game, record_games, void_game
from arena.db.elo import BoardTallies, board_tallies
from arena.db.migrate import alembic_config, current_revision, head_revision, upgrade_engine
from arena.db.migrate import main as migrate_main
from arena.db.models import Game
from arena.db.records import PairCounts
from arena.db.results import (
    aggregated_forfeit_counts,
    aggregated_pair_counts,
    forfeit_counts,
    pair_counts,
)
from referee.protocol.messages import GameEndReason
from tests.db.helpers import World, forfeit_game, game, void


def _tallies(db: Database, tournament_id: int | None = None) -> BoardTallies | None:
    with db.read_session() as session:
        return board_tallies(
            session=session, tournament_id=tournament_id, ruleset="default", players=2
        )


def _counted(db: Database) -> tuple[list[PairCounts], dict[int, dict[str, int]]]:
    with db.read_session() as session:
        return (
            aggregated_pair_counts(session=session),
            aggregated_forfeit_counts(session=session),
        )


def _record(db: Database, world: World) -> None:
    """Eight games: both seatings, draws, two forfeits, a voided attempt replayed."""
    with db.session() as s:
        for number in range(6):
            record, where = game(
                world, number, swap=number % 2 == 1, winner=None if number == 2 else number % 2
            )
            record_game(record, where, session=s)
        record_game(*forfeit_game(world, 6, 1), session=s)
        record_game(*void(world, 7), session=s)
        record, where = forfeit_game(world, 7, 0, GameEndReason.ILLEGAL_ACTION)
        record_game(record, replace(where, attempt=2), session=s)


def _store_by_hand(db: Database, **changes: object) -> None:
    """Store a copy of game 1 as game 8 of its series with ``changes``, around record_game."""
    with db.session() as s:
        row = s.get(Game, 1)
        assert row is not None
        copy = {c.name: getattr(row, c.name) for c in Game.__table__.columns}  # type: ignore[attr-defined]
        s.add(Game(**(copy | {"id": None, "number": 8} | changes)))


def test_recording_keeps_the_tallies_equal_to_the_games(db: Database, world: World) -> None:
    _record(db, world)
    tallies = _tallies(db)
    assert tallies is not None
    assert tallies.games == 8
    pairs, forfeits = _counted(db)
    assert (tallies.pairs, tallies.forfeits) == (pairs, forfeits)
    assert sum(c.draws for c in tallies.pairs) == 1
    assert tallies.forfeits == {world.sub_b: {"timeout": 1}, world.sub_a: {"illegal action": 1}}
    assert _tallies(db, world.tournament_id) == tallies  # one tournament: the same board


def test_voiding_a_game_rebuilds_the_tallies(db: Database, world: World) -> None:
    _record(db, world)
    with db.session() as s:
        forfeited = s.execute(
            sa.select(col(Game.id)).where(col(Game.end_reason) == "timeout")
        ).scalar_one()
        void_game(forfeited, "found broken", session=s)
    tallies = _tallies(db)
    assert tallies is not None
    assert tallies.games == 7
    assert (tallies.pairs, tallies.forfeits) == _counted(db)
    assert world.sub_b not in tallies.forfeits


def test_bulk_recording_keeps_the_same_tallies(db: Database, world: World) -> None:
    items = [game(world, n, swap=n % 3 == 0, winner=(None, 0, 1)[n % 3]) for n in range(5)]
    items.append(forfeit_game(world, 5, 0))
    with db.session() as s:
        record_games(items, session=s)
    tallies = _tallies(db)
    assert tallies is not None and tallies.games == 6
    assert (tallies.pairs, tallies.forfeits) == _counted(db)


def test_games_written_around_record_game_are_counted_from_the_games(
    db: Database, world: World
) -> None:
    _record(db, world)
    # A counted game stored by hand: the tallies do not know it, so they are not used.
    _store_by_hand(db, seat0_submission_id=world.sub_b, seat1_submission_id=world.sub_a)
    assert _tallies(db) is None
    with db.read_session() as s:
        assert pair_counts(session=s) == aggregated_pair_counts(session=s)
        assert forfeit_counts(session=s) == aggregated_forfeit_counts(session=s)
        assert sum(c.games for c in pair_counts(session=s)) == 9


def test_rebuild_boards_repairs_tallies_after_rows_written_around(
    db: Database, world: World, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(db, world)
    # A forfeit lost by b, stored by hand: the tallies miss it until they are rebuilt.
    _store_by_hand(db, result="seat0", end_reason="crash", forfeit_seat=1)
    assert _tallies(db) is None
    assert migrate_main(["rebuild-boards", database_url]) == 0
    assert "rebuilt 2 board(s)" in capsys.readouterr().out
    tallies = _tallies(db)
    assert tallies is not None and tallies.games == 9
    assert (tallies.pairs, tallies.forfeits) == _counted(db)
    assert tallies.forfeits[world.sub_b] == {"timeout": 1, "crash": 1}


def test_migration_0010_backfills_and_drops_the_tallies(db: Database, world: World) -> None:
    _record(db, world)
    before = _tallies(db), _tallies(db, world.tournament_id)
    assert before[0] is not None
    with db.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0009")
    with db.engine.connect() as connection:
        assert current_revision(connection) == "0009"
        assert not {"board_pairs", "board_forfeits"} & set(
            connection.dialect.get_table_names(connection)
        )
    assert upgrade_engine(db.engine, where="the test database") == head_revision()
    assert (_tallies(db), _tallies(db, world.tournament_id)) == before
