"""``create_service_app(..., run_background=False)`` runs nothing in the background, as its
docstring says: an upload is stored with its check pending (a server that runs validations
resumes it), and no validation game is started."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from arena.db import open_database
from arena.db.accounts import create_author, create_token
from arena.service.app import create_service_app
from arena.service.settings import ServiceSettings


def _bot() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(
            "bot.toml", 'name = "quiet"\nversion = "1.0"\nruntime = "python"\nentry = "bot.py"\n'
        )
        zf.writestr("bot.py", "from sdk import Bot, serve\n")
    return buffer.getvalue()


def test_an_upload_without_background_work_stays_pending(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    with db.session() as session:
        create_author("alice", session=session)
        token = create_token("alice", session=session, lifetime=timedelta(days=1))
    app = create_service_app(db, ServiceSettings(store=tmp_path / "store"), run_background=False)
    started: list[int] = []
    validator = app.state.service.validator
    validator._pool.submit = lambda *args, **kwargs: started.append(1)  # would start games
    with TestClient(app) as http:
        response = http.post(
            "/api/submissions",
            content=_bot(),
            headers={"Authorization": f"Bearer {token.secret}", "X-Kryt-Filename": "q.zip"},
        )
        assert response.status_code == 202, response.text
        body = response.json()
    assert started == []
    assert body["status"] == "pending", body
    # A server that does run validations picks it up.
    assert validator.resume() == 1
    assert started == [1]
    db.close()
