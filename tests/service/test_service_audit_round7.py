"""Round-7 audit of the arena service: its own 500s were neither counted in ``/metrics`` nor
hardened (B6; under /api/ the mounted app's said "Internal Server Error", m5), ``/health``
said "ok" while writes failed or went to a deleted database file, and a restart on a
missing file created an empty database without a word (B5, B7), an empty zip and a
multipart upload were "not an archive" (m1, m2), ``TRACE`` and ``CONNECT`` were 404s (m4),
and a client stalling mid-body held its request forever (m6).

The in-process tests run on SQLite (the PostgreSQL health probe on a database of its own
on ``KRYT_TEST_POSTGRES_URL``, marker ``postgres``); the body deadline and ``TRACE`` are
tested on a real server (``kryt arena serve`` in a subprocess) over raw sockets."""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

import arena.service.app as app_module
import leaderboard.web.app as leaderboard_module
from arena.db import Database, open_database
from arena.db.accounts import create_author, create_token
from arena.service.app import BODY_MIN_RATE, INTERNAL_DETAIL, create_service_app
from arena.service.settings import ServiceSettings, SettingsError
from kryt.cli import main
from kryt.errors import ExitCode
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.service.conftest import ROOT
from tests.service.helpers import alice_service
from tests.service.helpers import problem as _problem
from tests.services import require

URL = "/api/submissions"
HARDENING = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}
STARTUP_S = 120.0
ANSWER_S = 30.0
HEADER_TIMEOUT_S = 3.0
"""How long a raw-socket client waits for an answer (generous: the machine is busy)."""


def _archive(name: str = "robot", *, padding: int = 0) -> bytes:
    """A minimal bot's archive; ``padding`` random hex characters in a comment of bot.py."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        manifest = f'name = "{name}"\nversion = "1.0"\nruntime = "python"\nentry = "bot.py"\n'
        zf.writestr("bot.toml", manifest)
        zf.writestr("bot.py", f"# {os.urandom(padding // 2).hex()}\nx = 1\n")
    return buffer.getvalue()


@dataclass
class Local:
    """The service app in process over a SQLite file (nothing runs in the background)."""

    db: Database
    http: TestClient
    path: Path
    token: str

    @property
    def alice(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def requests(self, method: str, status: int) -> int:
        """``kryt_http_requests_total`` of ``method`` and ``status`` (0 if absent)."""
        text = self.http.get("/metrics").text
        found = re.search(
            rf'^kryt_http_requests_total{{method="{method}",status="{status}"}} (\d+)$',
            text,
            re.M,
        )
        return int(found.group(1)) if found else 0


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    db, app, secret = alice_service(tmp_path)
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Local(db, http, tmp_path / "arena.db", secret)
    db.close()


# ---------------------------------------------------------------- B6 / m5: every 500 counted


def _boom(*_args: object, **_kwargs: object) -> Any:
    raise RuntimeError("boom: a secret in the traceback")


BUGS: dict[str, tuple[str, str, Callable[[pytest.MonkeyPatch], None]]] = {
    # The service's own routes (answered by Starlette's ServerErrorMiddleware before).
    "service-api": (
        "GET",
        "/api/ladder",
        lambda mp: mp.setattr(app_module, "ladder_series_ids", _boom),
    ),
    "service-api-post": (
        "POST",
        "/api/register",
        lambda mp: mp.setattr(app_module, "_register", _boom),
    ),
    "service-page": ("GET", "/login", lambda mp: mp.setattr(app_module, "render", _boom)),
    # The mounted leaderboard app's (its own 500, "Internal Server Error", under /api/ too).
    "leaderboard-api": (
        "GET",
        "/api/leaderboard",
        lambda mp: mp.setattr(leaderboard_module, "leaderboard_json", _boom),
    ),
    "leaderboard-page": (
        "GET",
        "/",
        lambda mp: mp.setattr(leaderboard_module, "leaderboard_page", _boom),
    ),
}


@pytest.mark.parametrize("bug", BUGS.values(), ids=BUGS.keys())
def test_every_500_is_counted_hardened_logged_and_tells_nothing(
    local: Local,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    bug: tuple[str, str, Callable[[pytest.MonkeyPatch], None]],
) -> None:
    method, path, break_it = bug
    before = local.requests(method, 500)
    with monkeypatch.context() as mp:
        break_it(mp)
        body = {"invite": "x", "name": "dana", "password": "a long password"}
        response = local.http.request(method, path, json=body if method == "POST" else None)
    assert response.status_code == 500, response.text
    for name, value in HARDENING.items():
        assert response.headers.get(name) == value, (name, dict(response.headers))
    assert "boom" not in response.text and "Traceback" not in response.text
    if path.startswith("/api/"):
        assert _problem(response, 500)["detail"] == INTERNAL_DETAIL
    else:
        assert response.text == "Internal Server Error"
    assert local.requests(method, 500) == before + 1
    # "logged on the server": the traceback is in the log.
    logged = [r for r in caplog.records if r.exc_info and "boom" in str(r.exc_info[1])]
    assert logged, [r.getMessage() for r in caplog.records]
    # The server goes on answering.
    assert local.http.get("/health").status_code == 200


# ---------------------------------------------------------------- B5 / B7: /health


def _unhealthy(local: Local) -> str:
    response = local.http.get("/health")
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["status"] == "unavailable"
    reason: str = body["database"]
    return reason


def test_health_reports_a_deleted_database_file(local: Local) -> None:
    """The server kept answering "ok" while it wrote into a deleted file (lost at restart)."""
    assert local.http.get("/health").json()["database"] == "ok"
    for end in ("", "-wal", "-shm"):
        Path(f"{local.path}{end}").unlink(missing_ok=True)
    reason = _unhealthy(local)
    assert str(local.path) in reason and "writes are refused" in reason
    # And they are: an upload is a 503, not a submission acknowledged into the lost file.
    answer = local.http.post("/api/submissions", content=_archive("ghost"), headers=local.alice)
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"]


def test_health_reports_a_database_file_replaced_under_the_server(local: Local) -> None:
    copy = local.path.with_name("copy.db")
    with sqlite3.connect(local.path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    os.replace(copy, local.path)
    reason = _unhealthy(local)
    assert str(local.path) in reason and "no longer the file this process opened" in reason


def test_health_reports_a_database_locked_by_another_writer(local: Local) -> None:
    """An operator's sqlite3 session left in a write transaction: every write waits 60 s and
    fails, but /health said "ok"."""
    holder = sqlite3.connect(local.path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        reason = _unhealthy(local)
        assert "lock" in reason and str(local.path) in reason, reason
    finally:
        holder.rollback()
        holder.close()
    assert local.http.get("/health").status_code == 200


def _make_unwritable(path: Path) -> Callable[[], None] | None:
    """Make ``path`` unwritable for this process (the immutable flag as root, whom modes do
    not stop; a read-only mode otherwise); how to undo it, or None when neither works."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None:
            return None
        done = subprocess.run([chattr, "+i", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            return None

        def undo() -> None:
            subprocess.run([chattr, "-i", str(path)], check=True)

        return undo
    mode = path.stat().st_mode
    path.chmod(0o444)
    return lambda: path.chmod(mode)


def test_health_reports_a_database_file_it_cannot_write(local: Local) -> None:
    """``chattr +i`` (or a read-only mode): every write failed with a disk I/O error, and a
    new connection opens the file read-only; /health said "ok"."""
    undo = _make_unwritable(local.path)
    if undo is None:
        pytest.skip("cannot make a file unwritable here (root without chattr support)")
    try:
        assert not os.access(local.path, os.W_OK)
        reason = _unhealthy(local)
        assert str(local.path) in reason and "not writable" in reason
    finally:
        undo()
    assert local.http.get("/health").status_code == 200


@pytest.mark.postgres
def test_health_reports_a_postgresql_database_that_takes_no_writes(tmp_path: Path) -> None:
    admin_url = postgres_admin_url()
    require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
    assert admin_url is not None
    for url in _fresh_postgres_database(admin_url):
        writable = open_database(url)  # creates the schema
        read_only_url = (
            make_url(url)
            .update_query_dict({"options": "-c default_transaction_read_only=on"})
            .render_as_string(hide_password=False)
        )
        read_only = open_database(read_only_url)
        try:
            settings = ServiceSettings(store=tmp_path / "store")
            for db, status in ((writable, 200), (read_only, 503)):
                app = create_service_app(db, settings, run_background=False)
                with TestClient(app, raise_server_exceptions=False) as http:
                    response = http.get("/health")
                assert response.status_code == status, response.text
            assert "read-only" in response.json()["database"]
        finally:
            read_only.close()
            writable.close()


def test_serving_a_missing_sqlite_file_says_it_creates_an_empty_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """A restart after the file was deleted silently served a new, empty arena."""
    path = tmp_path / "arena.db"
    # The port file's folder does not exist: the server stops right after opening.
    args = ["--port", "0", "--port-file", str(tmp_path / "no" / "dir" / "port")]
    caplog.set_level(logging.WARNING)
    code = main(["arena", "serve", "--no-ladder", "-d", f"sqlite:///{path}", *args])
    assert code == ExitCode.BAD_INPUT, capsys.readouterr().err
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(f"created a new, empty database at {path}" in m for m in warned), warned
    assert path.exists()
    caplog.clear()
    code = main(["arena", "serve", "--no-ladder", "-d", f"sqlite:///{path}", *args])
    assert code == ExitCode.BAD_INPUT
    assert not any("empty database" in r.getMessage() for r in caplog.records)
    with open_database(f"sqlite:///{path}") as db:
        assert not db.created


# ---------------------------------------------------------------- m1 / m2: upload messages


def _empty_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w"):
        pass
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("archive", "kind"),
    [(b"PK\x05\x06" + b"\0" * 18, ".zip"), (_empty_tar(), ".tar")],
    ids=["zip", "tar"],
)
def test_an_empty_archive_says_it_has_no_files(local: Local, archive: bytes, kind: str) -> None:
    response = local.http.post(URL, content=archive, headers=local.alice)
    detail = _problem(response, 422)["detail"]
    assert f"is a {kind} archive with no files" in detail, detail
    assert "is not a" not in detail


def test_a_multipart_upload_says_to_send_the_archive_as_the_body(local: Local) -> None:
    """``curl -F file=@bot.zip`` (the docs say ``--data-binary``): "not an archive"."""
    response = local.http.post(
        URL, files={"file": ("bot.zip", _archive(), "application/zip")}, headers=local.alice
    )
    detail = _problem(response, 422)["detail"]
    assert "multipart form" in detail and "--data-binary" in detail, detail
    # A form body sent with another Content-Type is recognised by its boundary.
    body = b"--xyz\r\nContent-Disposition: form-data; name=file\r\n\r\nPK\x03\x04\r\n--xyz--\r\n"
    headers = {**local.alice, "Content-Type": "application/octet-stream"}
    detail = _problem(local.http.post(URL, content=body, headers=headers), 422)["detail"]
    assert "multipart form" in detail
    # The archive itself as the body is stored, whatever Content-Type says.
    headers = {**local.alice, "Content-Type": "multipart/form-data; boundary=x"}
    response = local.http.post(URL, content=_archive(), headers=headers)
    assert response.status_code == 202, response.text


# ---------------------------------------------------------------- m4: every method gets a 405


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND"])
@pytest.mark.parametrize("path", ["/api/me", URL, "/api/games/1", "/", "/games/1", "/login"])
def test_a_method_a_path_does_not_take_is_a_405_with_allow(
    local: Local, method: str, path: str
) -> None:
    response = local.http.request(method, path)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] and method not in response.headers["allow"]
    if path.startswith("/api/"):
        _problem(response, 405)
    # What the path takes still works (the fallback must not shadow the mounted app).
    allowed = response.headers["allow"].split(", ")
    assert "GET" in allowed or "POST" in allowed


def test_the_pages_still_answer_their_own_methods(local: Local) -> None:
    assert local.http.get("/").status_code == 200
    assert local.http.get("/games/1").status_code == 404  # no such game: the mounted app
    assert local.http.get("/api/me", headers=local.alice).status_code == 200


# ---------------------------------------------------------------- m6: a stalled body


def test_the_body_timeout_setting_is_checked() -> None:
    assert ServiceSettings().body_timeout_seconds == 30.0
    env = {"KRYT_ARENA_BODY_TIMEOUT_SECONDS": "2.5"}
    assert ServiceSettings.from_env(env).body_timeout_seconds == 2.5
    for bad in ("0", "-1", "nan", "inf", "99999"):
        with pytest.raises(SettingsError, match="body_timeout_seconds"):
            ServiceSettings.from_env({"KRYT_ARENA_BODY_TIMEOUT_SECONDS": bad})
    assert ServiceSettings().header_timeout_seconds == 30.0
    env = {"KRYT_ARENA_HEADER_TIMEOUT_SECONDS": "4"}
    assert ServiceSettings.from_env(env).header_timeout_seconds == 4
    for bad in ("0", "-1", "nan", "inf", "99999"):
        with pytest.raises(SettingsError, match="header_timeout_seconds"):
            ServiceSettings.from_env({"KRYT_ARENA_HEADER_TIMEOUT_SECONDS": bad})


@dataclass
class Served:
    """A real server (``kryt arena serve``) on loopback."""

    port: int
    token: str
    log: Path

    def raw(self, request: bytes) -> tuple[bytes, bool, float]:
        """Send ``request`` and read until the server closes the connection; the bytes,
        whether the server closed it, and how long the answer took."""
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_S) as sock:
            sock.sendall(request)
            received = b""
            try:
                while chunk := sock.recv(65536):
                    received += chunk
            except TimeoutError:
                return received, False, time.monotonic() - started
        return received, True, time.monotonic() - started


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose body deadline is 1 s (``KRYT_ARENA_BODY_TIMEOUT_SECONDS``) and header
    deadline :data:`HEADER_TIMEOUT_S`."""
    workdir = tmp_path_factory.mktemp("served")
    url = f"sqlite:///{workdir / 'arena.db'}"
    with open_database(url) as db, db.session() as session:
        create_author("alice", session=session)
        token = create_token("alice", session=session, lifetime=timedelta(days=1)).secret
    port_file = workdir / "port"
    log = workdir / "server.log"
    # Short: bot socket paths below it must fit in a unix socket address.
    runtime = Path(tempfile.mkdtemp(prefix="krt-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KRYT_ARENA_BODY_TIMEOUT_SECONDS": "1",
        "KRYT_ARENA_HEADER_TIMEOUT_SECONDS": str(HEADER_TIMEOUT_S),
        "KRYT_ARENA_SANDBOX_BACKEND": "process",
        "KRYT_ARENA_SANDBOX_ALLOW_UNSAFE": "1",
        "KRYT_SANDBOX_RUNTIME_DIR": str(runtime),
    }
    command = [sys.executable, "-m", "kryt", "arena", "serve", "--no-ladder", "-d", url]
    command += ["--port", "0", "--port-file", str(port_file), "--store", str(workdir / "st")]
    with log.open("w") as out:
        process = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while not port_file.exists() or not port_file.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {log.read_text()}")
            time.sleep(0.1)
        port = int(port_file.read_text())
        while True:  # the port is bound before the server listens on it
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server not healthy: {log.read_text()}")
            time.sleep(0.1)
        yield Served(port, token, log)
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
        shutil.rmtree(runtime, ignore_errors=True)


def _head(status_line_and_headers: bytes) -> tuple[int, dict[str, str]]:
    head = status_line_and_headers.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


STALLED = {
    "upload": ("/api/submissions", "application/octet-stream", b"PK\x03\x04partial"),
    "register": ("/api/register", "application/json", b'{"invite": "'),
    "form": ("/login", "application/x-www-form-urlencoded", b"csrf=abc&name="),
}


@pytest.mark.parametrize("stalled", STALLED.values(), ids=STALLED.keys())
def test_a_body_that_stops_arriving_is_a_408_and_the_connection_is_closed(
    served: Served, stalled: tuple[str, str, bytes]
) -> None:
    """``Content-Length: 5000``, a few bytes, then nothing: the request was held forever."""
    path, content_type, part = stalled
    request = (
        f"POST {path} HTTP/1.1\r\nHost: arena\r\nAuthorization: Bearer {served.token}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: 5000\r\n\r\n"
    ).encode() + part
    received, closed, took = served.raw(request)
    assert received, f"no answer in {ANSWER_S} s; server log:\n{served.log.read_text()}"
    status, headers = _head(received)
    assert status == 408, received[:500]
    assert closed, "the server kept the connection open after its 408"
    assert headers.get("connection") == "close"
    assert took >= 0.9  # the deadline (1 s) is what is under test, not the machine's speed
    for name, value in HARDENING.items():
        assert headers.get(name) == value
    body = received.split(b"\r\n\r\n", 1)[1]
    if path.startswith("/api/"):
        assert headers["content-type"].startswith("application/problem+json")
        assert b"stopped arriving" in body and b'"status":408' in body
    else:
        assert b"stopped arriving" in body


def test_a_body_sent_in_time_is_not_cut_off(served: Served) -> None:
    body = _archive("intime")
    request = (
        f"POST /api/submissions HTTP/1.1\r\nHost: arena\r\nAuthorization: Bearer "
        f"{served.token}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    received, _, _ = served.raw(request)
    status, _ = _head(received)
    assert status == 202, received[:500]
    metrics, _, _ = served.raw(b"GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert b'kryt_http_requests_total{method="POST",status="202"} 1' in metrics


def _trickle(served: Served, head: bytes, pieces: list[bytes], pause: float) -> bytes:
    """Send ``head``, then each piece ``pause`` seconds apart while the server listens;
    what the server answered (read until it closes the connection)."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_S) as sock:
        sock.sendall(head)
        for piece in pieces:
            time.sleep(pause)
            try:
                sock.sendall(piece)
            except OSError:  # the server answered and closed: read what it said
                break
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return received


def test_a_body_trickling_in_below_the_minimum_rate_is_a_408(served: Served) -> None:
    """A byte every half second never waits the 1 s deadline of a piece, but the whole
    body must average BODY_MIN_RATE bytes a second once its first second is spent."""
    head = (
        f"POST /api/submissions HTTP/1.1\r\nHost: arena\r\nAuthorization: Bearer "
        f"{served.token}\r\nContent-Length: 5000\r\n\r\n"
    ).encode()
    started = time.monotonic()
    received = _trickle(served, head, [b"P"] * 20, 0.5)
    took = time.monotonic() - started
    assert received, f"no answer; server log:\n{served.log.read_text()}"
    status, headers = _head(received)
    assert status == 408, received[:500]
    assert headers.get("connection") == "close"
    assert took >= 0.9
    assert b"came too slowly" in received and b"500 bytes a second" in received, received


def test_a_body_sent_in_pieces_at_a_fair_rate_is_not_cut_off(served: Served) -> None:
    """Spread over more than the deadline of a piece, but faster than the minimum rate."""
    body = _archive("fairrate", padding=8000)
    head = (
        f"POST /api/submissions HTTP/1.1\r\nHost: arena\r\nAuthorization: Bearer "
        f"{served.token}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    # Four pieces 0.4 s apart, 1.6 s in all: each piece buys 2 s more at the minimum rate.
    size = -(-len(body) // 4)
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    assert size > 2 * BODY_MIN_RATE
    received = _trickle(served, head, pieces, 0.4)
    status, _ = _head(received)
    assert status == 202, received[:500]


@pytest.mark.parametrize("method", ["TRACE", "CONNECT"])
def test_uvicorn_passes_trace_and_connect_to_the_app(served: Served, method: str) -> None:
    request = f"{method} /api/me HTTP/1.1\r\nHost: arena\r\nConnection: close\r\n\r\n"
    received, _, _ = served.raw(request.encode())
    status, headers = _head(received)
    assert status == 405, received[:500]
    assert headers["allow"] == "GET, HEAD"
    assert headers["content-type"].startswith("application/problem+json")


def test_a_connection_that_sends_nothing_is_closed_at_the_header_deadline(
    served: Served,
) -> None:
    """uvicorn held such a connection for ever (file descriptors run out)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_S) as sock:
        try:
            received = sock.recv(65536)
        except TimeoutError:
            pytest.fail("the server kept an idle connection open")
    took = time.monotonic() - started
    assert received == b""  # nothing had come: closed without an answer
    assert took >= HEADER_TIMEOUT_S - 0.5


def test_headers_trickling_past_the_deadline_are_a_408(served: Served) -> None:
    started = time.monotonic()
    received = _trickle(served, b"GET /health HTTP/1.1\r\nHost: arena\r\n", [b"X"] * 40, 0.25)
    took = time.monotonic() - started
    assert received, f"no answer; server log:\n{served.log.read_text()}"
    status, headers = _head(received)
    assert status == 408, received[:500]
    assert headers.get("connection") == "close"
    assert b"headers did not arrive in time" in received
    assert took >= HEADER_TIMEOUT_S - 0.5


def test_headers_sent_in_pieces_within_the_deadline_are_answered(served: Served) -> None:
    pieces = [b"Host: arena\r\n", b"Connection: close\r\n", b"\r\n"]
    received = _trickle(served, b"GET /health HTTP/1.1\r\n", pieces, 0.2)
    status, _ = _head(received)
    assert status == 200, received[:500]


def test_a_kept_alive_connection_gets_a_fresh_header_deadline(served: Served) -> None:
    """Three requests on one connection, each sent half the deadline after the previous
    answer (together longer than the deadline), then two pipelined ones: all answered, as
    the deadline counts from the previous response, not from connecting."""
    request = b"GET /health HTTP/1.1\r\nHost: arena\r\n\r\n"
    last = request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_S) as sock:
        answers = b""
        for number in range(1, 4):
            sock.sendall(request)
            while answers.count(b"HTTP/1.1 200") < number:
                chunk = sock.recv(65536)
                assert chunk, f"closed before answer {number}: {answers[-300:]!r}"
                answers += chunk
            time.sleep(HEADER_TIMEOUT_S / 2)
        assert time.monotonic() - started > HEADER_TIMEOUT_S
        sock.sendall(request + last)
        try:
            while chunk := sock.recv(65536):
                answers += chunk
        except TimeoutError:
            pytest.fail("the server did not close after the request that asked it to")
    assert answers.count(b"HTTP/1.1 200") == 5, answers[-500:]
    assert b" 408 " not in answers
