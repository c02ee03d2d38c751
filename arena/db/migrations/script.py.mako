"""${message}

Revision ID: ${up_revision}
Revises: ${repr(down_revision)}
Create Date: ${create_date}
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
${imports if imports else ""}
revision: str = ${repr(up_revision)}
down_revision: str | None = ${repr(down_revision)}
branch_labels: str | Sequence[str] | None = ${repr(branch_labels)}
depends_on: str | Sequence[str] | None = ${repr(depends_on)}


def upgrade() -> None:
    """Additive changes only: Kryt Arena migrations never drop or rewrite recorded data."""
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    """Downgrades are not supported: they would destroy recorded results."""
    raise NotImplementedError("Kryt Arena does not downgrade databases; restore a backup instead")
