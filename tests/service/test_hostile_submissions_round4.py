"""Round-4 hostile uploads, on the arena service in process and through ``kryt``.

Found by uploading hostile archives: several answered a bare ``500 Internal Server Error``
(not a problem document), refused uploads left their files in the store, the audit record of
an upload refused for another author's bot was rolled back with it, and ``kryt submit`` of an
archive with a non-Latin-1 name (``бот.zip``) or a broken archive ended in a traceback.
"""

from __future__ import annotations

import asyncio
import io
import socket
import zipfile
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import arena.service.app as service_app
import arena.service.uploads as uploads
from arena.db import Database, open_database
from arena.db.accounts import audit_entries, create_author, create_token
from arena.service.app import create_service_app
from arena.service.settings import ServiceSettings
from kryt.cli import main
from kryt.errors import ExitCode
from tests.service.helpers import problem

BOT = b"from sdk import Bot, serve\n"
URL = "/api/submissions"


def _manifest(name: str = "hostile", version: str = "1.0", extra: str = "") -> bytes:
    return (
        f'name = "{name}"\nversion = "{version}"\nruntime = "python"\nentry = "bot.py"\n{extra}'
    ).encode()


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


def _bot(name: str = "hostile", version: str = "1.0", body: bytes = BOT) -> bytes:
    return _zip([("bot.toml", _manifest(name, version)), ("bot.py", body)])


@dataclass
class Arena:
    db: Database
    app: FastAPI
    http: TestClient
    store: Path
    alice: dict[str, str]
    bob: dict[str, str]

    def rows(self, sql: str) -> list[Any]:
        from sqlalchemy import text

        with self.db.read_session() as session:
            return list(session.connection().execute(text(sql)).all())


@pytest.fixture
def arena(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Arena]:
    db = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    settings = ServiceSettings(store=tmp_path / "store", writes_per_minute=1000)
    with db.session() as session:
        tokens = {}
        for author in ("alice", "bob"):
            create_author(author, session=session)
            tokens[author] = create_token(author, session=session, lifetime=timedelta(days=1))
    app = create_service_app(db, settings, run_background=False)
    # uploads only: no validation games in the background
    monkeypatch.setattr(app.state.service.validator, "enqueue", lambda _submission_id: None)
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Arena(
            db,
            app,
            http,
            tmp_path / "store",
            {"Authorization": f"Bearer {tokens['alice'].secret}"},
            {"Authorization": f"Bearer {tokens['bob'].secret}"},
        )
    db.close()


def _problem(response: Any, status: int) -> str:
    detail: str = problem(response, status)["detail"]
    assert "\n" not in detail
    return detail


def _stored(arena: Arena) -> list[str]:
    return sorted(p.name for p in arena.store.iterdir()) if arena.store.is_dir() else []


# ---------------------------------------------------------------- 422, not a bare 500

HOSTILE = {
    "file-and-directory": _zip(
        [("bot.toml", _manifest()), ("bot.py", BOT), ("a", b"x"), ("a/", b"")]
    ),
    "manifest-nested-deeply": _zip(
        [("bot.toml", _manifest(extra="x = " + "[" * 20000 + "]" * 20000)), ("bot.py", BOT)]
    ),
    "entry-in-pycache": _zip(
        [
            ("bot.toml", _manifest().replace(b'"bot.py"', b'"__pycache__/bot.py"')),
            ("__pycache__/bot.py", BOT),
        ]
    ),
}


@pytest.mark.parametrize("archive", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_archive_is_a_422_problem_and_stores_nothing(arena: Arena, archive: bytes) -> None:
    _problem(arena.http.post(URL, content=archive, headers=arena.alice), 422)
    assert _stored(arena) == []
    assert arena.rows("select count(*) from submissions") == [(0,)]
    assert arena.rows("select count(*) from bots") == [(0,)]


def test_an_unexpected_error_under_api_is_a_problem_document(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    def bug(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(service_app, "accept_upload", bug)
    detail = _problem(arena.http.post(URL, content=_bot(), headers=arena.alice), 500)
    assert "a bug" not in detail


def test_a_content_length_of_non_ascii_digits_is_refused(arena: Arena) -> None:
    # "²".isdigit() is true but int("²") raises: that was a 500.
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": URL,
        "raw_path": URL.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"authorization", arena.alice["Authorization"].encode()),
            (b"content-length", "²".encode("latin-1")),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    asyncio.run(arena.app(scope, receive, send))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 413


# ---------------------------------------------------------------- refused uploads leave nothing


def test_refused_uploads_leave_nothing_in_the_store(arena: Arena) -> None:
    first = arena.http.post(URL, content=_bot(), headers=arena.alice)
    assert first.status_code == 202, first.text
    kept = _stored(arena)
    assert len(kept) == 1
    # another author's bot name: 403; the same version with other content: 409
    _problem(arena.http.post(URL, content=_bot(version="2.0"), headers=arena.bob), 403)
    reused = _problem(
        arena.http.post(URL, content=_bot(body=BOT + b"# 2\n"), headers=arena.alice), 409
    )
    assert reused.endswith("versions are immutable: bump the version in bot.toml"), reused
    assert _stored(arena) == kept
    assert arena.rows("select count(*) from submissions") == [(1,)]


def test_an_upload_refused_for_another_authors_bot_is_audited(arena: Arena) -> None:
    assert arena.http.post(URL, content=_bot(), headers=arena.alice).status_code == 202
    _problem(arena.http.post(URL, content=_bot(version="2.0"), headers=arena.bob), 403)
    with arena.db.read_session() as session:
        outcomes = [(e.action, e.outcome, e.target) for e in audit_entries(session=session)]
    assert ("submit", "forbidden", "hostile") in outcomes


def test_a_name_claimed_meanwhile_by_another_author_is_a_403(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert arena.http.post(URL, content=_bot(), headers=arena.alice).status_code == 202
    # bob's upload checks ownership before alice's claim is visible to it (a race, forced)
    monkeypatch.setattr(uploads, "find_bot", lambda *_args, **_kwargs: None)
    detail = _problem(arena.http.post(URL, content=_bot(version="2.0"), headers=arena.bob), 403)
    assert "another author" in detail
    assert arena.rows("select count(*) from submissions") == [(1,)]
    assert len(_stored(arena)) == 1


def test_the_file_name_header_is_percent_decoded_and_shown_escaped(arena: Arena) -> None:
    headers = {**arena.alice, "X-Kryt-Filename": "%D0%B1%D0%BE%D1%82%1B%5B31m.zip"}
    detail = _problem(arena.http.post(URL, content=b"junk", headers=headers), 422)
    assert "бот\\x1b[31m.zip" in detail and "\x1b" not in detail


# ---------------------------------------------------------------- kryt submit


@pytest.mark.parametrize(
    "archive",
    [
        HOSTILE["file-and-directory"],
        b"PK\x03\x04" + b"\x00" * 200,  # a zip header and nothing after
    ],
    ids=["file-and-directory", "truncated"],
)
def test_kryt_submit_of_a_broken_archive_is_one_line(
    tmp_path: Path,
    archive: bytes,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bot.zip").write_bytes(archive)
    assert main(["submit", "bot.zip"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "kryt.db").exists() and not (tmp_path / ".kryt").exists()


def test_kryt_submit_to_a_server_of_an_archive_with_a_cyrillic_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An HTTP header holds Latin-1 only: the file name went into X-Kryt-Filename as is.
    (tmp_path / "бот.zip").write_bytes(_bot())
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code = main(["submit", str(tmp_path / "бот.zip"), "--server", f"http://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err
    assert "cannot reach" in err and "Traceback" not in err
