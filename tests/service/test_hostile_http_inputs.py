"""Hostile HTTP inputs to the arena service: a CSRF token or a session cookie signature with
a non-ASCII character was a 500 (``hmac.compare_digest`` refuses non-ASCII text) instead of
a refusal, a registration or form body over its limit was said to be an "upload", and every
made-up request method added a series to ``/metrics`` for good.

In process on SQLite (``TestClient``, nothing runs in the background)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from arena.db.accounts import set_password_hash
from arena.service.auth import CSRF_COOKIE, SESSION_COOKIE, Signer, hash_password
from tests.service.helpers import alice_service
from tests.service.helpers import problem as _problem

FORM = {"content-type": "application/x-www-form-urlencoded"}
PASSWORD = "correct horse battery"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    """The service in process with alice (who also has a password), answering bugs as 500s."""
    db, app, _token = alice_service(tmp_path)
    with db.session() as session:
        set_password_hash("alice", hash_password(PASSWORD), session=session)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
    db.engine.dispose()


def _signed_in(http: TestClient) -> str:
    """Sign alice in with her password; the CSRF token of her session's forms."""
    page = http.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None, page.text
    answer = http.post(
        "/login",
        content=f"csrf={csrf.group(1)}&name=alice&password={PASSWORD.replace(' ', '+')}",
        headers=FORM,
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    me = http.get("/me")
    assert me.status_code == 200 and "alice" in me.text
    token = re.search(r'name="csrf" value="([^"]+)"', me.text)
    assert token is not None, me.text
    return token.group(1)


@pytest.mark.parametrize("path", ["/login", "/register", "/logout"])
def test_a_non_ascii_csrf_token_is_refused_not_a_crash(http: TestClient, path: str) -> None:
    http.get("/login")  # the pre-login CSRF cookie
    assert http.cookies.get(CSRF_COOKIE)
    answer = http.post(path, content="csrf=%C3%A9&name=alice&password=x", headers=FORM)
    assert answer.status_code == 403, answer.text
    assert "CSRF token is missing or wrong" in answer.text


def test_a_signed_in_form_with_a_non_ascii_csrf_token_is_refused(http: TestClient) -> None:
    _signed_in(http)
    answer = http.post("/me/bots/robot/retire", content="csrf=%C3%A9", headers=FORM)
    assert answer.status_code == 403, answer.text
    assert "CSRF token is missing or wrong" in answer.text
    assert http.get("/me").status_code == 200  # still signed in: nothing else happened


def test_a_session_cookie_with_a_non_ascii_signature_signs_nobody_in(http: TestClient) -> None:
    _signed_in(http)
    real = http.cookies.get(SESSION_COOKIE)
    assert real is not None
    forged = real.rpartition(".")[0].encode() + b".\xe9"  # a Latin-1 byte for a signature
    http.cookies.clear()
    cookie = [(b"cookie", SESSION_COOKIE.encode() + b"=" + forged)]
    me = http.get("/me", headers=cookie, follow_redirects=False)
    assert (me.status_code, me.headers.get("location")) == (303, "/login"), me.text
    retire = http.post("/me/bots/robot/retire", headers=cookie)
    assert retire.status_code == 401 and "sign in first" in retire.text, retire.text
    logout = http.post("/logout", headers=cookie, content="csrf=x", follow_redirects=False)
    assert logout.status_code == 403 and "CSRF token" in logout.text, logout.text


def test_the_signer_tells_a_non_ascii_token_from_its_own() -> None:
    signer = Signer("s" * 32)
    assert not signer.csrf_ok("binding", "é" * 64)
    assert not signer.csrf_ok("binding", "\ud800")
    assert signer.csrf_ok("binding", signer.csrf_for("binding"))


def test_an_oversized_registration_is_not_called_an_upload(http: TestClient) -> None:
    answer = http.post("/api/register", content=b'{"name": "' + b"a" * 20_000 + b'"}')
    body = _problem(answer, 413)
    assert "registration" in body["detail"] and "upload" not in body["detail"], body


def test_an_oversized_form_is_not_called_an_upload(http: TestClient) -> None:
    http.get("/login")
    answer = http.post("/login", content="name=" + "a" * 20_000, headers=FORM)
    assert answer.status_code == 413, answer.text
    assert "forms are limited to 16384 bytes" in answer.text
    assert "upload" not in answer.text.lower()


def test_made_up_methods_add_no_series_to_the_metrics(http: TestClient) -> None:
    for n in range(5):
        assert http.request(f"X{n}KRYT", "/health").status_code == 405
    assert http.request("TRACE", "/health").status_code == 405
    lines = [line for line in http.get("/metrics").text.splitlines() if "KRYT" in line]
    assert lines == [], lines
    metrics = http.get("/metrics").text
    assert 'kryt_http_requests_total{method="OTHER",status="405"} 5' in metrics
    assert 'kryt_http_requests_total{method="TRACE",status="405"} 1' in metrics
