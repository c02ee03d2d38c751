"""classic tables: two winners have no result between themselves; boards rebuilt

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02

rules-classic.md scores a table game as pairwise results in which each winner beats the
loser and winners have no result between themselves. Until this revision the arena scored
every pair without a result as a draw, winners included. No schema change: the upgrade
replays the counted games of every classic board of three or four seats (live Elo and the
per-pair tallies; two seats never have two winners). The downgrade changes nothing: the
earlier code reads a classic board's results from its games, so only its live Elo keeps the
scoring of this revision.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from arena.db.elo import SCOPES, Scope, rebuild_elo

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Rebuild the live Elo and tallies of every classic board of more than two seats."""
    connection = op.get_bind()
    c = SCOPES.c
    scopes = [
        Scope(int(t), str(r), int(p))
        for t, r, p in connection.execute(
            sa.select(c.tournament_id, c.ruleset, c.players).where(
                c.ruleset != "default", c.players > 2
            )
        )
    ]
    if scopes:
        rebuild_elo(connection, scopes)


def downgrade() -> None:
    """Nothing to undo (see the module's docstring)."""
