"""tournament lease: one runner per tournament, with a heartbeat

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-08

Adds ``tournament_leases``: at most one row per tournament naming the runner that plays it
(runner id, host, pid, process token) and until when its heartbeat holds the lease. Nothing
existing changes; the downgrade drops the table (a lease is only meaningful while a runner
lives).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tournament_leases",
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("runner_id", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("process_token", sa.String(length=64), nullable=True),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_tournament_leases_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("tournament_id", name=op.f("pk_tournament_leases")),
    )


def downgrade() -> None:
    op.drop_table("tournament_leases")
