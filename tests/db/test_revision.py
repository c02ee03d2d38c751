"""The documented way to add a migration produces a revision that applies on top of head."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import inspect

import arena.db.migrate as migrate
from arena.db import open_database


@pytest.fixture
def scratch_migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the packaged migrations, so the test never writes into the source tree."""
    target = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(migrate, "MIGRATIONS_DIR", target)
    monkeypatch.setattr(migrate, "VERSIONS_DIR", target / "versions")
    return target


def test_make_revision_then_upgrade(scratch_migrations: Path, tmp_path: Path) -> None:
    before = migrate.head_revision()
    path = migrate.make_revision("Add nothing at all")
    assert path.parent == scratch_migrations / "versions"
    assert path.name.startswith(f"{int(before) + 1:04d}_add_nothing_at_all")
    source = path.read_text()
    assert f'down_revision: str | None = "{before}"' in source
    # The models match head, so autogenerate found nothing to do.
    assert "pass" in source.split("def upgrade() -> None:")[1].split("def downgrade")[0]
    assert migrate.head_revision() == f"{int(before) + 1:04d}"
    with open_database(tmp_path / "k.db") as db, db.engine.connect() as conn:
        assert migrate.current_revision(conn) == migrate.head_revision()
        assert "games" in inspect(conn).get_table_names()
