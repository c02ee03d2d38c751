"""per-seat time controls: every game keeps each seat's time control

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

Additive: games gain ``time_controls``, compact text with each seat's control as
``MOVE/BANK/INCREMENT/GRACE/CLOCK`` (milliseconds), seat 0 first, one entry when every seat
has the same, as the referee's record holds them (bots may play under different controls,
with a Fischer increment).
Existing rows keep NULL: they were played before controls were recorded per game.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the nullable column."""
    with op.batch_alter_table("games") as batch:
        batch.add_column(sa.Column("time_controls", sa.Text(), nullable=True))


def downgrade() -> None:
    """Drop the column (the controls stay in each tournament's stored configuration)."""
    with op.batch_alter_table("games") as batch:
        batch.drop_column("time_controls")
