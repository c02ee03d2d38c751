"""Migration 0007 (compact games) packs every game's deck and moves, and unpacks them back.

Games are recorded through the code at head, the database is taken down to revision 0005
(JSON ``deck`` and ``actions``) and up again; the export, the replayed records and the
packed bytes must come back identical, and the JSON rows of 0005 must hold every value.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import Connection

from arena.db import Database, find_games, open_database, record_game, stored_record
from arena.db.migrate import alembic_config, current_revision, head_revision, upgrade_engine
from leaderboard.gamefile import format_games
from leaderboard.games_io import export_entries
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, Move
from referee.rules import Game
from tests.db.helpers import build_world, forfeit_game, game, void


def _random_moves(seed: int) -> tuple[tuple[str, ...], tuple[Move, ...]]:
    """A random game played to its end, with measured-looking wall and CPU times."""
    rng = random.Random(seed)
    played = Game.new(seed=seed, dealer=0)
    moves = []
    while not played.over:
        seat = played.to_move
        assert seat is not None
        action = rng.choice(played.legal_actions())
        played.play(action)
        cpu = round(rng.uniform(0, 0.002), 6) if seed % 2 else None
        moves.append(Move(seat, str(action), round(rng.uniform(0.0002, 0.05), 6), cpu))
    assert played.deck is not None
    return tuple(str(c) for c in played.deck), tuple(moves)


def _records(db: Database) -> list[tuple[GameRecord, Any]]:
    world = build_world(db, games=8)
    deck, moves = _random_moves(1)
    deck2, moves2 = _random_moves(2)
    return [
        game(world, 0),  # its moves include text that is no canonical action
        game(world, 1, deck=deck, moves=moves),
        game(world, 2, deck=deck2, moves=moves2[:40], winner=None),
        forfeit_game(world, 3, 1, GameEndReason.ILLEGAL_ACTION, offending_input="lead 6D"),
        forfeit_game(world, 4, 0, GameEndReason.MALFORMED_REPLY, offending_input="b'\\xff'"),
        void(world, 5, "the sandbox host went away"),
        game(world, 6, moves=()),
    ]


@pytest.fixture
def recorded(db: Database) -> Iterator[Database]:
    """A database at head holding games of every kind, recorded through the code."""
    for record, where in _records(db):
        with db.session() as s:
            assert record_game(record, where, session=s).created
    yield db


def _snapshot(db: Database) -> tuple[str, list[GameRecord], list[bytes]]:
    """The export text, the records for replay and the packed bytes of every game."""
    with db.read_session() as s:
        games = find_games(session=s)
        text = format_games(export_entries(games, session=s))
        return text, [stored_record(g) for g in games], [g.packed for g in games]


def _json_rows(connection: Connection) -> dict[int, tuple[Any, Any]]:
    rows = connection.execute(sa.text("SELECT id, deck, actions FROM games ORDER BY id"))
    return {int(i): (_load(d), _load(a)) for i, d, a in rows}


def _load(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _columns(connection: Connection) -> set[str]:
    return {c["name"] for c in sa.inspect(connection).get_columns("games")}


def _down_to_0005(db: Database) -> None:
    with db.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0005")
    with db.engine.connect() as connection:
        assert current_revision(connection) == "0005"
        assert {"deck", "actions"} <= _columns(connection)
        assert "packed" not in _columns(connection)


def test_down_and_up_again_keeps_export_replay_and_bytes(recorded: Database) -> None:
    text, records, packed = _snapshot(recorded)
    assert len(records) == 7 and "cover 7C lead 8D" in text
    assert any(m.cpu_seconds is not None for r in records for m in r.moves)
    _down_to_0005(recorded)
    with recorded.engine.connect() as connection:
        rows = _json_rows(connection)
    # 0005's JSON holds every value of every move, in the shape 0005's code wrote.
    for (deck, actions), record in zip(rows.values(), records, strict=True):
        assert deck == list(record.deck)
        assert actions == [
            {"seat": m.seat, "action": m.action, "seconds": m.seconds}
            | ({} if m.cpu_seconds is None else {"cpu": m.cpu_seconds})
            for m in record.moves
        ]
    assert upgrade_engine(recorded.engine, where="the test database") == head_revision()
    assert _snapshot(recorded) == (text, records, packed)


def test_values_written_by_older_code_survive_both_ways(recorded: Database) -> None:
    _down_to_0005(recorded)
    odd = [
        {"seat": 1, "action": "cover 7C:9C 7S:6H", "seconds": 2},  # a whole number
        {"seat": 0, "action": "lead 6C  ", "seconds": 0.1234567891, "cpu": 1e-7},
        {"seat": 1, "action": "ход ♠", "seconds": 0.0, "cpu": 0.25},
    ]
    with recorded.engine.begin() as connection:
        statement = sa.text("UPDATE games SET actions = :actions WHERE id = 1")
        connection.execute(statement.bindparams(sa.bindparam("actions", odd, type_=sa.JSON())))
        before = _json_rows(connection)
    assert upgrade_engine(recorded.engine, where="the test database") == head_revision()
    with recorded.read_session() as s:
        first = find_games(session=s)[0]
        assert first.actions == odd
        assert stored_record(first).moves == (
            Move(1, "cover 7C:9C 7S:6H", 2.0),
            Move(0, "lead 6C  ", 0.1234567891, 1e-7),
            Move(1, "ход ♠", 0.0, 0.25),
        )
    _down_to_0005(recorded)
    with recorded.engine.connect() as connection:
        assert _json_rows(connection) == before


def test_a_migrated_database_opens_at_head(recorded: Database) -> None:
    _down_to_0005(recorded)
    db = open_database(recorded.url)  # upgrades on open, as for any user
    try:
        with db.engine.connect() as connection:
            assert current_revision(connection) == head_revision()
            assert {"deck", "actions"}.isdisjoint(_columns(connection))
        with db.read_session() as s:
            assert len(find_games(session=s)) == 7
    finally:
        db.close()
