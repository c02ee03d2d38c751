"""Fixtures: a fresh database per test, on SQLite (a temp file) and on PostgreSQL.

PostgreSQL comes from ``KRYT_TEST_POSTGRES_URL`` (exported by .ci/provision/20-postgres.sh);
each test gets a database of its own, created and dropped here, so pytest-xdist workers
never share state. Without the variable the PostgreSQL cases skip locally and fail in CI.
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from arena.db import Database, open_database
from tests.db.helpers import World, build_world
from tests.services import require

POSTGRES_ENV = "KRYT_TEST_POSTGRES_URL"
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


def postgres_admin_url() -> str | None:
    """The URL of the test server's maintenance database, or None when not configured."""
    return os.environ.get(POSTGRES_ENV) or None


def _fresh_postgres_database(admin_url: str) -> Iterator[str]:
    name = f"kryt_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(admin_url).set(database=name)
        yield url.render_as_string(hide_password=False)
        _drop(admin, name)
    finally:
        admin.dispose()


def _drop(admin: Engine, name: str) -> None:
    """Drop a test database. A plain DROP makes the server stop an autovacuum worker that
    may have started on it; FORCE (which a non-superuser may not use on such a worker) is the
    fallback for connections a test left open."""
    last: Exception | None = None
    for statement in [f'DROP DATABASE IF EXISTS "{name}"'] * 5 + [
        f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
    ] * 5:
        try:
            with admin.connect() as conn:
                conn.execute(text(statement))
            return
        except SQLAlchemyError as exc:
            last = exc
            time.sleep(0.5)
    warnings.warn(f"could not drop test database {name}: {last}", stacklevel=2)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend under test: "sqlite" or "postgresql"."""
    return str(request.param)


@contextmanager
def scratch_postgres_database() -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database (dropped afterwards); skipped without a
    test server, a failure under CI (for module fixtures, or a test's second database)."""
    admin_url = postgres_admin_url()
    require(
        admin_url is not None,
        "PostgreSQL",
        f"set {POSTGRES_ENV} (source .ci/provision/20-postgres.sh to start a local server)",
    )
    assert admin_url is not None
    yield from _fresh_postgres_database(admin_url)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database of this test's own (dropped afterwards)."""
    with scratch_postgres_database() as url:
        yield url


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL naming a database that does not exist yet (SQLite) or is empty (PostgreSQL)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/kryt.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    """An open, migrated, empty database."""
    database = open_database(database_url)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def world(db: Database) -> World:
    """Two bots with one submission each, a tournament and one series between them."""
    return build_world(db)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Database]:
    """An open, migrated, empty SQLite database in a temporary file, for tests of what only
    one backend does (or that need no PostgreSQL)."""
    database = open_database(f"sqlite:///{tmp_path}/kryt.db")
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def sqlite_world(sqlite_db: Database) -> World:
    """:func:`world` on :func:`sqlite_db`."""
    return build_world(sqlite_db)


@pytest.fixture
def admin() -> Iterator[Engine]:
    """An autocommit engine on the test PostgreSQL server's administrative database
    (tests/db/postgres_admin.py acts through it)."""
    url = postgres_admin_url()
    assert url is not None  # the postgres_url fixture required it
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        yield engine
    finally:
        engine.dispose()
