"""What every test of the service's API checks of an error answer."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from arena.db import Database, open_database
from arena.db.accounts import create_author, create_token
from arena.service.app import create_service_app
from arena.service.settings import ServiceSettings


def problem(response: Any, status: int) -> dict[str, Any]:
    """The body of ``response``, asserted to be an RFC 9457 problem document of ``status``
    (its media type, exactly its four fields, the same status, a detail that says something)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert set(body) == {"type", "title", "status", "detail"}, body
    assert body["status"] == status and body["detail"], body
    return body


def alice_service(tmp_path: Path) -> tuple[Database, FastAPI, str]:
    """The service app in process (no background work) over a new SQLite database at
    ``tmp_path / "arena.db"`` with one author, alice, and her token's secret."""
    db = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    with db.session() as session:
        create_author("alice", session=session)
        token = create_token("alice", session=session, lifetime=timedelta(days=1))
    settings = ServiceSettings(store=tmp_path / "store", writes_per_minute=1000)
    return db, create_service_app(db, settings, run_background=False), token.secret
