"""An administrator's hand on the test PostgreSQL server (the ``admin`` fixture of
tests/db/conftest.py): cut a database's connections, refuse or allow new ones (what a server
restart or an outage does to a run)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine


def terminate_connections(admin: Engine, name: str) -> None:
    """End every client connection of this role to database ``name`` (as a restart of the
    server does). The server's own processes on it (an autovacuum worker runs as the bootstrap
    superuser) are left alone: the test role may not signal them, and a run never holds them."""
    with admin.connect() as conn:
        conn.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = :name AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend' AND usename = current_user"
            ),
            {"name": name},
        )


def allow_connections(admin: Engine, name: str, allowed: bool) -> None:
    """Let database ``name`` take new connections, or refuse them."""
    with admin.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}'))
