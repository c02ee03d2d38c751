"""Fixtures: a filled results database (SQLite file, and PostgreSQL when configured) and the
web app over it. Building the world takes a moment, so it is shared by a module's tests;
the tests only read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db import Database, open_database
from leaderboard.web import create_app
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.services import require
from tests.web.world import World, build_world


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Database, World]]:
    """A database holding :func:`tests.web.world.build_world`, on each backend."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("web") / "kryt.db"
        db = open_database(f"sqlite:///{path}")
        try:
            yield db, build_world(db)
        finally:
            db.close()
        return
    admin_url = postgres_admin_url()
    require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
    assert admin_url is not None
    for url in _fresh_postgres_database(admin_url):
        db = open_database(url)
        try:
            yield db, build_world(db)
        finally:
            db.close()


@pytest.fixture(scope="module")
def client(filled: tuple[Database, World]) -> Iterator[TestClient]:
    """A test client of the app over the filled database."""
    with TestClient(create_app(filled[0])) as test_client:
        yield test_client


@pytest.fixture
def world(filled: tuple[Database, World]) -> World:
    """The ids of the filled database."""
    return filled[1]


@pytest.fixture
def sqlite_world(tmp_path: Path) -> Iterator[tuple[str, World]]:
    """A filled SQLite file of this test's own: (its path, the ids)."""
    path = tmp_path / "kryt.db"
    db = open_database(f"sqlite:///{path}")
    try:
        world = build_world(db)
    finally:
        db.close()
    yield str(path), world
