"""invites: one-use codes with which a person registers as an author

Revision ID: 0008
Revises: 0005 (the integrator re-chains it after 0006/0007)
Create Date: 2026-12-01

Only a new table; nothing recorded before is touched. The downgrade drops it (and with it
the unused and used codes; the authors who registered stay).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the invites table (additive only)."""
    op.create_table(
        "invites",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["author_id"], ["authors.id"], name=op.f("fk_invites_author_id_authors")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invites")),
    )
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_invites_code_hash"), ["code_hash"], unique=True)


def downgrade() -> None:
    """Drop the invites table."""
    with op.batch_alter_table("invites", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_invites_code_hash"))
    op.drop_table("invites")
