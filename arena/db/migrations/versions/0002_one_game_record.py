"""one game record: one ending vocabulary, forfeit detail and final cover as columns

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Before: ``end_reason`` was ``forfeit`` for every forfeit with the reason in ``forfeit_reason``
(an identifier such as ``memory_limit``), the forfeit's detail was glued to the offending
input after a ``-- `` line, the automatic final cover of a drawn game was stored as a fake
move marked ``"auto": true``, and the turn limit lived only in the tournament's config.

After: ``end_reason`` holds the one ending (``memory limit``, ``out``, ``void``...), the
detail and the final cover have columns of their own, ``actions`` holds only what bots
played, and each game carries its turn limit. Nothing recorded is lost: every value moves
to its new place; the downgrade puts each back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_TURN_LIMIT = 1000
DETAIL_MARK = "\n-- "

_games = sa.table(
    "games",
    sa.column("id", sa.Integer),
    sa.column("series_id", sa.Integer),
    sa.column("actions", sa.JSON),
    sa.column("end_reason", sa.String),
    sa.column("forfeit_reason", sa.String),
    sa.column("forfeit_input", sa.Text),
    sa.column("forfeit_detail", sa.Text),
    sa.column("final_cover", sa.String),
    sa.column("turn_limit", sa.Integer),
    sa.column("forfeit_seat", sa.Integer),
)
_series = sa.table("series", sa.column("id", sa.Integer), sa.column("tournament_id", sa.Integer))
_tournaments = sa.table("tournaments", sa.column("id", sa.Integer), sa.column("config", sa.JSON))


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _split_input(glued: str | None) -> tuple[str | None, str | None]:
    """(offending input, detail) from the old glued form ``input\\n-- detail``."""
    if glued is None:
        return None, None
    if glued.startswith("-- "):
        return None, glued[3:]
    head, mark, tail = glued.rpartition(DETAIL_MARK)
    if mark:
        return head or None, tail
    return glued, None


def _turn_limits(bind: sa.engine.Connection) -> dict[int, int]:
    """Turn limit per series, from its tournament's stored config."""
    rows = bind.execute(
        sa.select(_series.c.id, _tournaments.c.config).join(
            _tournaments, _series.c.tournament_id == _tournaments.c.id
        )
    )
    limits = {}
    for series_id, config in rows:
        value = (_json(config) or {}).get("turn_limit", DEFAULT_TURN_LIMIT)
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        limits[series_id] = value if ok else DEFAULT_TURN_LIMIT
    return limits


def upgrade() -> None:
    """Move every value of the old game shape to its place in the one record."""
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("forfeit_detail", sa.Text(), nullable=True))
        batch.add_column(sa.Column("final_cover", sa.String(length=2), nullable=True))
        batch.add_column(
            sa.Column(
                "turn_limit",
                sa.Integer(),
                nullable=False,
                server_default=str(DEFAULT_TURN_LIMIT),
            )
        )
    bind = op.get_bind()
    limits = _turn_limits(bind)
    rows = bind.execute(
        sa.select(
            _games.c.id,
            _games.c.series_id,
            _games.c.actions,
            _games.c.end_reason,
            _games.c.forfeit_reason,
            _games.c.forfeit_input,
        )
    ).all()
    for game_id, series_id, actions, end_reason, forfeit_reason, forfeit_input in rows:
        moves = _json(actions) or []
        played = [
            {"seat": m["seat"], "action": m["action"], "seconds": m["seconds"]}
            for m in moves
            if not m.get("auto")
        ]
        autos = [m["action"] for m in moves if m.get("auto")]
        final_cover = autos[-1].removeprefix("cover ").strip() if autos else None
        offending, detail = _split_input(forfeit_input)
        ending = end_reason
        if end_reason == "forfeit" and forfeit_reason:
            ending = forfeit_reason.replace("_", " ")
        bind.execute(
            _games.update()
            .where(_games.c.id == game_id)
            .values(
                actions=played,
                end_reason=ending,
                forfeit_input=offending,
                forfeit_detail=detail,
                final_cover=final_cover,
                turn_limit=limits.get(series_id, DEFAULT_TURN_LIMIT),
            )
        )
    with op.batch_alter_table("games") as batch:
        batch.drop_column("forfeit_reason")


def downgrade() -> None:
    """Back to the 0001 shape, losing nothing the 0001 shape can hold."""
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("forfeit_reason", sa.String(length=64), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(
            _games.c.id,
            _games.c.actions,
            _games.c.end_reason,
            _games.c.forfeit_input,
            _games.c.forfeit_detail,
            _games.c.final_cover,
            _games.c.forfeit_seat,
        )
    ).all()
    for game_id, actions, ending, offending, detail, final_cover, forfeit_seat in rows:
        moves = list(_json(actions) or [])
        for move in moves:
            move["auto"] = False
        if final_cover:
            last = moves[-1]["seat"] if moves else 0
            moves.append(
                {"seat": 1 - last, "action": f"cover {final_cover}", "seconds": 0.0, "auto": True}
            )
        glued = offending
        if detail:
            glued = f"{offending}{DETAIL_MARK}{detail}" if offending else f"-- {detail}"
        values: dict[str, Any] = {"actions": moves, "forfeit_input": glued}
        if forfeit_seat is not None:
            values["forfeit_reason"] = ending.replace(" ", "_")
            values["end_reason"] = "forfeit"
        bind.execute(_games.update().where(_games.c.id == game_id).values(**values))
    with op.batch_alter_table("games") as batch:
        batch.drop_column("final_cover")
        batch.drop_column("forfeit_detail")
        batch.drop_column("turn_limit")
