"""A hostile review of the arena server over a real socket: ``kryt arena serve`` in a
subprocess on loopback (the conftest's ``_serve``), spoken to with raw sockets and httpx.

What an in-process test client cannot show: rate limits per client address (a client binds
a source address of its own in 127.0.0.0/8, so each test has fresh buckets and the trusted
proxy address 127.0.0.1 is not involved), forwarded headers from an untrusted peer, many
requests at once, request bodies refused while they are still being sent, and SIGTERM while
an upload is in flight.

Found and fixed (each test fails on the code before): refused credentials sent at once all
got checked (the auth-failure limit was checked before and spent after the check, so it did
not hold under concurrency, /login passwords included); a 413 left the connection open and
the server read on what the client kept sending; a request with both Content-Length and
Transfer-Encoding kept its connection open; behind a proxy on the IPv6 loopback every client
shared one rate-limit bucket.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.service.server import archive_of
from tests.service.conftest import Arena, _serve, kryt, make_bot

MAX_UPLOAD = 256 * 1024
WRITES = 6
FAILURES = 4
ENV = {
    "KRYT_ARENA_LADDER_ENABLED": "0",
    "KRYT_ARENA_WRITES_PER_MINUTE": str(WRITES),
    "KRYT_ARENA_AUTH_FAILURES_PER_MINUTE": str(FAILURES),
    "KRYT_ARENA_MAX_UPLOAD_BYTES": str(MAX_UPLOAD),
    "KRYT_ARENA_BODY_TIMEOUT_SECONDS": "4",
    "KRYT_ARENA_HEADER_TIMEOUT_SECONDS": "6",
}
_addresses = itertools.count(10)


def fresh_address() -> str:
    """A loopback source address no other test of this module used (fresh rate buckets)."""
    n = next(_addresses)
    return f"127.0.{n // 250}.{n % 250 + 2}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    workdir = tmp_path_factory.mktemp("socket-arena")
    yield from _serve(workdir, f"sqlite:///{workdir / 'arena.db'}", ENV)


def client(source: str, timeout: float = 60.0) -> httpx.Client:
    """An httpx client whose connections come from ``source``."""
    return httpx.Client(
        transport=httpx.HTTPTransport(local_address=source), timeout=timeout, trust_env=False
    )


def new_token(server: Arena, author: str) -> str:
    done = kryt("arena", "token", "create", author, "--days", "1", "--database", server.database)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    assert token.startswith("kryt_"), done.stdout
    return token


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["detail"], body
    return body


def retry_after(response: httpx.Response) -> int:
    value = response.headers.get("retry-after", "")
    assert value.isdigit() and 1 <= int(value) <= 120, response.headers
    return int(value)


def host_port(server: Arena) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(server.url)
    assert parsed.hostname is not None and parsed.port is not None
    return parsed.hostname, parsed.port


def connect(server: Arena, source: str, timeout: float = 60.0) -> socket.socket:
    sock = socket.create_connection(host_port(server), timeout=timeout, source_address=(source, 0))
    return sock


# Bytes read past the end of a response (the next pipelined response, when the server's
# answers arrive in one segment), kept for that socket's next read_response.
_unread: weakref.WeakKeyDictionary[socket.socket, bytes] = weakref.WeakKeyDictionary()


def read_response(sock: socket.socket, deadline: float = 60.0) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and whatever body arrives until the connection closes or the
    declared length is read (bytes past that length are the next response's)."""
    sock.settimeout(deadline)
    data = _unread.pop(sock, b"")
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    match = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    assert match, data[:200]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(body) < length:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        body += chunk
    if 0 <= length < len(body):
        body, _unread[sock] = body[:length], body[length:]
    return int(match.group(1)), headers, body


def valid_archive(tmp_path: Path, name: str, padding: int = 0) -> bytes:
    folder = make_bot(tmp_path / name, name)
    if padding:
        (folder / "blob.bin").write_bytes(os.urandom(padding))
    data, filename = archive_of(folder)
    assert filename.endswith(".tar.gz")
    return data


def upload_head(server: Arena, token: str, length: int | None) -> bytes:
    host, port = host_port(server)
    lines = [
        "POST /api/submissions HTTP/1.1",
        f"Host: {host}:{port}",
        f"Authorization: Bearer {token}",
        "Content-Type: application/octet-stream",
    ]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def rows(server: Arena, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    return server.query(sql, **params)


def healthy(server: Arena, source: str = "127.0.0.1") -> bool:
    with client(source, timeout=30) as http:
        return http.get(server.url + "/health").status_code == 200


def burst(server: Arena, source: str, requests: list[bytes]) -> list[int]:
    """Send each request on a connection of its own, all opened first and then written in
    one tight loop; the status of each answer."""
    socks = [connect(server, source) for _ in requests]
    try:
        for sock, request in zip(socks, requests, strict=True):
            sock.sendall(request)
        return [read_response(sock, 60)[0] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


# ----------------------------------------------------------------------- auth failures


def test_refused_tokens_are_limited_per_address_with_retry_after(server: Arena) -> None:
    """FAILURES refused tokens from one address, then 429 with Retry-After: for a good token
    from that address too (per address, as documented); another address is not locked out."""
    abuser, other = fresh_address(), fresh_address()
    with client(abuser) as http:
        for i in range(FAILURES):
            got = http.get(server.url + "/api/me", headers={"Authorization": f"Bearer bad{i}"})
            problem(got, 401)
        limited = http.get(server.url + "/api/me", headers={"Authorization": "Bearer bad"})
        body = problem(limited, 429)
        assert "refused credentials" in body["detail"]
        retry_after(limited)
        assert limited.headers["x-content-type-options"] == "nosniff"
        good = http.get(server.url + "/api/me", headers=server.auth("alice"))
        problem(good, 429)
    with client(other) as http:
        got = http.get(server.url + "/api/me", headers=server.auth("alice"))
        assert got.status_code == 200, got.text
        assert got.json()["author"] == "alice"


def test_forwarded_for_from_an_untrusted_peer_does_not_evade_the_limit(server: Arena) -> None:
    """The server trusts forwarded headers from 127.0.0.1 only: a client elsewhere that
    names a new X-Forwarded-For (and Forwarded) on every try is still one address."""
    abuser = fresh_address()
    statuses = []
    with client(abuser) as http:
        for i in range(FAILURES + 3):
            spoof = f"203.0.113.{i + 1}"
            got = http.get(
                server.url + "/api/me",
                headers={
                    "Authorization": f"Bearer bad{i}",
                    "X-Forwarded-For": spoof,
                    "X-Real-IP": spoof,
                    "Forwarded": f"for={spoof}",
                },
            )
            statuses.append(got.status_code)
    assert statuses[:FAILURES] == [401] * FAILURES, statuses
    assert statuses[FAILURES:] == [429] * 3, statuses


def test_a_trusted_proxy_keeps_its_clients_apart(server: Arena) -> None:
    """Behind the documented proxy (127.0.0.1, appending the real address), one client's
    failures lock out neither the proxy's other clients nor the proxy itself; a client's
    own X-Forwarded-For value in front of the proxy's does not change whose they are."""
    victim, abuser = "198.51.100.7", "198.51.100.66"
    with client("127.0.0.1") as http:
        for i in range(FAILURES + 2):
            http.get(
                server.url + "/api/me",
                headers={
                    "Authorization": f"Bearer bad{i}",
                    # what nginx's $proxy_add_x_forwarded_for makes of a spoofed header
                    "X-Forwarded-For": f"{victim}, {abuser}",
                },
            )
        limited = http.get(
            server.url + "/api/me",
            headers={"Authorization": "Bearer bad", "X-Forwarded-For": abuser},
        )
        problem(limited, 429)
        for forwarded in (victim, "198.51.100.8"):
            got = http.get(
                server.url + "/api/me",
                headers={**server.auth("alice"), "X-Forwarded-For": forwarded},
            )
            assert got.status_code == 200, (forwarded, got.text)
        assert http.get(server.url + "/api/me", headers=server.auth("alice")).status_code == 200


def test_refused_tokens_sent_at_once_are_limited_too(server: Arena) -> None:
    """40 requests with wrong tokens on 40 connections opened first, then sent at once from
    one address: at most FAILURES of them are checked (401), the rest are 429."""
    requests = [
        f"GET /api/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x{i}\r\n"
        "Connection: close\r\n\r\n".encode()
        for i in range(40)
    ]
    statuses = burst(server, fresh_address(), requests)
    assert set(statuses) <= {401, 429}, statuses
    refused = statuses.count(401)
    # the bucket may refill by a fraction of a token while the burst is answered
    assert refused <= FAILURES + 1, f"{refused} refused credentials answered 401 (not 429)"


def register_dana(server: Arena, password: str) -> None:
    done = kryt("arena", "invite", "create", "--days", "1", "--database", server.database)
    assert done.returncode == 0, done.stderr
    code = done.stdout.strip().splitlines()[-1]
    with client(fresh_address()) as http:
        got = http.post(
            server.url + "/api/register",
            json={"invite": code, "name": "dana", "password": password},
        )
    assert got.status_code == 201, got.text


def login_attempts(server: Arena, source: str, n: int) -> list[int]:
    """``n`` sign-ins of dana with wrong passwords from ``source``, sent at once."""
    with client(source) as http:
        page = http.get(server.url + "/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf, page.text
        cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
    requests = []
    for i in range(n):
        form = urllib.parse.urlencode(
            {"csrf": csrf.group(1), "name": "dana", "password": f"wrong-guess-{i}"}
        ).encode()
        head = (
            "POST /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            f"Cookie: {cookie}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(form)}\r\n\r\n"
        ).encode()
        requests.append(head + form)
    return burst(server, source, requests)


def test_wrong_passwords_sent_at_once_are_limited(server: Arena) -> None:
    register_dana(server, "the right password 123")
    statuses = login_attempts(server, fresh_address(), 30)
    assert set(statuses) <= {401, 429}, statuses
    checked = statuses.count(401)
    assert checked <= FAILURES + 1, f"{checked} of 30 passwords checked (401), not refused 429"


# ----------------------------------------------------------------------- writes


def test_writes_are_limited_per_token_under_concurrency(server: Arena) -> None:
    """2 × WRITES uploads at once with one token: at most WRITES are taken (+1 for refill),
    the rest are 429 with Retry-After and a problem document; another token of the same
    author and another author are not limited by it."""
    token = new_token(server, "carol")
    n = 2 * WRITES + 4
    barrier = threading.Barrier(n)

    def one(i: int) -> httpx.Response:
        with client(fresh_address()) as http:
            barrier.wait(60)
            return http.post(
                server.url + "/api/submissions",
                content=b"not an archive %d" % i,
                headers={"Authorization": f"Bearer {token}"},
            )

    with ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(one, range(n)))
    statuses = [a.status_code for a in answers]
    assert set(statuses) <= {422, 429}, statuses
    assert WRITES <= statuses.count(422) <= WRITES + 1, statuses
    for answer in answers:
        if answer.status_code == 429:
            body = problem(answer, 429)
            assert "write rate limit" in body["detail"]
            retry_after(answer)
    other = new_token(server, "carol")
    with client(fresh_address()) as http:
        for token_ in (other, server.tokens["bob"]):
            got = http.post(
                server.url + "/api/submissions",
                content=b"junk",
                headers={"Authorization": f"Bearer {token_}"},
            )
            problem(got, 422)


def test_a_write_limited_client_gets_429_without_sending_its_body(server: Arena) -> None:
    """A token out of writes is answered 429 on the headers of an upload: the client need
    not send its (large) body first, and the server stays up."""
    token = new_token(server, "carol")
    with client(fresh_address()) as http:
        for _ in range(WRITES):
            got = http.post(
                server.url + "/api/submissions",
                content=b"junk",
                headers={"Authorization": f"Bearer {token}"},
            )
            assert got.status_code == 422, got.text
    sock = connect(server, fresh_address())
    try:
        sock.sendall(upload_head(server, token, MAX_UPLOAD - 10))
        status, headers, body = read_response(sock, 30)
    finally:
        sock.close()
    assert status == 429, body
    assert headers["retry-after"].isdigit()
    assert json.loads(body)["status"] == 429
    assert healthy(server)


# ----------------------------------------------------------------------- sizes


def test_a_declared_oversized_body_is_refused_before_it_is_sent(server: Arena) -> None:
    """Content-Length over max_upload_bytes: 413 on the headers alone (nothing of the body
    sent), with a problem document naming the limit, and the connection not kept waiting
    for a body that will never be read."""
    sock = connect(server, fresh_address())
    try:
        sock.sendall(upload_head(server, server.tokens["alice"], MAX_UPLOAD + 1))
        status, headers, body = read_response(sock, 30)
    finally:
        sock.close()
    assert status == 413, body
    assert str(MAX_UPLOAD) in json.loads(body)["detail"]
    assert headers["content-type"].startswith("application/problem+json")


def test_a_chunked_oversized_body_is_refused_and_stores_nothing(
    server: Arena, tmp_path: Path
) -> None:
    """Without Content-Length (chunked), a body over the limit is cut off with a 413 once it
    passes the limit; nothing of it is stored, and the server answers others meanwhile."""
    before = rows(server, "SELECT count(*) FROM submissions")[0][0]
    token = new_token(server, "carol")
    payload = valid_archive(tmp_path, "chunkybot", padding=MAX_UPLOAD + 64 * 1024)
    assert len(payload) > MAX_UPLOAD
    sock = connect(server, fresh_address())
    status = 0
    try:
        sock.sendall(upload_head(server, token, None))
        sent = 0
        try:
            for start in range(0, len(payload), 16 * 1024):
                piece = payload[start : start + 16 * 1024]
                sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                sent += len(piece)
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading: the answer is what counts
        status, _, body = read_response(sock, 30)
    finally:
        sock.close()
    assert status == 413, body
    assert rows(server, "SELECT count(*) FROM submissions")[0][0] == before
    assert rows(server, "SELECT count(*) FROM bots WHERE name = 'chunkybot'")[0][0] == 0
    assert not any("chunkybot" in p.name for p in (server.workdir / "store").glob("*"))
    assert healthy(server)


def test_a_refused_oversized_body_is_not_read_on(server: Arena) -> None:
    """After answering 413 mid-body, the server stops taking the body: a client that goes on
    sending gets little more in than the socket buffers hold before the connection is
    closed."""
    sock = connect(server, fresh_address())
    piece = b"x" * 65536
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    after_answer = 0
    try:
        try:
            sock.sendall(upload_head(server, server.tokens["alice"], None))
            for _ in range(MAX_UPLOAD // len(piece) + 2):
                sock.sendall(chunk)
            status, _headers, _ = read_response(sock, 30)
        except OSError:
            status = 0  # answered and closed at once (the answer lost to the reset): fine
        assert status in (0, 413), status
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline and after_answer < 256 * 1024 * 1024:
                sock.sendall(chunk)
                after_answer += len(piece)
        except OSError:
            pass  # closed: what is wanted
    finally:
        sock.close()
    assert after_answer < 16 * 1024 * 1024, f"{after_answer} bytes taken after the 413"
    assert healthy(server)


def test_a_body_longer_than_its_content_length_is_not_taken_as_a_second_request(
    server: Arena,
) -> None:
    """Request smuggling: bytes after the declared length are the next request, parsed as
    such (here a GET /health), never appended to the upload."""
    token = server.tokens["alice"]
    body = b"junk"
    smuggled = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    sock = connect(server, fresh_address())
    try:
        sock.sendall(upload_head(server, token, len(body)) + body + smuggled)
        time.sleep(1)  # both answers are usually waiting now, read in one recv
        status, _, first = read_response(sock, 30)
        assert status == 422, first
        status2, _, second = read_response(sock, 30)
    finally:
        sock.close()
    assert status2 == 200 and json.loads(second)["status"] == "ok"


@pytest.mark.parametrize(
    "framing",
    [
        "Content-Length: 4\r\nContent-Length: 5",
        "Content-Length: -4",
        "Content-Length: 4x",
        "Transfer-Encoding: gzip, chunked, identity",
    ],
)
def test_ambiguous_framing_is_refused_and_the_connection_closed(
    server: Arena, framing: str
) -> None:
    """Ambiguous or invalid body framing is a 4xx and never reaches the upload (nothing
    stored); the server keeps answering."""
    submits = "SELECT count(*) FROM audit_log WHERE action = 'submit'"
    before = rows(server, submits)[0][0]
    host, port = host_port(server)
    head = (
        f"POST /api/submissions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {server.tokens['alice']}\r\n{framing}\r\n\r\n"
    ).encode()
    sock = connect(server, fresh_address())
    try:
        sock.sendall(head + b"4\r\njunk\r\n0\r\n\r\n")
        status, headers, _ = read_response(sock, 30)
    finally:
        sock.close()
    assert status == 400, status
    assert headers.get("connection") == "close"
    assert rows(server, submits)[0][0] == before
    assert healthy(server)


def test_content_length_with_transfer_encoding_closes_the_connection(server: Arena) -> None:
    head = (
        "POST /api/submissions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {server.tokens['alice']}\r\n"
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    smuggled = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    sock = connect(server, fresh_address())
    try:
        sock.sendall(head + b"4\r\njunk\r\n0\r\n\r\n" + smuggled)
        status, _headers, _ = read_response(sock, 30)
        assert status in (400, 422), status
        sock.settimeout(10)
        try:
            rest = sock.recv(4096)
        except (TimeoutError, ConnectionResetError):
            rest = b""
    finally:
        sock.close()
    assert rest == b"", f"the pipelined request was answered: {rest[:60]!r}"


# ----------------------------------------------------------------------- malformed bodies


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("multipart/form-data", b"--x\r\nContent-Disposition: form-data; name=f\r\n\r\nab"),
        ("multipart/form-data; boundary=zz", b"--zz\r\nContent-Disposition: form-data"),
        ("multipart/form-data; boundary=", b""),
        ("application/x-www-form-urlencoded", b"a=b&c=d"),
        ("\x7f\x01garbage", b"PK\x03\x04truncated zip"),
    ],
)
def test_malformed_bodies_are_a_one_line_422(server: Arena, content_type: str, body: bytes) -> None:
    token = new_token(server, "carol")
    with client(fresh_address()) as http:
        got = http.post(
            server.url + "/api/submissions",
            content=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
        )
    detail = problem(got, 422)["detail"]
    assert "\n" not in detail and "Traceback" not in detail and len(detail) < 1000, detail
    if content_type.startswith("multipart") and body:
        assert "multipart" in detail


# ----------------------------------------------------------------------- connections


def test_many_idle_connections_do_not_starve_others(server: Arena) -> None:
    """300 connections that send half a request and stop: /health and /api/me answer
    meanwhile, and the half requests are closed (408) by the header deadline."""
    source = fresh_address()
    socks = []
    try:
        for _ in range(300):
            sock = connect(server, source, timeout=30)
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            socks.append(sock)
        started = time.monotonic()
        assert healthy(server, fresh_address())
        with client(fresh_address()) as http:
            assert http.get(server.url + "/api/me", headers=server.auth("alice")).status_code == 200
        assert time.monotonic() - started < 30
        closed = 0
        for sock in socks[:20]:
            status, _, _ = read_response(sock, 60)
            closed += status == 408
        assert closed == 20
    finally:
        for sock in socks:
            sock.close()


def test_many_requests_at_once_are_all_answered(server: Arena) -> None:
    """200 GETs over 50 connections at once: every one answered (200), none dropped."""

    def one(i: int) -> list[int]:
        with client(fresh_address()) as http:
            return [
                http.get(server.url + path).status_code
                for path in ("/health", "/api/ladder", "/", "/api/leaderboard")
            ]

    with ThreadPoolExecutor(50) as pool:
        statuses = [s for group in pool.map(one, range(50)) for s in group]
    assert statuses == [200] * 200, sorted(set(statuses))


# ----------------------------------------------------------------------- HTML escaping


def test_client_text_echoed_on_pages_is_escaped(server: Arena) -> None:
    """What a client sends that a page shows back (a raw path in a 404 page, a name in the
    registration form's error) is HTML-escaped; under /api/ it is JSON, never HTML."""
    evil = "<script>alert(1)</script>"
    for method, target in (("GET", f"/bots/{evil}"), ("DELETE", f"/games/{evil}")):
        sock = connect(server, fresh_address())
        try:
            sock.sendall(
                f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
            )
            status, headers, body = read_response(sock, 30)
        finally:
            sock.close()
        assert 400 <= status < 500, status
        assert headers["content-type"].startswith("text/html")
        assert b"<script>" not in body and b"&lt;script&gt;alert(1)" in body, body[-300:]
    sock = connect(server, fresh_address())
    try:
        sock.sendall(
            f"GET /api/bots/{evil}/logs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        )
        status, headers, body = read_response(sock, 30)
    finally:
        sock.close()
    assert 400 <= status < 500, status  # the name's "/" makes it a path of no route: 404
    assert headers["content-type"].startswith("application/problem+json")
    assert headers["x-content-type-options"] == "nosniff"
    done = kryt("arena", "invite", "create", "--days", "1", "--database", server.database)
    assert done.returncode == 0, done.stderr
    code = done.stdout.strip().splitlines()[-1]
    with client(fresh_address()) as http:
        page = http.get(server.url + "/register")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf, page.text
        got = http.post(
            server.url + "/register",
            data={"csrf": csrf.group(1), "invite": code, "name": evil, "password": "x" * 12},
        )
    assert got.status_code == 422, got.text
    assert "<script>" not in got.text and "&lt;script&gt;alert(1)" in got.text


# ----------------------------------------------------------------------- shutdown


def _store_leftovers(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir()) if store.is_dir() else []


@pytest.mark.parametrize(
    ("sent_fraction", "then"),
    [(0.5, "rest"), (1.0, "rest"), (0.5, "leave"), (0.5, "stall")],
)
def test_sigterm_during_an_upload_stores_all_or_nothing(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, sent_fraction: float, then: str
) -> None:
    """SIGTERM while an upload's body is arriving (half of it, or all but the server has
    not answered yet), then the client sends the rest, leaves, or stalls: the server exits
    within a deadline (a stalled body is cut by the body timeout) and the upload is either
    fully recorded (a row with its archive, its check, its store folder) or not at all."""
    workdir = tmp_path_factory.mktemp("sigterm-arena")
    payload = valid_archive(tmp_path, "termbot", padding=200 * 1024)
    assert len(payload) < MAX_UPLOAD
    servers = _serve(workdir, f"sqlite:///{workdir / 'arena.db'}", ENV)
    arena = next(servers)
    try:
        assert arena.process is not None
        sock = connect(arena, "127.0.0.1")
        sock.sendall(upload_head(arena, arena.tokens["alice"], len(payload)))
        cut = int(len(payload) * sent_fraction)
        sock.sendall(payload[:cut])
        time.sleep(0.5)
        arena.process.send_signal(signal.SIGTERM)
        status = 0
        try:
            time.sleep(0.5)
            if then == "rest":
                sock.sendall(payload[cut:])
            if then != "leave":
                status, _, _ = read_response(sock, 60)
        except (OSError, AssertionError):
            status = 0  # closed without an answer
        finally:
            sock.close()
        if then == "rest":
            assert status in (0, 202), status
        elif then == "stall":
            assert status in (0, 408), status
        arena.process.wait(90)
        recorded = arena.query(
            "SELECT s.id, s.status, length(a.data), s.storage_path FROM submissions s"
            " JOIN bots b ON b.id = s.bot_id"
            " LEFT JOIN submission_archives a ON a.submission_id = s.id"
            " WHERE b.name = 'termbot'"
        )
        checks = arena.query("SELECT count(*) FROM submission_checks")[0][0]
        leftovers = _store_leftovers(workdir / "store")
        if status in (200, 202):
            assert len(recorded) == 1, recorded
            _sid, state, size, storage = recorded[0]
            assert size and state in ("pending", "active", "rejected"), recorded
            assert checks == 1
            assert Path(storage).is_dir()
        else:
            assert recorded == [] and checks == 0, (status, recorded)
            assert arena.query("SELECT count(*) FROM bots WHERE name = 'termbot'")[0][0] == 0
            assert leftovers == [], leftovers
    finally:
        arena.process.kill() if arena.process and arena.process.poll() is None else None
        next(servers, None)


# ----------------------------------------------------------------------- IPv6 loopback


def test_behind_a_proxy_on_the_ipv6_loopback_one_client_does_not_lock_out_others(
    tmp_path: Path,
) -> None:
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    database = f"sqlite:///{tmp_path / 'arena.db'}"
    done = kryt("arena", "author", "add", "alice", "--database", database)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    port_file = tmp_path / "port"
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        **ENV,
        "KRYT_ARENA_SANDBOX_BACKEND": "process",
        "KRYT_ARENA_SANDBOX_ALLOW_UNSAFE": "1",
    }
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kryt",
            "arena",
            "serve",
            "--database",
            database,
            "--host",
            "::1",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--store",
            str(tmp_path / "store"),
            "--no-ladder",
        ],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        url = ""
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            if port_file.exists() and port_file.read_text():
                url = f"http://[::1]:{port_file.read_text()}"
                try:
                    if httpx.get(url + "/health", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
            time.sleep(0.2)
        victim, abuser = "198.51.100.7", "198.51.100.66"
        with httpx.Client(timeout=60, trust_env=False) as http:  # the proxy, from ::1
            for i in range(FAILURES + 2):
                http.get(
                    url + "/api/me",
                    headers={"Authorization": f"Bearer bad{i}", "X-Forwarded-For": abuser},
                )
            got = http.get(
                url + "/api/me",
                headers={"Authorization": f"Bearer {token}", "X-Forwarded-For": victim},
            )
        assert got.status_code == 200, got.text
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
        log.close()
