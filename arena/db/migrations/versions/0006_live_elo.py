"""live Elo: per-board state updated as games are recorded, backfilled from stored games

Revision ID: 0006
Revises: 0005
Create Date: 2027-02-01

Additive: ``elo_scopes`` (one row per board: all tournaments or one tournament, ruleset and
table size; the number of counted games applied) and ``elo_ratings`` (each submission's live
Elo on each board). The upgrade replays every counted game by id into them (the leaderboard
then reads the state instead of replaying every game), and adds ``ix_games_standings``, the
covering index of the standings' aggregates; the downgrade drops all three.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from arena.db.elo import rebuild_elo

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STANDINGS_COLUMNS = (
    "ruleset",
    "voided",
    "series_id",
    "number",
    "first_mover",
    "result",
    "seat0_submission_id",
    "seat1_submission_id",
    "forfeit_seat",
    "end_reason",
)
"""The covering index of the standings' aggregates (see arena/db/models.py)."""


def upgrade() -> None:
    """Create the live Elo tables and fill them from the stored games."""
    op.create_table(
        "elo_scopes",
        sa.Column("tournament_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("ruleset", sa.String(length=16), nullable=False),
        sa.Column("players", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("last_game_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("tournament_id", "ruleset", "players", name="pk_elo_scopes"),
    )
    op.create_table(
        "elo_ratings",
        sa.Column("tournament_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("ruleset", sa.String(length=16), nullable=False),
        sa.Column("players", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("submission_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name="fk_elo_ratings_submission_id_submissions",
        ),
        sa.PrimaryKeyConstraint(
            "tournament_id", "ruleset", "players", "submission_id", name="pk_elo_ratings"
        ),
    )
    op.create_index("ix_games_standings", "games", list(STANDINGS_COLUMNS))
    rebuild_elo(op.get_bind(), tallies=False)  # the tally tables come with 0010


def downgrade() -> None:
    """Drop the live Elo tables and the standings' index (0005 replays the games)."""
    op.drop_index("ix_games_standings", table_name="games")
    op.drop_table("elo_ratings")
    op.drop_table("elo_scopes")
