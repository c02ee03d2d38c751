"""compact games: the deal and the moves packed into one binary column

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

Before: ``games.deck`` was a JSON list of 36 card texts and ``games.actions`` a JSON list of
``{"seat", "action", "seconds"[, "cpu"]}`` objects, about 40-60 bytes a move. After: both
live in ``games.packed`` (:mod:`arena.db.gamecodec`: a few bits a move for moves that replay
as legal actions; a few bytes a move otherwise). Every value comes
back exactly (action text that is not a canonical action is kept as text; times that are
not whole microseconds are kept as doubles), and the downgrade writes the same JSON back.

The codec is imported rather than copied: its format 1 is what this revision writes, and
the codec keeps reading every format it ever wrote.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from arena.db.gamecodec import Table, pack, unpack
from referee.record import Move

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 1000
"""Rows converted per query, so a large database is not loaded at once."""

_games = sa.table(
    "games",
    sa.column("id", sa.Integer),
    sa.column("deck", sa.JSON),
    sa.column("actions", sa.JSON),
    sa.column("packed", sa.LargeBinary),
    sa.column("dealer", sa.Integer),
    sa.column("turn_limit", sa.Integer),
    sa.column("ruleset", sa.String),
    sa.column("players", sa.Integer),
)
_TABLE = (_games.c.dealer, _games.c.turn_limit, _games.c.ruleset, _games.c.players)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _batches(bind: sa.engine.Connection, *columns: sa.ColumnClause[Any]) -> Any:
    """Every games row (id first), ``BATCH`` rows a query, in id order."""
    last = -1
    while True:
        rows = bind.execute(
            sa.select(_games.c.id, *columns)
            .where(_games.c.id > last)
            .order_by(_games.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        yield from rows
        last = rows[-1][0]


def _move(data: dict[str, Any]) -> Move:
    cpu = data.get("cpu")
    return Move(int(data["seat"]), str(data["action"]), data["seconds"], cpu)


def upgrade() -> None:
    """Pack every game's deck and actions into ``packed``; drop the JSON columns."""
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("packed", sa.LargeBinary(), nullable=True))
    bind = op.get_bind()
    for game_id, deck, actions, *table in _batches(bind, _games.c.deck, _games.c.actions, *_TABLE):
        moves = [_move(m) for m in _json(actions) or []]
        packed = pack([str(card) for card in _json(deck)], moves, Table(*table))
        bind.execute(_games.update().where(_games.c.id == game_id).values(packed=packed))
    with op.batch_alter_table("games") as batch:
        batch.alter_column("packed", existing_type=sa.LargeBinary(), nullable=False)
        batch.drop_column("actions")
        batch.drop_column("deck")


def downgrade() -> None:
    """Back to the JSON columns, each value where 0005 kept it."""
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("deck", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("actions", sa.JSON(), nullable=True))
    bind = op.get_bind()
    for game_id, packed, *table in _batches(bind, _games.c.packed, *_TABLE):
        played = unpack(bytes(packed), Table(*table))
        actions = [
            {"seat": m.seat, "action": m.action, "seconds": m.seconds}
            | ({} if m.cpu_seconds is None else {"cpu": m.cpu_seconds})
            for m in played.moves
        ]
        bind.execute(
            _games.update()
            .where(_games.c.id == game_id)
            .values(deck=list(played.deck), actions=actions)
        )
    with op.batch_alter_table("games") as batch:
        batch.alter_column("deck", existing_type=sa.JSON(), nullable=False)
        batch.alter_column("actions", existing_type=sa.JSON(), nullable=False)
        batch.drop_column("packed")
