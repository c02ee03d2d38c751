"""A hostile review of the arena service from outside: what an attacker or a careless author
can send over the HTTP API (and through ``kryt submit`` / ``kryt submissions``).

Every refusal must be a 4xx problem document with a one-line detail, store nothing (no row,
no folder in the submission store) and leave the service working. The review found, and each
is fixed with its test here:

- a ``.tar.gz`` whose GNU long-name or pax header declares a huge size was read into memory
  whole by ``tarfile`` before any check (a 64 KiB upload cost over 64 MiB);
- the compile check compiled a ``.py`` symlink as often as it was linked (a 30 KiB archive
  cost minutes of CPU), and needed hundreds of bytes of memory per byte of source, in the
  server's process;
- ``kryt submit --server`` / ``kryt submissions`` crashed with a traceback on a token holding
  a line break or a character outside Latin-1;
- two uploads of one content at once: the refused one deleted the store folder the other
  was still reading, which then answered a 500 or a 422 naming the server's store path;
- an empty upload was described as "first bytes " with nothing after it.

Everything runs on the service app in process over SQLite (nothing in the background), but
the CLI tests, which run ``kryt`` in a subprocess.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import tarfile
import threading
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

import arena.tournament.store as store_module
import sandbox
import sandbox.source_check as source_check
from arena.db import Database
from arena.db.accounts import create_author, create_token, revoke_token
from tests.service.conftest import kryt, make_bot
from tests.service.helpers import alice_service, problem

URL = "/api/submissions"
MiB = 1024 * 1024


def _manifest(name: str, version: str = "1.0", extra: str = "") -> str:
    return f'name = "{name}"\nversion = "{version}"\nruntime = "python"\nentry = "bot.py"\n{extra}'


def _zip(
    files: dict[str, bytes | str],
    links: dict[str, str] | None = None,
    method: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """A zip of ``files`` and of symlinks ``links`` (name -> target)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buffer.getvalue()


def _tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def _tar_info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


def _good(name: str = "goodbot", salt: str = "") -> bytes:
    return _zip({"bot.toml": _manifest(name), "bot.py": f"x = 1  # {salt}\n"})


@dataclass
class Local:
    """The service app in process; alice and bob have a token each."""

    db: Database
    http: TestClient
    store: Path
    tokens: dict[str, str]
    token_ids: dict[str, int]

    def auth(self, author: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[author]}"}

    def count(self, table: str) -> int:
        with self.db.session() as session:
            return int(session.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())

    def stored(self) -> list[str]:
        return sorted(p.name for p in self.store.iterdir()) if self.store.is_dir() else []

    def assert_nothing_stored(self) -> None:
        assert self.count("submissions") == 0
        assert self.count("bots") == 0
        assert self.stored() == []

    def assert_still_works(self) -> None:
        """The service answers and takes a valid upload after whatever came before."""
        assert self.http.get("/health").status_code == 200
        response = self.http.post(URL, content=_good(), headers=self.auth("alice"))
        assert response.status_code in (200, 202), response.text
        assert response.json()["bot"] == "goodbot"


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    db, app, alice = alice_service(tmp_path)
    with db.session() as session:
        create_author("bob", session=session)
        bob = create_token("bob", session=session, lifetime=timedelta(days=1))
    with db.session() as session:
        query = "SELECT a.name, t.id FROM api_tokens t JOIN authors a ON a.id = t.author_id"
        ids = {str(name): int(tid) for name, tid in session.execute(text(query)).all()}
    with TestClient(app, raise_server_exceptions=False) as http:
        yield Local(db, http, tmp_path / "store", {"alice": alice, "bob": bob.secret}, ids)
    db.close()


def _one_line(detail: str) -> None:
    assert "\n" not in detail and "Traceback" not in detail and len(detail) < 1000, detail


# ---------------------------------------------------------------- hostile archives: fine

HOSTILE_ARCHIVES: dict[str, bytes] = {
    "absolute-path": _zip({"/etc/cron.d/x": "x", "bot.toml": _manifest("a1"), "bot.py": "x=1"}),
    "dot-dot": _zip({"../../x": "x", "bot.toml": _manifest("a2"), "bot.py": "x=1"}),
    "dot-dot-inside": _zip({"sub/../../x": "x", "bot.toml": _manifest("a3"), "bot.py": "x=1"}),
    "backslash-traversal": _zip({"..\\..\\x": "x", "bot.toml": _manifest("a4"), "bot.py": "x=1"}),
    "symlink-absolute": _zip(
        {"bot.toml": _manifest("a5"), "bot.py": "x=1"}, {"passwd": "/etc/passwd"}
    ),
    "symlink-climbing": _zip(
        {"bot.toml": _manifest("a6"), "bot.py": "x=1"}, {"up": "sub/../../../etc"}
    ),
    "symlink-then-write-through": _zip(
        {"bot.toml": _manifest("a7"), "bot.py": "x=1", "d/escape": "x"}, {"d": "."}
    ),
    "manifest-symlink": _zip(
        {"bot.py": "x=1", "real.toml": _manifest("a8")}, {"bot.toml": "real.toml"}
    ),
    "tar-hardlink": _tar(
        [
            (_tar_info("bot.toml"), _manifest("a9").encode()),
            (_tar_info("bot.py"), b"x=1\n"),
            (_tar_info("shadow", tarfile.LNKTYPE, "/etc/shadow"), b""),
        ]
    ),
    "tar-symlink-out": _tar(
        [
            (_tar_info("bot.toml"), _manifest("a10").encode()),
            (_tar_info("bot.py"), b"x=1\n"),
            (_tar_info("root", tarfile.SYMTYPE, "../../../../"), b""),
        ]
    ),
    "tar-device": _tar(
        [
            (_tar_info("bot.toml"), _manifest("a11").encode()),
            (_tar_info("bot.py"), b"x=1\n"),
            (_tar_info("zero", tarfile.CHRTYPE), b""),
        ]
    ),
    "tar-absolute": _tar(
        [
            (_tar_info("bot.toml"), _manifest("a12").encode()),
            (_tar_info("bot.py"), b"x=1\n"),
            (_tar_info("/tmp/kryt-review-evil"), b"x"),
        ]
    ),
    "control-characters-in-name": _zip(
        {"a\x1b[2J.txt": "x", "bot.toml": _manifest("a13"), "bot.py": "x=1"}
    ),
    "duplicate-member": _zip({"bot.toml": _manifest("a14"), "bot.py": "x=1", "bot.py/": ""}),
    "zip-bomb-one-file": _zip(
        {"bot.toml": _manifest("a15"), "bot.py": "x=1", "zeros": b"\0" * (11 * MiB)}
    ),
    "zip-bomb-total": _zip(
        {
            "bot.toml": _manifest("a16"),
            "bot.py": "x=1",
            **{f"z{i}": b"\0" * (7 * MiB) for i in range(3)},
        }
    ),
    "thousands-of-files": _zip(
        {
            "bot.toml": _manifest("a17"),
            "bot.py": "x=1",
            **{f"f/{i}": b"" for i in range(2100)},
        },
        method=zipfile.ZIP_STORED,
    ),
    "too-deep": _zip(
        {"bot.toml": _manifest("a18"), "bot.py": "x=1", "/".join(["d"] * 30) + "/x": "x"}
    ),
    "long-name": _zip({"bot.toml": _manifest("a19"), "bot.py": "x=1", "n" * 300: "x"}),
    "not-an-archive": b"#!/bin/sh\nrm -rf /\n",
    "truncated-zip": _good("a20")[:-30],
    "truncated-tar-gz": _tar([(_tar_info("bot.toml"), _manifest("a21").encode())])[:40],
}


@pytest.mark.parametrize("archive", HOSTILE_ARCHIVES.values(), ids=HOSTILE_ARCHIVES.keys())
def test_a_hostile_archive_is_a_one_line_422_and_stores_nothing(
    local: Local, archive: bytes
) -> None:
    body = problem(local.http.post(URL, content=archive, headers=local.auth("alice")), 422)
    _one_line(body["detail"])
    local.assert_nothing_stored()
    assert not Path("/tmp/kryt-review-evil").exists()
    local.assert_still_works()


def test_a_non_utf8_member_name_is_refused(local: Local) -> None:
    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, encoding="latin-1"
    ) as tf:
        for name, data in (("bot.toml", _manifest("latin").encode()), ("bot.py", b"x=1\n")):
            info = _tar_info(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        info = _tar_info("caf\xe9.txt")
        tf.addfile(info, io.BytesIO(b""))
    body = problem(
        local.http.post(URL, content=buffer.getvalue(), headers=local.auth("alice")), 422
    )
    assert "UTF-8" in body["detail"]
    _one_line(body["detail"])
    local.assert_nothing_stored()


# ---------------------------------------------------------------- hostile manifests: fine

HOSTILE_MANIFESTS: dict[str, bytes | str] = {
    "escape-sequence-in-name": _manifest("a\\u001b[31mred"),
    "bidi-in-description": _manifest("m1", extra='description = "abc\\u202edef"\n'),
    "control-in-author": _manifest("m2", extra='author = "x\\u0007y"\n'),
    "huge-name": _manifest("a" * 60_000),
    "huge-description": _manifest("m3", extra=f'description = "{"d" * 3000}"\n'),
    "name-is-an-int": 'name = 5\nversion = "1"\nruntime = "python"\nentry = "bot.py"\n',
    "version-is-a-table": 'name = "m4"\nversion = {a = 1}\nruntime = "python"\nentry = "bot.py"\n',
    "unknown-field": _manifest("m5", extra="admin = true\n"),
    "unknown-runtime": 'name = "m6"\nversion = "1"\nruntime = "../../bin/sh"\nentry = "bot.py"\n',
    "entry-climbs-out": _manifest("m7").replace('"bot.py"', '"../../etc/passwd"'),
    "entry-absolute": 'name = "m8"\nversion = "1"\nruntime = "python"\nentry = "/etc/passwd"\n',
    "not-utf8": b'name = "m9\xff"\nversion = "1"\nruntime = "python"\nentry = "bot.py"\n',
    "not-toml": "this is not toml {{{",
    "too-large": _manifest("m10") + "#" * (70 * 1024),
    "html-in-version": _manifest("m11", version="<b>1</b>"),
}


@pytest.mark.parametrize("manifest", HOSTILE_MANIFESTS.values(), ids=HOSTILE_MANIFESTS.keys())
def test_a_hostile_manifest_is_a_one_line_422(local: Local, manifest: bytes | str) -> None:
    archive = _zip({"bot.toml": manifest, "bot.py": "x = 1\n"})
    body = problem(local.http.post(URL, content=archive, headers=local.auth("alice")), 422)
    _one_line(body["detail"])
    assert "\x1b" not in body["detail"] and "\u202e" not in body["detail"]
    local.assert_nothing_stored()
    local.assert_still_works()


def test_bot_text_on_pages_and_in_json_is_escaped(local: Local) -> None:
    description = '<script>alert("d")</script> & <img src=x onerror=alert(1)>'
    extra = f"description = '{description}'\nauthor = '<b onmouseover=alert(2)>me</b>'\n"
    archive = _zip({"bot.toml": _manifest("htmlbot", extra=extra), "bot.py": "x = 1\n"})
    stored = local.http.post(URL, content=archive, headers=local.auth("alice"))
    assert stored.status_code == 202, stored.text
    sid = stored.json()["submission_id"]
    for path in (f"/submissions/{sid}", "/bots/htmlbot", "/"):
        page = local.http.get(path)
        assert page.status_code == 200, path
        assert "<script>alert" not in page.text and "<img src=x" not in page.text, path
        assert "<b onmouseover" not in page.text, path
    assert "&lt;script&gt;alert" in local.http.get(f"/submissions/{sid}").text
    # JSON carries the text as data (and the API's own answers are JSON, not HTML).
    mine = local.http.get(f"{URL}/{sid}", headers=local.auth("alice"))
    assert mine.headers["content-type"].startswith("application/json")
    assert mine.headers["x-content-type-options"] == "nosniff"


# ---------------------------------------------------------------- bodies and content types


def test_an_empty_body_is_a_422_and_stores_nothing(local: Local) -> None:
    body = problem(local.http.post(URL, content=b"", headers=local.auth("alice")), 422)
    _one_line(body["detail"])
    local.assert_nothing_stored()
    local.assert_still_works()


def test_an_empty_body_is_said_to_be_empty(local: Local) -> None:
    body = problem(local.http.post(URL, content=b"", headers=local.auth("alice")), 422)
    assert "is empty" in body["detail"] and "first bytes" not in body["detail"], body["detail"]


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/html", "application/x-www-form-urlencoded", "\x7f"]
)
def test_the_content_type_does_not_change_what_an_archive_is(
    local: Local, content_type: str
) -> None:
    headers = {**local.auth("alice"), "Content-Type": content_type}
    response = local.http.post(URL, content=_good(), headers=headers)
    assert response.status_code == 202, response.text
    assert local.count("submissions") == 1


def test_a_declared_length_over_the_limit_is_a_413_before_the_body(local: Local) -> None:
    headers = {**local.auth("alice"), "Content-Length": str(10**30)}
    problem(local.http.post(URL, content=b"", headers=headers), 413)
    local.assert_nothing_stored()
    local.assert_still_works()


# ---------------------------------------------------------------- credentials: fine

TOKEN_ROUTES = [
    ("GET", "/api/me"),
    ("GET", URL),
    ("POST", URL),
    ("GET", f"{URL}/1"),
    ("GET", "/api/bots/goodbot/logs"),
    ("POST", "/api/bots/goodbot/retire"),
]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic YWxpY2U6cGFzc3dvcmQ=",
        "Bearer kryt_not-a-token",
        "Bearer " + "k" * 20_000,
        "Bearer kryt_\xe9\xe9",
        "Token {alice}",
        "Bearer {alice}x",
        "Bearer {alice} {alice}",
    ],
    ids=lambda h: "none" if h is None else repr(h[:24]),
)
def test_a_missing_or_garbled_token_is_a_401_on_every_route(
    local: Local, header: str | None
) -> None:
    local.assert_still_works()  # alice owns goodbot, submission 1
    for method, path in TOKEN_ROUTES:
        headers: dict[str, Any] = {}
        if header is not None:
            value = header.format(alice=local.tokens["alice"])
            headers["Authorization"] = value.encode("latin-1")
        response = local.http.request(method, path, headers=headers, content=_good("intruder"))
        body = problem(response, 401)
        _one_line(body["detail"])
    assert local.count("submissions") == 1
    assert local.http.get(f"{URL}/1", headers=local.auth("alice")).json()["status"] == "pending"


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_a_revoked_or_expired_token_is_a_401_on_every_route(local: Local, how: str) -> None:
    local.assert_still_works()
    with local.db.session() as session:
        if how == "revoked":
            revoke_token(local.token_ids["alice"], session=session)
        else:
            session.execute(
                text("UPDATE api_tokens SET expires_at = :t WHERE id = :id"),
                {"t": "2000-01-01 00:00:00", "id": local.token_ids["alice"]},
            )
    for method, path in TOKEN_ROUTES:
        response = local.http.request(
            method, path, headers=local.auth("alice"), content=_good("other")
        )
        problem(response, 401)
    assert local.count("submissions") == 1


def test_another_authors_token_cannot_touch_my_bot(local: Local) -> None:
    local.assert_still_works()
    bob = local.auth("bob")
    problem(local.http.get(f"{URL}/1", headers=bob), 403)
    problem(local.http.get("/api/bots/goodbot/logs", headers=bob), 403)
    problem(local.http.post("/api/bots/goodbot/retire", headers=bob), 403)
    # A new version of alice's bot in bob's name, and alice's very content again.
    problem(local.http.post(URL, content=_good(salt="bob's"), headers=bob), 403)
    problem(local.http.post(URL, content=_good(), headers=bob), 403)
    assert local.http.get(URL, headers=bob).json() == {"submissions": []}
    assert local.http.get("/api/me", headers=bob).json() == {"author": "bob", "bots": []}
    mine = local.http.get(f"{URL}/1", headers=local.auth("alice")).json()
    assert mine["status"] == "pending"
    assert local.count("submissions") == 1


# ---------------------------------------------------------------- ids, queries, JSON: fine


@pytest.mark.parametrize(
    "path",
    [
        f"{URL}/-5",
        f"{URL}/0",
        f"{URL}/abc",
        f"{URL}/1.0",
        f"{URL}/1e3",
        f"{URL}/0x1",
        f"{URL}/%20%31",
        f"{URL}/{'9' * 5000}",
        f"{URL}/2147483648",
        f"{URL}/%00",
        "/api/bots/..%2F..%2Fetc/logs",
        "/api/bots/%2e%2e/logs",
        "/api/bots/GOODBOT/logs",
        "/api/bots/%3Cscript%3E/logs",
        "/api/games/-1",
        "/api/games/abc",
    ],
)
def test_a_malformed_or_unknown_id_is_a_404(local: Local, path: str) -> None:
    local.assert_still_works()
    body = problem(local.http.get(path, headers=local.auth("alice")), 404)
    _one_line(body["detail"])


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("limit=abc", 422),
        ("limit=1.5", 422),
        ("limit=", 422),
        ("limit=-99999999999999999999999", 200),
        ("limit=99999999999999999999999", 200),
        ("limit=5&limit=x", 422),
        ("unknown=1", 200),
    ],
)
def test_malformed_query_parameters_are_422_naming_them(
    local: Local, query: str, status: int
) -> None:
    local.assert_still_works()
    response = local.http.get(f"/api/bots/goodbot/logs?{query}", headers=local.auth("alice"))
    if status == 200:
        assert response.status_code == 200, response.text
        assert response.json()["bot"] == "goodbot"
    else:
        assert "limit" in problem(response, status)["detail"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b'"invite"',
        b'{"invite": 5, "name": "x", "password": "0123456789"}',
        b'{"invite": ["x"], "name": "x", "password": "0123456789"}',
        b'{"invite": "x", "name": null, "password": "0123456789"}',
        b'{"invite": 1e999999}',
        b"\xff\xfe{}",
        b"[" * 10_000,
    ],
)
def test_malformed_registration_json_is_a_4xx_problem(local: Local, body: bytes) -> None:
    response = local.http.post(
        "/api/register", content=body, headers={"Content-Type": "application/json"}
    )
    assert 400 <= response.status_code < 500, response.text
    _one_line(problem(response, response.status_code)["detail"])
    assert local.count("authors") == 2


def test_unknown_registration_fields_grant_nothing(local: Local) -> None:
    body = b'{"invite": "nope", "name": "mallory", "password": "0123456789ab", "admin": true}'
    problem(local.http.post("/api/register", content=body), 403)
    assert local.count("authors") == 2


# ---------------------------------------------------------------- uploads at once: fine


def test_the_same_upload_many_times_at_once_is_stored_once(local: Local) -> None:
    data = _good("twin")
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(
                lambda _: local.http.post(URL, content=data, headers=local.auth("alice")),
                range(8),
            )
        )
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] * 7 + [202], [r.text for r in answers]
    assert len({r.json()["submission_id"] for r in answers}) == 1
    assert local.count("submissions") == 1
    assert len(local.stored()) == 1


def test_two_authors_racing_for_a_new_name_leave_one_owner(local: Local) -> None:
    for round_ in range(3):
        name = f"contested{round_}"

        def post(author: str, name: str = name) -> httpx.Response:
            response: httpx.Response = local.http.post(
                URL, content=_good(name, salt=author), headers=local.auth(author)
            )
            return response

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(post, ["alice", "bob"]))
        assert sorted(r.status_code for r in answers) == [202, 403], [r.text for r in answers]
        loser = next(r for r in answers if r.status_code == 403)
        assert "belongs to another author" in problem(loser, 403)["detail"]
    assert local.count("submissions") == 3 and local.count("bots") == 3
    assert len(local.stored()) == 3


def test_a_refused_upload_does_not_pull_the_files_from_under_a_concurrent_one(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a busy server did by chance (1 in about 250 racing uploads): bob posts the same
    archive at once for alice's bot name; both copies were stored before either was refused,
    and the refused one removed the folder the other then read (a 500, or a 422 naming the
    server's store path). Uploads of one content now store and record one at a time: each
    storing is widened here so that overlapping ones would be seen."""
    local.assert_still_works()  # alice owns goodbot
    inside = [0]
    most = [0]
    count_lock = threading.Lock()
    real_store = sandbox.store_submission  # what the store module calls

    def slow_store(submission: Any, store: Path) -> Path:
        with count_lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            time.sleep(0.3)  # the window two racing uploads fell into
            return real_store(submission, store)
        finally:
            with count_lock:
                inside[0] -= 1

    monkeypatch.setattr(store_module, "store_submission", slow_store)
    data = _good(salt="bob's")
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(
                lambda _: local.http.post(URL, content=data, headers=local.auth("bob")), range(4)
            )
        )
    for response in answers:
        detail = problem(response, 403)["detail"]
        assert "belongs to another author" in detail and str(local.store) not in detail
    assert most[0] == 1, f"{most[0]} uploads of one content were stored at once"
    assert local.count("submissions") == 1


def test_many_versions_with_one_number_at_once_keep_one(local: Local) -> None:
    with ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(
                lambda i: local.http.post(
                    URL, content=_good("samever", salt=str(i)), headers=local.auth("alice")
                ),
                range(6),
            )
        )
    assert sorted(r.status_code for r in answers) == [202] + [409] * 5
    assert local.count("submissions") == 1
    assert len(local.stored()) == 1


# ---------------------------------------------------------------- bugs: resource bombs


def _traced_peak(action: Callable[[], httpx.Response]) -> tuple[httpx.Response, int]:
    """The answer of ``action`` and the peak of Python memory allocated while it ran."""
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        response = action()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not already:
            tracemalloc.stop()
    return response, peak


def _tar_gz_with_huge_header(kind: bytes, size: int) -> bytes:
    """A .tar.gz whose first header is a GNU long name ('L') or a pax header ('x') that
    declares ``size`` bytes (of 'a'), then the end of the archive: ~size/1000 compressed."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as gz:
        info = tarfile.TarInfo("././@LongLink")
        info.type = kind
        info.size = size
        gz.write(info.tobuf(format=tarfile.USTAR_FORMAT))
        chunk = b"a" * MiB
        for _ in range(size // MiB):
            gz.write(chunk)
        gz.write(b"\0" * 1024)
    return raw.getvalue()


@pytest.mark.parametrize(
    "kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE], ids=["gnu-longname", "pax"]
)
def test_a_tar_header_bomb_is_refused_without_the_memory(local: Local, kind: bytes) -> None:
    data = _tar_gz_with_huge_header(kind, 64 * MiB)
    assert len(data) < 256 * 1024
    response, peak = _traced_peak(
        lambda: local.http.post(URL, content=data, headers=local.auth("alice"))
    )
    _one_line(problem(response, 422)["detail"])
    local.assert_nothing_stored()
    assert peak < 16 * MiB, f"{len(data)} bytes uploaded cost {peak / MiB:.0f} MiB"


def test_the_compile_check_compiles_each_file_once(
    local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled: list[int] = []
    real = source_check._compile_in_child

    def counting(sources: list[tuple[str, str]]) -> list[dict[str, Any]]:
        compiled.extend(Path(path).stat().st_size for _, path in sources)
        return real(sources)

    monkeypatch.setattr(source_check, "_compile_in_child", counting)
    big = b"a = 1\n" * 4000  # 24 KB; the real attack: 10 MiB and 1999 links
    links = {f"l{i}.py": "big.py" for i in range(100)}
    archive = _zip({"bot.toml": _manifest("linky"), "bot.py": "x = 1\n", "big.py": big}, links)
    response = local.http.post(URL, content=archive, headers=local.auth("alice"))
    assert response.status_code in (202, 422), response.text
    regular_bytes = len(big) + len("x = 1\n")
    assert sum(compiled) <= regular_bytes, (
        f"{sum(compiled)} bytes compiled for {regular_bytes} bytes of Python"
        f" ({len(compiled)} compilations)"
    )


def test_the_compile_check_of_a_large_source_is_bounded_in_memory(local: Local) -> None:
    source = b"a = 1\n" * 120_000  # 720 KB, a 2 KB zip; within every documented limit
    archive = _zip({"bot.toml": _manifest("bigsrc"), "bot.py": source})
    assert len(archive) < 16 * 1024
    response, peak = _traced_peak(
        lambda: local.http.post(URL, content=archive, headers=local.auth("alice"))
    )
    assert response.status_code in (202, 422), response.text
    assert peak < 64 * MiB, f"a {len(archive)}-byte upload cost {peak / MiB:.0f} MiB"


def test_the_service_works_after_a_tar_header_bomb(local: Local) -> None:
    data = _tar_gz_with_huge_header(tarfile.GNUTYPE_LONGNAME, 8 * MiB)
    _one_line(
        problem(local.http.post(URL, content=data, headers=local.auth("alice")), 422)["detail"]
    )
    local.assert_nothing_stored()
    local.assert_still_works()


# ---------------------------------------------------------------- the CLI with a bad token

BAD_TOKENS = {
    "two-lines-in-the-token-file": "kryt_first\nkryt_second",
    "smart-quotes-pasted": "\u201ckryt_abc\u201d",
    "header-injection": "kryt_abc\r\nX-Admin: 1",
}


@pytest.mark.parametrize("token", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_kryt_with_a_garbled_token_says_so_in_one_line(tmp_path: Path, token: str) -> None:
    bot = make_bot(tmp_path / "bot", "garbled")
    for args in (
        ("submit", str(bot), "--server", "http://127.0.0.1:9"),
        ("submissions", "--server", "http://127.0.0.1:9"),
    ):
        done = kryt(*args, env={"KRYT_TOKEN": token}, timeout=120)
        assert done.returncode in (2, 3), done.stderr
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr[-2000:]


def test_kryt_with_an_unknown_token_is_one_line(tmp_path: Path) -> None:
    """With a well-formed token, an unreachable server is one ``error:`` line (exit 3)."""
    bot = make_bot(tmp_path / "bot", "wellformed")
    done = kryt("submit", str(bot), "--server", "http://127.0.0.1:9", env={"KRYT_TOKEN": "kryt_x"})
    assert done.returncode == 3, done.stderr
    assert re.fullmatch(r"error: cannot reach \S+: .*\n?", done.stderr), done.stderr
