"""Round-5 audit of the arena service: an upload blocked every other request, uploads were
checked against smaller limits than a local ``kryt submit`` (and not compiled), a wrong
method on an API route was a 404 "no page", a malformed query id was a 404, overlong
lifetimes crashed, and NUL characters in names and headers were 500s on PostgreSQL."""

from __future__ import annotations

import errno
import io
import json
import random
import re
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

import arena.service.app as service_app
import sandbox.submission as submission_module
from arena.db import Database, InvalidRecordError, open_database
from arena.db.accounts import (
    MAX_LIFETIME_DAYS,
    audit_entries,
    create_invite,
    create_token,
    storable_text,
)
from arena.service.settings import ServiceSettings, SettingsError
from arena.service.uploads import UploadError
from kryt.cli import main
from kryt.errors import ExitCode
from tests.service.conftest import Arena, make_bot
from tests.service.helpers import alice_service
from tests.service.helpers import problem as _problem

URL = "/api/submissions"
DEADLINE_S = 120.0
"""How long a request that should answer at once may take on a busy machine."""


def _manifest(name: str, version: str = "1.0") -> str:
    return f'name = "{name}"\nversion = "{version}"\nruntime = "python"\nentry = "bot.py"\n'


def _zip(entries: list[tuple[str, bytes | str]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
    return buffer.getvalue()


@dataclass
class Local:
    """The service app in process over SQLite (no background work)."""

    db: Database
    http: TestClient
    alice: dict[str, str]


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Local]:
    db, app, secret = alice_service(tmp_path)
    monkeypatch.setattr(app.state.service.validator, "enqueue", lambda _submission_id: None)
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Local(db, http, {"Authorization": f"Bearer {secret}"})
    db.close()


# ---------------------------------------------------------------- 1. uploads in worker threads


def test_health_answers_while_an_upload_is_processed(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_accept(*_args: object, **_kwargs: object) -> None:
        entered.set()
        release.wait(DEADLINE_S)  # the real one unpacks, hashes, copies and writes
        raise UploadError("refused after a long check")

    monkeypatch.setattr(service_app, "accept_upload", slow_accept)
    uploaded: list[int] = []
    upload = threading.Thread(
        target=lambda: uploaded.append(
            local.http.post(URL, content=b"PK\x03\x04", headers=local.alice).status_code
        )
    )
    upload.start()
    try:
        assert entered.wait(DEADLINE_S), "the upload never reached accept_upload"
        answered: list[int] = []
        health = threading.Thread(
            target=lambda: answered.append(local.http.get("/health").status_code)
        )
        health.start()
        health.join(DEADLINE_S)
        # Answered while the upload is still being processed (release not yet set).
        assert answered == [200], "/health waited for the upload"
    finally:
        release.set()
        upload.join(DEADLINE_S)
    assert uploaded == [422]


# ---------------------------------------------------------------- 2. the local submit's checks


def test_an_upload_gets_the_unpacked_size_limit_of_a_local_submit(local: Local) -> None:
    # 8 MiB unpacked (a few KiB packed): over max_upload_bytes (5 MiB), within the 20 MiB
    # of a local `kryt submit`, which accepts it.
    archive = _zip(
        [("bot.toml", _manifest("roomy")), ("bot.py", "x = 1\n"), ("data", "0" * (8 << 20))]
    )
    assert len(archive) < 1 << 20
    response = local.http.post(URL, content=archive, headers=local.alice)
    assert response.status_code == 202, response.text
    # Over 20 MiB unpacked is refused, as locally.
    data = [(f"data{i}", "0" * (7 << 20)) for i in range(3)]
    huge = _zip([("bot.toml", _manifest("huge")), ("bot.py", "x = 1\n"), *data])
    detail = _problem(local.http.post(URL, content=huge, headers=local.alice), 422)["detail"]
    assert "unpacks to more than 20971520 bytes" in detail


def test_an_upload_whose_python_does_not_compile_is_a_422(local: Local) -> None:
    archive = _zip([("bot.toml", _manifest("broken")), ("bot.py", "def act(:\n    pass\n")])
    detail = _problem(local.http.post(URL, content=archive, headers=local.alice), 422)["detail"]
    assert "bot.py:1" in detail and "SyntaxError" in detail
    with local.db.read_session() as session:
        assert not [e for e in audit_entries(session=session) if e.outcome == "stored"]


def test_a_bundled_bots_name_with_other_content_is_a_409_and_stores_nothing(
    local: Local, tmp_path: Path
) -> None:
    """Another ``greedy`` would pass for the reference bot and make ``builtin:greedy``
    unusable in the arena's database."""
    archive = _zip([("bot.toml", _manifest("greedy", "1.0.0")), ("bot.py", "x = 1\n")])
    detail = _problem(local.http.post(URL, content=archive, headers=local.alice), 409)["detail"]
    assert "reserved for the bundled example bot (builtin:greedy)" in detail
    store = tmp_path / "store"
    assert not store.exists() or not [p for p in store.iterdir() if not p.name.startswith(".")]


def test_max_upload_bytes_is_at_most_the_submission_limit() -> None:
    assert ServiceSettings(max_upload_bytes=20 << 20).max_upload_bytes == 20 << 20
    with pytest.raises(SettingsError, match="max_upload_bytes must be at most 20971520"):
        ServiceSettings(max_upload_bytes=(20 << 20) + 1)
    with pytest.raises(SettingsError, match="max_upload_bytes"):
        ServiceSettings.from_env({"KRYT_ARENA_MAX_UPLOAD_BYTES": "30000000"})


def test_serve_refuses_a_too_large_upload_limit_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRYT_ARENA_MAX_UPLOAD_BYTES", "30000000")
    # (An unwritable port file: were the setting taken, the server would stop there.)
    url = f"sqlite:///{tmp_path / 'a.db'}"
    args = ["--port", "0", "--port-file", str(tmp_path / "no" / "dir" / "port")]
    code = main(["arena", "serve", "--no-ladder", "-d", url, *args])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert "max_upload_bytes must be at most" in err and "Traceback" not in err


# ---------------------------------------------------------------- 3. 405 with Allow


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", "/api/me", "GET, HEAD"),
        ("GET", "/api/register", "POST"),
        ("DELETE", "/api/submissions/1", "GET, HEAD"),
        ("PUT", "/api/submissions", "GET, HEAD, POST"),
        ("OPTIONS", "/api/submissions", "GET, HEAD, POST"),
        ("GET", "/api/bots/someone/retire", "POST"),
        ("POST", "/api/leaderboard", "GET, HEAD"),
        ("PATCH", "/api/games/1", "GET, HEAD"),
    ],
)
def test_a_wrong_method_on_an_api_route_is_a_405_with_allow(
    local: Local, method: str, path: str, allow: str
) -> None:
    response = local.http.request(method, path, headers=local.alice)
    body = _problem(response, 405)
    assert response.headers["allow"] == allow
    assert body["title"] == "Method Not Allowed" and method in body["detail"]


def test_head_is_answered_as_get_without_the_body(local: Local) -> None:
    """RFC 9110 9.1: HEAD wherever GET works, with GET's headers and no body."""
    get = local.http.get("/api/submissions", headers=local.alice)
    head = local.http.head("/api/submissions", headers=local.alice)
    assert get.status_code == head.status_code == 200
    assert head.content == b"" and get.content
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == str(len(get.content))
    # Its authentication too: HEAD is no way around it.
    refused = local.http.head("/api/submissions")
    assert refused.status_code == 401 and refused.content == b""
    assert local.http.head("/").status_code == 200
    # A route without GET takes no HEAD either: 405 naming what it takes, no body.
    post_only = local.http.head("/api/register")
    assert post_only.status_code == 405 and post_only.content == b""
    assert post_only.headers["allow"] == "POST"


def test_the_right_methods_and_unknown_routes_are_unchanged(local: Local) -> None:
    assert local.http.get("/api/leaderboard").status_code == 200
    assert local.http.get("/api/me", headers=local.alice).json()["author"] == "alice"
    assert _problem(local.http.post("/api/no/such/route"), 404)["title"] == "Not Found"
    page = local.http.delete("/login")  # pages too: an HTML error page with Allow
    assert page.status_code == 405 and page.headers["allow"] == "GET, HEAD, POST"
    assert page.headers["content-type"].startswith("text/html")


# ---------------------------------------------------------------- 4. malformed query ids


@pytest.mark.parametrize("value", ["abc", "-1", "0", "1.5", "", "%C2%B2"])
def test_a_malformed_tournament_query_is_a_422_naming_it(local: Local, value: str) -> None:
    detail = _problem(local.http.get(f"/api/leaderboard?tournament={value}"), 422)["detail"]
    assert "tournament" in detail


def test_a_well_formed_unknown_tournament_is_a_404(local: Local) -> None:
    _problem(local.http.get("/api/leaderboard?tournament=424242"), 404)


# ---------------------------------------------------------------- 5. lifetimes


def test_token_lifetimes_are_bounded(local: Local) -> None:
    with local.db.session() as session:
        create_token("alice", session=session, lifetime=timedelta(days=MAX_LIFETIME_DAYS))
        for days in (MAX_LIFETIME_DAYS + 1, 99_999_999):
            with pytest.raises(InvalidRecordError, match=f"at most {MAX_LIFETIME_DAYS} days"):
                create_token("alice", session=session, lifetime=timedelta(days=days))
            with pytest.raises(InvalidRecordError, match=f"at most {MAX_LIFETIME_DAYS} days"):
                create_invite(session=session, lifetime=timedelta(days=days))


def test_token_days_setting_is_bounded() -> None:
    assert ServiceSettings(token_days=MAX_LIFETIME_DAYS).token_days == MAX_LIFETIME_DAYS
    with pytest.raises(SettingsError, match=f"token_days must be in 1..{MAX_LIFETIME_DAYS}"):
        ServiceSettings.from_env({"KRYT_ARENA_TOKEN_DAYS": "99999999"})


# ---------------------------------------------------------------- 8. audit text is storable


def test_audit_text_is_stored_with_control_characters_escaped() -> None:
    assert storable_text("a\x00b\x1b[2J\u202e", 200) == "a\\x00b\\x1b[2J\\u202e"
    assert storable_text("\ud800", 200) == "\\ud800"
    assert storable_text("x\x00" * 10, 5) == "x\\x00"  # the limit counts escapes, never cut one


# ---------------------------------------------------------------- on a real server (both DBs)


@pytest.mark.slow
def test_nul_in_names_and_headers_is_a_problem_not_a_500(arena: Arena) -> None:
    auth = arena.auth("carol")
    for method, path in (("GET", "/api/bots/a%00b/logs"), ("POST", "/api/bots/a%00b/retire")):
        response = httpx.request(method, arena.url + path, headers=auth, timeout=60)
        _problem(response, 404)
    refused = httpx.post(
        arena.url + URL,
        content=b"junk",
        headers={**auth, "X-Kryt-Filename": "a%00.zip"},
        timeout=60,
    )
    assert "a\\x00.zip" in _problem(refused, 422)["detail"]
    rows = arena.query("select target from audit_log where outcome = 'invalid'")
    assert ("a\\x00.zip",) in rows
    with httpx.Client(base_url=arena.url, timeout=60) as browser:
        csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/login").text)
        assert csrf is not None
        form = {"csrf": csrf.group(1), "name": "a\x00b", "password": "0123456789ab"}
        assert browser.post("/login", data=form).status_code == 401
    assert ("a\\x00b",) in arena.query("select target from audit_log where action = 'login'")
    for fields in (
        {"invite": "kryt-invite_\u0000", "name": "nul", "password": "0123456789ab"},
        {"invite": "\ud800", "name": "nul", "password": "0123456789ab"},
    ):
        _problem(
            httpx.post(arena.url + "/api/register", content=json.dumps(fields), timeout=60), 403
        )
    invite = _invite(arena)
    for fields, status in (
        ({"invite": invite, "name": "a\u0000b", "password": "0123456789ab"}, 422),
        ({"invite": invite, "name": "nul", "password": "\ud800" * 12}, 422),
    ):
        response = httpx.post(arena.url + "/api/register", content=json.dumps(fields), timeout=60)
        _problem(response, status)


def _invite(arena: Arena) -> str:
    with open_database(arena.database) as db, db.session() as session:
        return create_invite(session=session, lifetime=timedelta(days=1)).code


@pytest.mark.slow
def test_kryt_submit_says_an_archive_is_over_the_servers_limit(
    arena: Arena,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limit = httpx.get(arena.url + "/health", timeout=60).json()["max_upload_bytes"]
    assert limit == 256 * 1024  # the fixture's KRYT_ARENA_MAX_UPLOAD_BYTES
    bot = make_bot(tmp_path / "big", "big")
    (bot / "noise.bin").write_bytes(random.Random(5).randbytes(limit + 50_000))  # incompressible
    monkeypatch.setenv("KRYT_TOKEN", arena.tokens["carol"])
    code = main(["submit", str(bot), "--server", arena.url, "--no-wait"])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert f"accepts uploads of at most {limit} bytes" in err and "cannot reach" not in err


def test_the_upload_limit_is_published_on_health(local: Local) -> None:
    assert local.http.get("/health").json()["max_upload_bytes"] == 5 << 20


def test_the_api_page_is_made_here_and_fetches_nothing_from_elsewhere(local: Local) -> None:
    """FastAPI's Swagger page loads its scripts from a CDN: /api/docs is the arena's own."""
    page = local.http.get("/api/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    fetched = re.findall(r'(?:src|href)\s*=\s*["\']?([^"\' >]+)', page.text)
    assert fetched and not [url for url in fetched if re.match(r"(?:[a-z]+:)?//", url, re.I)]
    for operation in ("POST /api/submissions", "GET /api/me", "POST /api/register"):
        assert operation in page.text, operation
    assert local.http.get("/api/openapi.json").json()["paths"]


def test_the_openapi_document_lists_every_api_operation_served_and_its_problems(
    local: Local,
) -> None:
    """The leaderboard's /api/ operations the service serves (mounted) are in its document,
    and errors are described as sent: problem documents, never FastAPI's 422 shape."""
    document = local.http.get("/api/openapi.json").json()
    paths = document["paths"]
    assert {"/api/leaderboard", "/api/games/{game_id}", "/api/submissions"} <= set(paths)
    assert "HTTPValidationError" not in str(document) and "ValidationError" not in str(document)
    problem = document["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail"}
    for path, item in paths.items():
        for method, operation in item.items():
            errors = {code for code in operation["responses"] if not code.startswith("2")}
            assert errors == ({"4XX", "5XX"} if path.startswith("/api/") else set()), (
                method,
                path,
            )
    # What the document says is what is sent, the mounted leaderboard's answers too.
    for missing in ("/api/games/999999", "/api/leaderboard?tournament=999999"):
        answer = local.http.get(missing)
        assert answer.status_code == 404
        assert set(problem_fields := answer.json()) == set(problem["required"]), problem_fields
    assert "GET /api/leaderboard" in local.http.get("/api/docs").text


def test_a_store_that_cannot_take_an_upload_is_a_503_that_names_no_server_path(
    local: Local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under the store is the arena's problem, not the author's: a 503 to retry
    (not a 422 "invalid submission" nor a 500), without the server's paths, audited as
    nothing stored; once the disk has room the same upload is taken."""

    def disk_full(src: Path, dest: Path, rel: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    archive = _zip([("bot.toml", _manifest("spacey")), ("bot.py", "x = 1\n")])
    with monkeypatch.context() as patched:
        patched.setattr(submission_module, "_copy_regular", disk_full)
        response = local.http.post(URL, content=archive, headers=local.alice)
    body = _problem(response, 503)
    assert response.headers["retry-after"] == "30"
    assert "try again later" in body["detail"] and str(tmp_path) not in body["detail"], body
    with local.db.read_session() as session:
        assert not [e for e in audit_entries(session=session) if e.outcome == "stored"]
    store = tmp_path / "store"
    assert not store.exists() or not [p for p in store.iterdir() if not p.name.startswith(".")]
    assert local.http.post(URL, content=archive, headers=local.alice).status_code == 202
