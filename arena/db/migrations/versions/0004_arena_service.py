"""arena service: authors, API tokens, bot owners, audit log, validation, ladder, game logs

Revision ID: 0004
Revises: 0002 (to be re-chained onto 0003 when the tournament lease migration is merged)
Create Date: 2026-12-01

Only new tables: nothing recorded before is touched. The downgrade drops these tables (and
with them the accounts, audit log, checks, ladder leases and captured logs).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the service's tables (additive only)."""
    op.create_table(
        "authors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=True),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_authors")),
    )
    with op.batch_alter_table("authors", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_authors_name"), ["name"], unique=True)

    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["author_id"], ["authors.id"], name=op.f("fk_api_tokens_author_id_authors")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_author_id"), ["author_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_api_tokens_token_hash"), ["token_hash"], unique=True)

    op.create_table(
        "bot_owners",
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["authors.id"], name=op.f("fk_bot_owners_author_id_authors")
        ),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_bot_owners_bot_id_bots")),
        sa.PrimaryKeyConstraint("bot_id", name=op.f("pk_bot_owners")),
    )
    with op.batch_alter_table("bot_owners", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_bot_owners_author_id"), ["author_id"], unique=False)

    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("remote", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["authors.id"], name=op.f("fk_audit_log_author_id_authors")
        ),
        sa.ForeignKeyConstraint(
            ["token_id"], ["api_tokens.id"], name=op.f("fk_audit_log_token_id_api_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_log_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_log_author_id"), ["author_id"], unique=False)

    op.create_table(
        "submission_checks",
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("games", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["author_id"], ["authors.id"], name=op.f("fk_submission_checks_author_id_authors")
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_submission_checks_submission_id_submissions"),
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_submission_checks")),
    )
    with op.batch_alter_table("submission_checks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_submission_checks_author_id"), ["author_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_submission_checks_status"), ["status"], unique=False)

    op.create_table(
        "ladder_series",
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["series_id"], ["series.id"], name=op.f("fk_ladder_series_series_id_series")
        ),
        sa.PrimaryKeyConstraint("series_id", name=op.f("pk_ladder_series")),
    )
    with op.batch_alter_table("ladder_series", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ladder_series_lease_until"), ["lease_until"], unique=False
        )

    op.create_table(
        "game_logs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["game_id"], ["games.id"], name=op.f("fk_game_logs_game_id_games")),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_game_logs_submission_id_submissions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_game_logs")),
        sa.UniqueConstraint("game_id", "seat", name="uq_game_logs_game_seat"),
    )
    with op.batch_alter_table("game_logs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_game_logs_game_id"), ["game_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_game_logs_submission_id"), ["submission_id"], unique=False
        )


TABLES = (
    "game_logs",
    "ladder_series",
    "submission_checks",
    "audit_log",
    "bot_owners",
    "api_tokens",
    "authors",
)
"""The tables of this revision, children first (the order a downgrade drops them in)."""


def downgrade() -> None:
    """Drop the service's tables; the games, bots and ratings of before stay as they are."""
    for table in TABLES:
        op.drop_table(table)
