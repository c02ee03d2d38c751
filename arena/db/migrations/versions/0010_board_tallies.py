"""board tallies: per-pair results and forfeits kept with live Elo, backfilled

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

Additive: ``board_pairs`` (each board's W/D/L per ordered pair) and ``board_forfeits`` (each
board's forfeits per submission and ending), updated in the transaction that records a game,
like live Elo (0006). The standings then read them instead of grouping every game. The
upgrade replays every counted game by id into all boards (live Elo included: the same
numbers). It also adds ``ix_games_voided``, a partial index of the voided games, so progress
counts them without reading every game. The downgrade drops both tables and the index.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from arena.db.elo import rebuild_elo

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SCOPE = ("tournament_id", "ruleset", "players")


def _scope_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("tournament_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("ruleset", sa.String(length=16), nullable=False),
        sa.Column("players", sa.Integer(), autoincrement=False, nullable=False),
    ]


def _submission(column: str) -> sa.Column[object]:
    return sa.Column(column, sa.Integer(), autoincrement=False, nullable=False)


def upgrade() -> None:
    """Create the tally tables and fill every board from the stored games."""
    op.create_table(
        "board_pairs",
        *_scope_columns(),
        _submission("first_submission_id"),
        _submission("second_submission_id"),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["first_submission_id"],
            ["submissions.id"],
            name="fk_board_pairs_first_submission_id_submissions",
        ),
        sa.ForeignKeyConstraint(
            ["second_submission_id"],
            ["submissions.id"],
            name="fk_board_pairs_second_submission_id_submissions",
        ),
        sa.PrimaryKeyConstraint(
            *_SCOPE, "first_submission_id", "second_submission_id", name="pk_board_pairs"
        ),
    )
    op.create_table(
        "board_forfeits",
        *_scope_columns(),
        _submission("submission_id"),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name="fk_board_forfeits_submission_id_submissions",
        ),
        sa.PrimaryKeyConstraint(*_SCOPE, "submission_id", "reason", name="pk_board_forfeits"),
    )
    op.create_index(
        "ix_games_voided",
        "games",
        ["series_id"],
        sqlite_where=sa.text("voided = 1"),
        postgresql_where=sa.text("voided"),
    )
    rebuild_elo(op.get_bind())


def downgrade() -> None:
    """Drop the tally tables and the index of voided games (the standings aggregate the
    stored games instead)."""
    op.drop_index("ix_games_voided", table_name="games")
    op.drop_table("board_forfeits")
    op.drop_table("board_pairs")
