"""``kryt submit --server`` / ``kryt submissions --server``: a malformed server URL is one
line naming it, and an upload the server cuts off (over its limit, answered before the body
is read) says so instead of "cannot reach"; an answer that is not what an arena server sends
(a web site, a proxy's page, another JSON API) is one line saying so."""

from __future__ import annotations

import random
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from tests.cli.helpers import HttpAnswer, kryt

ROOT = Path(__file__).resolve().parents[2]


def _bot(folder: Path, noise: int = 0) -> Path:
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "mine"\nversion = "1.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text((ROOT / "sdk" / "examples" / "random" / "bot.py").read_text())
    if noise:
        (folder / "noise.bin").write_bytes(random.Random(3).randbytes(noise))
    return folder


@pytest.mark.parametrize(
    "url", ["notaurl", "ftp://example.org", "http://", "http://host:99999", "http://[::1"]
)
def test_submit_to_a_malformed_server_url_is_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> None:
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    code, out, err = kryt(capsys, "submit", str(_bot(tmp_path / "mine")), "--server", url)
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert err.startswith("error: --server ") and repr(url) in err
    assert "Traceback" not in err and "ValueError" not in err


def test_submissions_from_a_malformed_server_url_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    code, out, err = kryt(capsys, "submissions", "--server", "notaurl")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "'notaurl'" in err and "Traceback" not in err


@pytest.fixture
def cutting_server() -> Iterator[str]:
    """An HTTP server that publishes no upload limit on /health and resets the connection
    of any other request as soon as its headers are read (as a server that refuses an
    upload from its declared size does)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    head += chunk
                if head.startswith(b"GET /health "):
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 2\r\nConnection: close\r\n\r\n{}"
                    )
                else:  # close with RST, the body unread
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        thread.join(30)


def test_an_upload_cut_off_by_the_server_says_so(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cutting_server: str,
) -> None:
    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    bot = _bot(tmp_path / "mine", noise=4 << 20)
    code, out, err = kryt(capsys, "submit", str(bot), "--server", cutting_server, "--no-wait")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert "closed the connection while receiving an upload of" in err, err
    assert "likely over its upload limit" in err and "cannot reach" not in err


@pytest.mark.parametrize(
    "body",
    [
        b"<html>a web site</html>",
        b"{}",
        b'{"submission_id": "7", "bot": "mine", "version": "1.0", "status": "active"}',
        b'{"submission_id": 7, "bot": "mine", "version": "1.0", "status": "active", "check": 3}',
    ],
    ids=["html", "empty-object", "id-not-a-number", "check-not-an-object"],
)
def test_submit_to_a_server_that_is_not_an_arena_is_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    body: bytes,
) -> None:
    import urllib.request

    monkeypatch.setenv("KRYT_TOKEN", "kryt_test")
    monkeypatch.setattr(urllib.request, "urlopen", lambda *_a, **_k: HttpAnswer(body))
    bot = _bot(tmp_path / "mine")
    code, out, err = kryt(capsys, "submit", str(bot), "--server", "http://127.0.0.1:9", "--wait")
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert err.startswith("error: http://127.0.0.1:9/api/submissions: the answer is not what"), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
