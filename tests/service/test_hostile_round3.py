"""Round-3 hostile findings on the arena service: game logs of chatty bots with repeating
output, bot text printed raw by ``kryt submissions``, ``kryt arena serve`` tracebacks, and
API errors that were not problem documents."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from arena.db import open_database
from arena.service.app import create_service_app
from arena.service.play import last_bytes
from arena.service.server import Client, ClientError
from arena.service.settings import ServiceSettings
from kryt.cli import main
from kryt.errors import ExitCode
from tests.service.helpers import problem as _problem

# A game's log read by position from the sandbox (the chatty, repeating bots of this round's
# finding): tests/sandbox/test_game_logs_exact.py and tests/sandbox/test_output_since.py.


def test_last_bytes_keeps_the_end_within_the_limit() -> None:
    assert last_bytes("abc", 3) == ("abc", False)
    text, cut = last_bytes("é" * 10, 5)
    assert cut and len(text.encode()) <= 5 and text == "éé"


# ------------------------------------------------------------------ problem documents


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    db = open_database(f"sqlite:///{tmp_path / 'arena.db'}")
    settings = ServiceSettings(store=tmp_path / "store")
    with TestClient(create_service_app(db, settings, run_background=False)) as http:
        yield http


@pytest.mark.parametrize(
    "path",
    [
        "/api/games/-5",
        "/api/games/abc",
        "/api/games/999999",
        "/api/leaderboard?tournament=424242",
        "/api/no/such/route",
    ],
)
def test_api_not_found_is_a_problem_document(client: TestClient, path: str) -> None:
    _problem(client.get(path), 404)


def test_api_validation_errors_are_problem_documents(client: TestClient) -> None:
    response = client.get("/api/bots/x/logs?limit=abc", headers={"Authorization": "Bearer x"})
    assert "limit" in _problem(response, 422)["detail"]
    # A method no route of that path takes: 405 naming the ones it does.
    response = client.delete("/api/ladder")
    assert _problem(response, 405)["title"] == "Method Not Allowed"
    assert response.headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    ("query", "bad"),
    [
        ("ruleset=<script>", "<script>"),
        ("ruleset=poker", "poker"),
        ("table_size=3", "3"),
        ("ruleset=classic&table_size=9", "9"),
        ("ruleset=classic&table_size=x", "x"),
    ],
)
def test_leaderboard_filters_are_checked(client: TestClient, query: str, bad: str) -> None:
    body = _problem(client.get(f"/api/leaderboard?{query}"), 422)
    assert bad in body["detail"]


def test_leaderboard_with_known_filters_answers(client: TestClient) -> None:
    for query in ("", "?ruleset=default", "?ruleset=classic&table_size=3"):
        response = client.get(f"/api/leaderboard{query}")
        assert response.status_code == 200, response.text
        assert "rows" in response.json()


# ------------------------------------------------------------------ kryt arena serve


def _kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(
    ("args", "expected", "words"),
    [
        (["--port", "99999"], ExitCode.BAD_INPUT, "--port"),
        (["--host", "999.1.1.1"], ExitCode.UNAVAILABLE, "cannot listen on 999.1.1.1"),
        (["--port", "0", "--port-file", "/nonexistent/dir/p"], ExitCode.BAD_INPUT, "port file"),
    ],
)
def test_serve_refuses_bad_addresses_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], expected: int, words: str
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    code, output = _kryt(capsys, "arena", "serve", "--no-ladder", "-d", url, *args)
    assert code == expected, output
    assert words in output and "Traceback" not in output


def test_serve_refuses_a_port_in_use(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        url = f"sqlite:///{tmp_path / 'a.db'}"
        code, output = _kryt(
            capsys, "arena", "serve", "--no-ladder", "-d", url, "--port", str(port)
        )
    assert code == ExitCode.UNAVAILABLE, output
    assert f"cannot listen on 127.0.0.1:{port}" in output and "Traceback" not in output


# ------------------------------------------------------------------ kryt submissions


HOSTILE = "crashed: \x1b]0;PWNED\x07 \x1b[2J\rfake OK \u202eevil\ttab [bold red]MARKUP"


def test_submissions_shows_bot_text_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {
        "submission_id": 7,
        "bot": "raiser",
        "version": "1",
        "status": "rejected",
        "check": {"status": "failed", "message": HOSTILE},
    }

    def request(_self: Client, _method: str, _path: str, *_a: Any, **_k: Any) -> dict[str, Any]:
        return {"submissions": [row]}

    monkeypatch.setattr(Client, "request", request)
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    code, output = _kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert code == 0, output
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in output
    assert "\\x1b]0;PWNED\\x07" in output and "\\u202e" in output
    assert "[bold red]MARKUP" in output
    line = output.strip().splitlines()[-1]
    assert line.split("\t") == ["7", "raiser 1", "rejected", "failed", line.split("\t")[-1]]


def test_submissions_error_from_the_server_is_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def request(_self: Client, _method: str, _path: str, *_a: Any, **_k: Any) -> dict[str, Any]:
        raise ClientError("http://x/api/submissions: 401 \x1b]0;PWNED\x07")

    monkeypatch.setattr(Client, "request", request)
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    code, output = _kryt(capsys, "submissions", "--server", "http://127.0.0.1:9")
    assert code == ExitCode.BAD_INPUT
    assert "\x1b" not in output and "\\x1b]0;PWNED" in output
