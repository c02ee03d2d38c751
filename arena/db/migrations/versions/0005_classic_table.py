"""classic table: N-seat series and games (ruleset, seats, loser, pairwise results)

Revision ID: 0005
Revises: 0002
Create Date: 2027-01-10

Additive: series and games gain ``ruleset`` (``default`` for every existing row) and
``seats`` (every seat's submission, tables only; seat0/seat1 stay filled); games gain
``players`` (2 for existing rows), ``loser_seat`` and ``pairwise``. The seat checks widen
from ``IN (0, 1)`` to ``0 <= seat < players`` and ``result`` may be ``table`` (the result is
in ``pairwise``), so every existing row stays valid and means what it meant. The downgrade
refuses to run while table games exist (the old shape cannot hold them).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_CHECKS = {
    "ck_games_dealer": "dealer IN (0, 1)",
    "ck_games_first_mover": "first_mover IN (0, 1)",
    "ck_games_result": "result IS NULL OR result IN ('seat0', 'seat1', 'draw')",
    "ck_games_forfeit_seat": "forfeit_seat IS NULL OR forfeit_seat IN (0, 1)",
}
_NEW_CHECKS = {
    "ck_games_dealer": "dealer >= 0 AND dealer < players",
    "ck_games_first_mover": "first_mover >= 0 AND first_mover < players",
    "ck_games_result": "result IS NULL OR result IN ('seat0', 'seat1', 'draw', 'table')",
    "ck_games_forfeit_seat": (
        "forfeit_seat IS NULL OR (forfeit_seat >= 0 AND forfeit_seat < players)"
    ),
    "ck_games_players": "players BETWEEN 2 AND 4",
}


def upgrade() -> None:
    """Add the table's columns and widen the seat checks."""
    # Plain ALTERs for series: a batch copy would drop the table games refer to (SQLite).
    op.add_column(
        "series",
        sa.Column("ruleset", sa.String(length=16), nullable=False, server_default="default"),
    )
    op.add_column("series", sa.Column("seats", sa.JSON(), nullable=True))
    with op.batch_alter_table("games") as batch:
        batch.add_column(
            sa.Column("ruleset", sa.String(length=16), nullable=False, server_default="default")
        )
        batch.add_column(sa.Column("players", sa.Integer(), nullable=False, server_default="2"))
        batch.add_column(sa.Column("seats", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("loser_seat", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("pairwise", sa.JSON(), nullable=True))
        batch.create_index("ix_games_ruleset", ["ruleset"])
        batch.create_index("ix_games_players", ["players"])
    with op.batch_alter_table("games") as batch:
        for name in _OLD_CHECKS:
            batch.drop_constraint(name, type_="check")
        for name, condition in _NEW_CHECKS.items():
            batch.create_check_constraint(name, condition)


def downgrade() -> None:
    """Back to the two-seat shape; refuses while games of a table are stored."""
    bind = op.get_bind()
    tables = bind.execute(
        sa.text("SELECT count(*) FROM games WHERE players <> 2 OR ruleset <> 'default'")
    ).scalar_one()
    if tables:
        raise RuntimeError(
            f"cannot downgrade below 0005: {tables} game(s) of the classic table are stored"
        )
    with op.batch_alter_table("games") as batch:
        for name in _NEW_CHECKS:
            batch.drop_constraint(name, type_="check")
        for name, condition in _OLD_CHECKS.items():
            batch.create_check_constraint(name, condition)
    with op.batch_alter_table("games") as batch:
        batch.drop_index("ix_games_players")
        batch.drop_index("ix_games_ruleset")
        for column in ("pairwise", "loser_seat", "seats", "players", "ruleset"):
            batch.drop_column(column)
    op.drop_column("series", "seats")
    op.drop_column("series", "ruleset")
