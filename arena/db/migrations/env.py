"""Alembic environment: runs on the connection :mod:`arena.db.migrate` hands over.

There is no ``alembic.ini``: the configuration is built in code so migrations run from an
installed package. Offline (SQL script) mode is not supported.
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy.engine import Connection

from arena.db.models import metadata
from arena.db.types import UTCDateTime


def _render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | Literal[False]:
    # Revisions must not import our Python types (they may change); write the plain column
    # type the decorator stores.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


config = context.config
connection = config.attributes.get("connection")
if not isinstance(connection, Connection):
    raise RuntimeError(
        "Kryt Arena migrations run through arena.db.migrate (or `python -m "
        "arena.db.migrate`), not the plain alembic command"
    )
if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")

context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite cannot ALTER most things; batch mode copies the table instead.
    render_as_batch=True,
    compare_type=True,
    render_item=_render_item,
    # The caller owns the transaction (it holds the migration lock).
    transaction_per_migration=False,
)
with context.begin_transaction():
    context.run_migrations()
