"""Migration 0002 (one game record) moves every old value to its new place, and back.

A database is created at revision 0001 and filled with raw SQL in the old shape (the forfeit
reason in ``forfeit_reason``, the detail glued to the offending input, the automatic final
cover as a fake ``auto`` move, the turn limit only in the tournament's config), then
upgraded to head the way :func:`arena.db.open_database` does it, and downgraded again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from arena.db import (
    ConflictError,
    Database,
    Game,
    GamePlace,
    forfeit_counts,
    get_game,
    open_database,
    record_game,
    stored_record,
)
from arena.db.gamecodec import Table, unpack
from arena.db.migrate import alembic_config, current_revision, head_revision, upgrade_engine
from arena.db.models import metadata
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, Move
from tests.db.helpers import deck

T0 = datetime(2026, 6, 1, 9, 30, 0, 250000, tzinfo=UTC)
CUP, FRIENDLY = 1, 2  # tournaments: turn_limit 77 in its config / no turn limit given
CUP_SERIES, FRIENDLY_SERIES = 10, 20
ALPHA, BRAVO = 100, 200  # submissions


def _move(seat: int, action: str, seconds: float, *, auto: bool = False) -> dict[str, Any]:
    return {"seat": seat, "action": action, "seconds": seconds, "auto": auto}


def _game(
    game_id: int, series_id: int, number: int, *, attempt: int = 1, **values: Any
) -> dict[str, Any]:
    """An old-shape (revision 0001) games row; ``values`` override the columns."""
    at = T0 + timedelta(minutes=game_id)
    row: dict[str, Any] = {
        "id": game_id,
        "series_id": series_id,
        "number": number,
        "attempt": attempt,
        "dealer": 0,
        "first_mover": 1,
        "deck": deck(game_id),
        "actions": [_move(1, "lead 6C", 0.25), _move(0, "take", 1.5)],
        "result": "seat1",
        "end_reason": "out",
        "forfeit_seat": None,
        "forfeit_reason": None,
        "forfeit_input": None,
        "voided": False,
        "void_reason": None,
        "referee_version": "kryt-arena-referee 0.1.0",
        "seat0_submission_id": ALPHA,
        "seat1_submission_id": BRAVO,
        "started_at": at,
        "finished_at": at + timedelta(seconds=4),
        "recorded_at": at + timedelta(seconds=5),
    }
    return row | values


FORFEIT_MEMORY = _game(
    1,
    CUP_SERIES,
    1,
    end_reason="forfeit",
    forfeit_seat=0,
    forfeit_reason="memory_limit",
    forfeit_input="garbage\n-- killed for memory",
)
FORFEIT_DETAIL_ONLY = _game(
    2,
    CUP_SERIES,
    2,
    result="seat0",
    end_reason="forfeit",
    forfeit_seat=1,
    forfeit_reason="timeout",
    forfeit_input="-- no reply within 2.0 s",
)
FORFEIT_INPUT_ONLY = _game(
    3,
    CUP_SERIES,
    3,
    end_reason="forfeit",
    forfeit_seat=0,
    forfeit_reason="illegal_action",
    forfeit_input="lead 6D",
    actions=[_move(1, "lead 6C", 0.25)],
)
DRAWN = _game(
    4,
    CUP_SERIES,
    4,
    result="draw",
    end_reason="draw by final answer",
    actions=[
        _move(1, "lead 6C", 0.25),
        _move(0, "cover 7C", 0.5),
        _move(1, "lead 9S", 0.75),
        _move(0, "cover 9H", 0.0, auto=True),
    ],
)
VOIDED = _game(
    5,
    CUP_SERIES,
    5,
    result=None,
    end_reason="void",
    voided=True,
    void_reason="the sandbox host went away",
)
REPLAYED = _game(6, CUP_SERIES, 5, attempt=2, deck=deck(5))
DOUBLE_FORFEIT = _game(
    7, FRIENDLY_SERIES, 1, result="draw", end_reason="double forfeit", actions=[]
)
OLD_GAMES = [
    FORFEIT_MEMORY,
    FORFEIT_DETAIL_ONLY,
    FORFEIT_INPUT_ONLY,
    DRAWN,
    VOIDED,
    REPLAYED,
    DOUBLE_FORFEIT,
]


def _insert(connection: Connection, table: str, row: Mapping[str, Any]) -> None:
    """``INSERT`` one row with plain SQL; JSON and timestamps are bound with their types."""
    params: list[sa.BindParameter[Any]] = []
    for name, value in row.items():
        if isinstance(value, dict | list):
            params.append(sa.bindparam(name, value, type_=sa.JSON()))
        elif isinstance(value, datetime):
            params.append(sa.bindparam(name, value, type_=sa.DateTime(timezone=True)))
        else:
            params.append(sa.bindparam(name, value))
    columns = ", ".join(row)
    values = ", ".join(f":{name}" for name in row)
    statement = sa.text(f"INSERT INTO {table} ({columns}) VALUES ({values})")
    connection.execute(statement.bindparams(*params))


def _fill_old_shape(connection: Connection) -> None:
    for bot_id, name in ((1, "alpha"), (2, "bravo")):
        _insert(connection, "bots", {"id": bot_id, "name": name, "created_at": T0})
        submission = ALPHA if name == "alpha" else BRAVO
        _insert(
            connection,
            "submissions",
            {
                "id": submission,
                "bot_id": bot_id,
                "version": "1.0.0",
                "sha256": f"{submission:064x}",
                "submitted_by": "tester",
                "submitted_at": T0,
                "status": "active",
                "storage_path": None,
                "manifest": {"name": name},
            },
        )
    for tournament_id, name, config in (
        (CUP, "cup", {"turn_limit": 77, "games_per_pair": 5}),
        (FRIENDLY, "friendly", {}),
    ):
        _insert(
            connection,
            "tournaments",
            {
                "id": tournament_id,
                "name": name,
                "config": config,
                "seed": 7,
                "status": "running",
                "created_at": T0,
            },
        )
    for series_id, tournament_id in ((CUP_SERIES, CUP), (FRIENDLY_SERIES, FRIENDLY)):
        _insert(
            connection,
            "series",
            {
                "id": series_id,
                "tournament_id": tournament_id,
                "position": 0,
                "submission_a_id": ALPHA,
                "submission_b_id": BRAVO,
                "format": "standard",
                "games_planned": 5,
                "seed": 99,
                "status": "running",
            },
        )
    for row in OLD_GAMES:
        _insert(connection, "games", row)
    if connection.dialect.name == "postgresql":
        # Explicit ids do not advance the sequence; later inserts must not collide.
        connection.execute(sa.text("SELECT setval(pg_get_serial_sequence('games', 'id'), 1000)"))


def _json(value: Any) -> Any:
    """A JSON column's value as Python data (SQLite hands back the text)."""
    return json.loads(value) if isinstance(value, str) else value


def _rows(connection: Connection) -> dict[int, dict[str, Any]]:
    """Every games row by id, as plain SQL sees it, JSON decoded."""
    result = connection.execute(sa.text("SELECT * FROM games ORDER BY id"))
    rows = {}
    for row in result.mappings():
        data = dict(row)
        if "packed" in data:  # revision 0007 packs both: compare them in their JSON shape
            table = Table(data["dealer"], data["turn_limit"], data["ruleset"], data["players"])
            played = unpack(bytes(data.pop("packed")), table)
            data["deck"] = list(played.deck)
            data["actions"] = [
                {"seat": m.seat, "action": m.action, "seconds": m.seconds} for m in played.moves
            ]
        data["actions"], data["deck"] = _json(data["actions"]), _json(data["deck"])
        rows[int(data["id"])] = data
    return rows


def _columns(connection: Connection) -> set[str]:
    return {c["name"] for c in sa.inspect(connection).get_columns("games")}


@pytest.fixture
def old_database(database_url: str) -> Iterator[Database]:
    """A database at revision 0001 holding old-shape rows (see the module docstring)."""
    db = open_database(database_url, check_schema=False)
    try:
        with db.engine.begin() as connection:
            command.upgrade(alembic_config(connection), "0001")
        with db.engine.begin() as connection:
            assert current_revision(connection) == "0001"
            assert "forfeit_reason" in _columns(connection)
            _fill_old_shape(connection)
        yield db
    finally:
        db.close()


def test_upgrade_moves_every_value_to_its_new_place(old_database: Database) -> None:
    engine = old_database.engine
    with engine.connect() as connection:
        before = _rows(connection)
    assert upgrade_engine(engine, where="the test database") == head_revision()
    with engine.connect() as connection:
        assert current_revision(connection) == head_revision()
        columns = _columns(connection)
        after = _rows(connection)
        # The upgraded schema is exactly what the models describe, on this backend too.
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    assert "forfeit_reason" not in columns
    assert {"forfeit_detail", "final_cover", "turn_limit"} <= columns
    assert sorted(after) == sorted(before)  # no row lost or added

    memory = after[1]
    assert memory["end_reason"] == "memory limit" and memory["forfeit_seat"] == 0
    assert (memory["forfeit_input"], memory["forfeit_detail"]) == ("garbage", "killed for memory")
    detail_only = after[2]
    assert detail_only["end_reason"] == "timeout"
    assert (detail_only["forfeit_input"], detail_only["forfeit_detail"]) == (
        None,
        "no reply within 2.0 s",
    )
    input_only = after[3]
    assert input_only["end_reason"] == "illegal action"
    assert (input_only["forfeit_input"], input_only["forfeit_detail"]) == ("lead 6D", None)
    drawn = after[4]
    assert drawn["final_cover"] == "9H" and drawn["end_reason"] == "draw by final answer"
    assert drawn["actions"] == [
        {"seat": 1, "action": "lead 6C", "seconds": 0.25},
        {"seat": 0, "action": "cover 7C", "seconds": 0.5},
        {"seat": 1, "action": "lead 9S", "seconds": 0.75},
    ]
    assert after[7]["end_reason"] == "double forfeit" and after[7]["forfeit_seat"] is None
    for game_id, row in after.items():
        old = before[game_id]
        # The turn limit comes from the tournament's config (else the old default, 1000).
        expected_limit = 77 if row["series_id"] == CUP_SERIES else 1000
        assert row["turn_limit"] == expected_limit, game_id
        # Moves lose only their "auto" marker (and the fake move itself).
        assert row["actions"] == [
            {k: m[k] for k in ("seat", "action", "seconds")}
            for m in old["actions"]
            if not m["auto"]
        ]
        if game_id not in (1, 2, 4):
            assert (row["forfeit_detail"], row["final_cover"]) == (None, None), game_id
        unchanged = set(old) - {"actions", "end_reason", "forfeit_reason", "forfeit_input"}
        assert {k: row[k] for k in unchanged} == {k: old[k] for k in unchanged}, game_id
        if old["end_reason"] != "forfeit":
            assert row["end_reason"] == old["end_reason"], game_id
            assert row["forfeit_input"] == old["forfeit_input"], game_id


def test_migrated_rows_read_back_as_consistent_records(old_database: Database) -> None:
    upgrade_engine(old_database.engine, where="the test database")
    # Opened the ordinary way, the migrated database is at head and in use at once.
    db = open_database(old_database.url, upgrade=False)
    try:
        with db.read_session() as s:
            records = {i: stored_record(get_game(i, session=s), ("a", "b")) for i in range(1, 8)}
            assert forfeit_counts(session=s) == {
                ALPHA: {"memory limit": 1, "illegal action": 1},
                BRAVO: {"timeout": 1},
            }
        memory = records[1]
        assert memory.ending is GameEndReason.MEMORY_LIMIT and memory.winner == 1
        assert memory.forfeit == Forfeit(
            0, GameEndReason.MEMORY_LIMIT, "garbage", "killed for memory"
        )
        assert memory.turn_limit == 77 and memory.players == ("a", "b")
        assert records[2].forfeit == Forfeit(1, GameEndReason.TIMEOUT, "", "no reply within 2.0 s")
        assert records[3].forfeit == Forfeit(0, GameEndReason.ILLEGAL_ACTION, "lead 6D", "")
        drawn = records[4]
        assert (drawn.ending, drawn.winner, drawn.final_cover, drawn.forfeit) == (
            GameEndReason.DRAW_BY_FINAL_ANSWER,
            None,
            "9H",
            None,
        )
        assert drawn.moves == (
            Move(1, "lead 6C", 0.25),
            Move(0, "cover 7C", 0.5),
            Move(1, "lead 9S", 0.75),
        )
        voided = records[5]
        assert voided.voided and voided.void_reason == "the sandbox host went away"
        assert voided.winner is None and voided.forfeit is None
        assert records[6].ending is GameEndReason.OUT and records[6].deck == voided.deck
        double = records[7]
        assert (double.ending, double.winner, double.forfeit) == (
            GameEndReason.DOUBLE_FORFEIT,
            None,
            None,
        )
        assert double.turn_limit == 1000
        # Each record is what the code itself would store: recording it again is a no-op.
        with db.read_session() as s:
            rows = {i: get_game(i, session=s) for i in records}
            places = {
                i: GamePlace(g.series_id, g.number, g.attempt, (ALPHA, BRAVO))
                for i, g in rows.items()
            }
        for game_id, record in records.items():
            with db.session() as s:
                again = record_game(record, places[game_id], session=s)
            assert not again.created and again.game.id == game_id
        # The partial unique index survived the table rebuild: one counted attempt only...
        with db.read_session() as s:
            data = get_game(6, session=s).model_dump(exclude={"id"})
        with pytest.raises(ConflictError, match="constraint"), db.session() as s:
            s.add(Game(**(data | {"attempt": 3})))
        with db.session() as s:  # ...while voided attempts may pile up.
            s.add(Game(**(data | {"attempt": 3, "voided": True, "void_reason": "test"})))
    finally:
        db.close()


def test_downgrade_restores_the_old_shape(old_database: Database) -> None:
    engine = old_database.engine
    with engine.connect() as connection:
        before = _rows(connection)
        old_columns = _columns(connection)
    upgrade_engine(engine, where="the test database")
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0001")
    with engine.connect() as connection:
        assert current_revision(connection) == "0001"
        assert _columns(connection) == old_columns
        restored = _rows(connection)
    # Every value is back where 0001 kept it: the glued input, the reason identifier, the
    # "auto" moves (every move marked), end_reason "forfeit".
    assert restored == before
    assert restored[1]["forfeit_input"] == "garbage\n-- killed for memory"
    assert (restored[1]["end_reason"], restored[1]["forfeit_reason"]) == ("forfeit", "memory_limit")
    assert restored[4]["actions"][-1] == _move(0, "cover 9H", 0.0, auto=True)
    # And the way back up again still works.
    assert upgrade_engine(engine, where="the test database") == head_revision()
