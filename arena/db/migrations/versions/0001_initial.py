"""initial schema

Revision ID: 0001
Revises: None
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Additive changes only: Kryt Arena migrations never drop or rewrite recorded data."""
    op.create_table(
        "bots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bots")),
    )
    op.create_index(op.f("ix_bots_name"), "bots", ["name"], unique=True)

    op.create_table(
        "tournaments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tournaments")),
    )
    op.create_index(op.f("ix_tournaments_name"), "tournaments", ["name"], unique=False)

    op.create_table(
        "rating_snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=64), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tournament_id"],
            ["tournaments.id"],
            name=op.f("fk_rating_snapshots_tournament_id_tournaments"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rating_snapshots")),
    )
    op.create_index(
        op.f("ix_rating_snapshots_created_at"), "rating_snapshots", ["created_at"], unique=False
    )
    op.create_index(op.f("ix_rating_snapshots_model"), "rating_snapshots", ["model"], unique=False)
    op.create_index(
        op.f("ix_rating_snapshots_tournament_id"),
        "rating_snapshots",
        ["tournament_id"],
        unique=False,
    )

    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("submitted_by", sa.String(length=200), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("storage_path", sa.Text(), nullable=True),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"], name=op.f("fk_submissions_bot_id_bots")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submissions")),
        sa.UniqueConstraint("bot_id", "version", name="uq_submissions_bot_version"),
    )
    op.create_index(op.f("ix_submissions_bot_id"), "submissions", ["bot_id"], unique=False)
    op.create_index(op.f("ix_submissions_sha256"), "submissions", ["sha256"], unique=True)

    op.create_table(
        "rating_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("snapshot_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("error", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["snapshot_id"],
            ["rating_snapshots.id"],
            name=op.f("fk_rating_entries_snapshot_id_rating_snapshots"),
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_rating_entries_submission_id_submissions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rating_entries")),
        sa.UniqueConstraint("snapshot_id", "submission_id", name="uq_rating_entries_snapshot_sub"),
    )
    op.create_index(
        op.f("ix_rating_entries_snapshot_id"), "rating_entries", ["snapshot_id"], unique=False
    )
    op.create_index(
        op.f("ix_rating_entries_submission_id"), "rating_entries", ["submission_id"], unique=False
    )

    op.create_table(
        "series",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tournament_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("submission_a_id", sa.Integer(), nullable=False),
        sa.Column("submission_b_id", sa.Integer(), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("games_planned", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("format IN ('standard', 'duplicate')", name="ck_series_format"),
        sa.CheckConstraint("games_planned >= 0", name="ck_series_games_planned"),
        sa.ForeignKeyConstraint(
            ["submission_a_id"],
            ["submissions.id"],
            name=op.f("fk_series_submission_a_id_submissions"),
        ),
        sa.ForeignKeyConstraint(
            ["submission_b_id"],
            ["submissions.id"],
            name=op.f("fk_series_submission_b_id_submissions"),
        ),
        sa.ForeignKeyConstraint(
            ["tournament_id"], ["tournaments.id"], name=op.f("fk_series_tournament_id_tournaments")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_series")),
        sa.UniqueConstraint("tournament_id", "position", name="uq_series_tournament_position"),
    )
    op.create_index(op.f("ix_series_submission_a_id"), "series", ["submission_a_id"], unique=False)
    op.create_index(op.f("ix_series_submission_b_id"), "series", ["submission_b_id"], unique=False)
    op.create_index(op.f("ix_series_tournament_id"), "series", ["tournament_id"], unique=False)

    op.create_table(
        "submission_archives",
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_submission_archives_submission_id_submissions"),
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_submission_archives")),
    )
    op.create_table(
        "games",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("dealer", sa.Integer(), nullable=False),
        sa.Column("first_mover", sa.Integer(), nullable=False),
        sa.Column("deck", sa.JSON(), nullable=False),
        sa.Column("actions", sa.JSON(), nullable=False),
        sa.Column("result", sa.String(length=8), nullable=True),
        sa.Column("end_reason", sa.String(length=64), nullable=False),
        sa.Column("forfeit_seat", sa.Integer(), nullable=True),
        sa.Column("forfeit_reason", sa.String(length=64), nullable=True),
        sa.Column("forfeit_input", sa.Text(), nullable=True),
        sa.Column("voided", sa.Boolean(), nullable=False),
        sa.Column("void_reason", sa.Text(), nullable=True),
        sa.Column("referee_version", sa.String(length=64), nullable=False),
        sa.Column("seat0_submission_id", sa.Integer(), nullable=False),
        sa.Column("seat1_submission_id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "result IS NULL OR result IN ('seat0', 'seat1', 'draw')", name="ck_games_result"
        ),
        sa.CheckConstraint("attempt >= 1", name="ck_games_attempt"),
        sa.CheckConstraint("dealer IN (0, 1)", name="ck_games_dealer"),
        sa.CheckConstraint("first_mover IN (0, 1)", name="ck_games_first_mover"),
        sa.CheckConstraint(
            "forfeit_seat IS NULL OR forfeit_seat IN (0, 1)", name="ck_games_forfeit_seat"
        ),
        sa.CheckConstraint("voided OR result IS NOT NULL", name="ck_games_result_unless_voided"),
        sa.ForeignKeyConstraint(
            ["seat0_submission_id"],
            ["submissions.id"],
            name=op.f("fk_games_seat0_submission_id_submissions"),
        ),
        sa.ForeignKeyConstraint(
            ["seat1_submission_id"],
            ["submissions.id"],
            name=op.f("fk_games_seat1_submission_id_submissions"),
        ),
        sa.ForeignKeyConstraint(
            ["series_id"], ["series.id"], name=op.f("fk_games_series_id_series")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_games")),
        sa.UniqueConstraint(
            "series_id", "number", "attempt", name="uq_games_series_number_attempt"
        ),
    )
    op.create_index(
        op.f("ix_games_seat0_submission_id"), "games", ["seat0_submission_id"], unique=False
    )
    op.create_index(
        op.f("ix_games_seat1_submission_id"), "games", ["seat1_submission_id"], unique=False
    )
    op.create_index(op.f("ix_games_series_id"), "games", ["series_id"], unique=False)
    op.create_index(
        "uq_games_counted",
        "games",
        ["series_id", "number"],
        unique=True,
        sqlite_where=sa.text("NOT voided"),
        postgresql_where=sa.text("NOT voided"),
    )


def downgrade() -> None:
    """Downgrades are not supported: they would destroy recorded results."""
    raise NotImplementedError("Kryt Arena does not downgrade databases; restore a backup instead")
