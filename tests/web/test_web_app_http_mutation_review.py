"""Mutation review of the leaderboard site's HTTP surface: ``leaderboard/web/app.py`` (routes,
error handlers, the ``table_size`` filter), ``leaderboard/web/http_methods.py`` (HEAD as GET,
the ``Allow`` header) and ``leaderboard/web/api_docs.py`` (the ``/api/docs`` page).

Expected values come from docs/leaderboard.md ("The web site"): the documented routes, HEAD
answered wherever GET is with the same headers and no body, any other method a 405 with
``Allow``, malformed ids a 404 (JSON ``{"error": ...}`` under ``/api/``), a filter no board can
take a 422, a database that cannot be read a 503 naming the problem; from RFC 9110 (``Allow``
lists the methods the resource takes, HEAD wherever GET); and, for ``/api/docs``, from the
app's own route table read here directly (``app.routes``), not from the page's code. The
OpenAPI reader is checked on a hand-written document whose expected operations are written
out by hand. Every database is a SQLite file under pytest's ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from arena.db import open_database
from leaderboard.standings import InvalidFilterError
from leaderboard.web import create_app
from leaderboard.web.api_docs import Operation, Parameter, api_docs_page, operations
from leaderboard.web.app import table_size_filter
from leaderboard.web.http_methods import HeadAsGet, allow_header
from leaderboard.web.render import Links
from tests.web.world import World, build_world

HTML = "text/html; charset=utf-8"
JSON = "application/json"
OTHER_METHODS = ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "BREW")
"""Methods no route of the leaderboard takes (the last one is not even standard)."""


@dataclass(frozen=True)
class Site:
    """A filled SQLite file (closed, so everything is in the main file) and its ids."""

    path: Path
    world: World


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    path = tmp_path_factory.mktemp("webapp") / "kryt.db"
    db = open_database(f"sqlite:///{path}")
    try:
        world = build_world(db)
    finally:
        db.close()
    return Site(path, world)


@pytest.fixture(scope="module")
def client(site: Site) -> Iterator[TestClient]:
    db = open_database(f"sqlite:///{site.path}", create=False)
    try:
        with TestClient(create_app(db)) as test_client:
            yield test_client
    finally:
        db.close()


def documented_routes(world: World) -> list[tuple[str, str]]:
    """Every route of docs/leaderboard.md's table (plus the OpenAPI document and a static
    file), filled with ids of the world, and the content type each must have."""
    return [
        ("/", HTML),
        (f"/tournaments/{world.finished_tournament}", HTML),
        (f"/tournaments/{world.running_tournament}", HTML),
        ("/bots/alpha", HTML),
        (f"/submissions/{world.submissions['bravo']}", HTML),
        (f"/series/{world.series[0]}", HTML),
        (f"/games/{world.won_game}", HTML),
        ("/api/leaderboard", JSON),
        (f"/api/leaderboard?tournament={world.finished_tournament}", JSON),
        ("/api/leaderboard?ruleset=classic&table_size=4", JSON),
        (f"/api/games/{world.drawn_game}", JSON),
        ("/api/docs", HTML),
        ("/api/openapi.json", JSON),
        ("/static/style.css", "text/css; charset=utf-8"),
        ("/static/replay.js", "javascript"),
    ]


def _same_headers(head: Any, get: Any) -> None:
    """HEAD's headers are GET's (date-like headers aside: there are none here)."""
    assert dict(head.headers) == dict(get.headers)


# --- GET and HEAD -------------------------------------------------------------------------


def test_every_documented_route_answers_get_and_head_alike(client: TestClient, site: Site) -> None:
    for path, kind in documented_routes(site.world):
        get = client.get(path)
        assert get.status_code == 200, (path, get.status_code, get.text[:200])
        content_type = get.headers["content-type"]
        assert content_type == kind or (kind == "javascript" and kind in content_type), path
        assert get.headers["content-length"] == str(len(get.content)) and get.content, path
        head = client.head(path)
        assert head.status_code == 200, (path, head.status_code)
        assert head.content == b"", path
        _same_headers(head, get)


def test_head_of_an_error_is_the_errors_headers_without_its_body(
    client: TestClient, site: Site
) -> None:
    for path, status in (
        ("/games/999999", 404),
        ("/games/abc", 404),
        ("/no/such/page", 404),
        ("/api/games/0", 404),
        ("/api/no/such/thing", 404),
        ("/api/leaderboard?table_size=x", 422),
        ("/api/leaderboard?tournament=-1", 404),
    ):
        get = client.get(path)
        head = client.head(path)
        assert (get.status_code, head.status_code) == (status, status), path
        assert get.content and head.content == b"", path
        _same_headers(head, get)


def test_head_of_a_file_sent_in_many_chunks_has_no_body(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # StaticFiles streams a file in chunks (more_body=True until the last): a HEAD must
    # still end with exactly one empty body message.
    from starlette import responses

    monkeypatch.setattr(responses.FileResponse, "chunk_size", 1024)
    get = client.get("/static/style.css")
    assert len(get.content) > 3 * 1024  # several chunks
    head = client.head("/static/style.css")
    assert head.status_code == 200 and head.content == b""
    _same_headers(head, get)


def _run_asgi(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message ``app`` sends for ``scope`` (no request body), below any HTTP client
    (httpx drops a HEAD answer's body itself, which would hide a body sent)."""
    sent: list[dict[str, Any]] = []
    received: list[bool] = []

    async def receive() -> dict[str, Any]:
        if received:  # the client stays connected: later reads wait (cancelled at the end)
            await asyncio.sleep(3600)
        received.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _http_scope(method: str, path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
    }


def test_head_sends_no_body_bytes_at_the_asgi_level() -> None:
    seen: list[str] = []

    async def chunked(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["method"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-n", b"3")]})
        for chunk, more in ((b"one", True), (b"two", True), (b"three", False)):
            await send({"type": "http.response.body", "body": chunk, "more_body": more})

    head = _run_asgi(HeadAsGet(chunked), _http_scope("HEAD", "/"))
    assert seen == ["GET"]
    assert head == [
        {"type": "http.response.start", "status": 200, "headers": [(b"x-n", b"3")]},
        {"type": "http.response.body", "body": b"", "more_body": False},
    ]
    get = _run_asgi(HeadAsGet(chunked), _http_scope("GET", "/"))
    assert seen == ["GET", "GET"]
    assert b"".join(m.get("body", b"") for m in get) == b"onetwothree"


def test_head_of_real_pages_sends_no_body_bytes(site: Site) -> None:
    db = open_database(f"sqlite:///{site.path}", create=False)
    try:
        app = create_app(db)
        for path in ("/", "/api/leaderboard", "/static/style.css", "/games/0"):
            get = _run_asgi(app, _http_scope("GET", path))
            head = _run_asgi(app, _http_scope("HEAD", path))
            assert head[0] == get[0], path  # the same status and headers
            bodies = [m for m in head if m["type"] == "http.response.body"]
            assert bodies == [{"type": "http.response.body", "body": b"", "more_body": False}]
    finally:
        db.close()


def test_what_is_not_an_http_request_passes_through_untouched() -> None:
    seen: list[dict[str, Any]] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)

    websocket = {"type": "websocket", "path": "/ws", "headers": []}
    _run_asgi(HeadAsGet(inner), websocket)
    assert seen == [websocket]


# --- Other methods: 405 with Allow ---------------------------------------------------------


def test_every_other_method_is_a_405_naming_get_and_head(client: TestClient, site: Site) -> None:
    for path, _ in documented_routes(site.world):
        bare = path.split("?")[0]
        for method in OTHER_METHODS:
            response = client.request(method, path)
            assert response.status_code == 405, (method, path, response.status_code)
            allow = response.headers.get("allow")
            assert allow is not None, (method, path)
            assert allow == "GET, HEAD", (method, path, allow)
            assert "Traceback" not in response.text
            message = f"{method} is not allowed on {bare}; allowed: GET, HEAD"
            if bare.startswith("/api/"):
                assert response.headers["content-type"] == JSON, (method, path)
                assert response.json() == {"error": message}
            else:
                assert response.headers["content-type"] == HTML, (method, path)
                assert "<h1>Method not allowed</h1>" in response.text
                assert message in response.text


def test_a_path_that_does_not_exist_is_a_404_whatever_the_method(client: TestClient) -> None:
    for method in ("GET", "HEAD", "POST", "DELETE"):
        page = client.request(method, "/tournament/1")
        assert page.status_code == 404 and "allow" not in page.headers, method
        assert page.headers["content-type"] == HTML
        api = client.request(method, "/api/tournaments/1")
        assert api.status_code == 404 and "allow" not in api.headers, method
        assert api.headers["content-type"] == JSON
        if method != "HEAD":
            assert "<h1>Not found</h1>" in page.text and "no page at /tournament/1" in page.text
            assert api.json() == {"error": "no page at /api/tournaments/1"}


def test_only_paths_under_api_slash_answer_errors_in_json(client: TestClient) -> None:
    # "/apiary" is not under /api/: its 404 is a page, as for any other unknown path.
    for path in ("/apiary", "/api", "/apix/games/1"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"] == HTML, path
        assert "<h1>Not found</h1>" in response.text


@pytest.mark.parametrize(
    ("methods", "expected"),
    [
        ({"GET"}, "GET, HEAD"),
        ({"GET", "HEAD"}, "GET, HEAD"),
        (frozenset({"POST"}), "POST"),
        ({"POST", "GET"}, "GET, HEAD, POST"),
        ({"PUT", "DELETE", "GET", "POST"}, "DELETE, GET, HEAD, POST, PUT"),
        (set(), ""),
    ],
)
def test_allow_header_lists_exactly_the_methods_and_head_with_get(
    methods: set[str], expected: str
) -> None:
    before = set(methods)
    assert allow_header(methods) == expected
    assert set(methods) == before  # the caller's set is not changed


# --- Query and path validation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("ruleset=classic&table_size=3", 200),
        ("ruleset=classic&table_size=0004", 200),  # four digits: a number of seats
        ("ruleset=classic&table_size=00004", 422),  # five characters: refused unread
        ("ruleset=classic&table_size=%D9%A3", 422),  # ARABIC-INDIC THREE: not ASCII
        ("ruleset=classic&table_size=%EF%BC%93", 422),  # FULLWIDTH THREE
        ("ruleset=classic&table_size=3.0", 422),
        ("ruleset=classic&table_size=%203", 422),
        ("ruleset=classic&table_size=", 422),
        ("ruleset=classic&table_size=-3", 422),
        ("ruleset=", 422),
        ("tournament=1.5", 404),
        ("tournament=%EF%BC%91", 404),
        ("tournament=0", 404),
        ("tournament=99999999999", 404),
        ("page=-1&limit=99999999999999999999", 200),  # parameters the API does not take
    ],
)
def test_leaderboard_filters_are_validated_into_clear_4xx(
    client: TestClient, query: str, status: int
) -> None:
    response = client.get(f"/api/leaderboard?{query}")
    assert response.status_code == status, (query, response.status_code, response.text[:200])
    assert response.headers["content-type"] == JSON
    body = response.json()
    if status == 200:
        assert "rows" in body
    else:
        assert set(body) == {"error"} and body["error"], query


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, None), ("2", 2), ("4", 4), ("0004", 4), ("9999", 9999)],
)
def test_table_size_filter_reads_a_number_of_seats(text: str | None, expected: int | None) -> None:
    assert table_size_filter(text) == expected


@pytest.mark.parametrize("text", ["", "x", "-2", "+2", "2.0", " 2", "\u0663", "\uff13", "10000"])
def test_table_size_filter_refuses_what_is_not_a_number_quoting_it(text: str) -> None:
    with pytest.raises(InvalidFilterError) as raised:
        table_size_filter(text)
    assert "table_size must be a number of seats" in str(raised.value)
    assert repr(text) in str(raised.value)


def test_a_repeated_filter_is_answered_not_crashed(client: TestClient, site: Site) -> None:
    tid = site.world.finished_tournament
    response = client.get(f"/api/leaderboard?tournament={tid}&tournament=abc")
    assert response.status_code in (200, 404), response.status_code
    assert response.headers["content-type"] == JSON


def test_bot_names_at_and_over_the_length_limit_are_404_pages(client: TestClient) -> None:
    for name in ("b" * 40, "b" * 41, "b" * 5000, "%FF", "tab%09name"):
        response = client.get(f"/bots/{name}")
        assert response.status_code == 404, name[:20]
        assert response.headers["content-type"] == HTML
        assert "<h1>Not found</h1>" in response.text and "no bot named" in response.text


# --- /api/docs ----------------------------------------------------------------------------


def _served_operations(client: TestClient) -> set[tuple[str, str]]:
    """(METHOD, path) of every documented operation the app's route table holds: its
    APIRoutes in the schema, read from ``app.routes`` directly."""
    app: Any = client.app
    return {
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute) and route.include_in_schema
        for method in route.methods or ()
    }


def test_api_docs_list_exactly_the_operations_the_app_serves(
    client: TestClient, site: Site
) -> None:
    page = client.get("/api/docs").text
    listed = re.findall(r"<h2><code>([A-Z]+) (\S+)</code></h2>", page)
    assert len(listed) == len(set(listed)), listed  # each once
    served = _served_operations(client)
    assert set(listed) == served
    # The documented JSON API is among them, the docs page itself is not.
    assert {("GET", "/api/leaderboard"), ("GET", "/api/games/{game_id}")} <= served
    assert not any(path in ("/api/docs", "/api/openapi.json") for _, path in listed)
    # Sorted by path, as the page promises to read like a reference.
    assert [path for _, path in listed] == sorted(path for _, path in listed)
    # Every listed path answers (filled with ids of the world).
    world = site.world
    ids = {
        "game_id": str(world.won_game),
        "tournament_id": str(world.finished_tournament),
        "submission_id": str(world.submissions["alpha"]),
        "series_id": str(world.series[0]),
        "name": "alpha",
    }
    for _, path in listed:
        concrete = re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)
        assert client.get(concrete).status_code == 200, concrete
    assert 'href="/api/openapi.json"' in page
    assert "<h1>Kryt Arena leaderboard: API</h1>" in page


def test_api_docs_show_each_parameter_where_it_goes_and_whether_required(
    client: TestClient,
) -> None:
    page = client.get("/api/docs").text
    sections = dict(re.findall(r"<h2><code>GET (\S+)</code></h2>(.*?)</section>", page, flags=re.S))
    rows = re.findall(
        r"<tr><td><code>(\w+)</code></td><td>(\w+)</td><td>([^<]*)</td><td>(\w+)</td>",
        sections["/api/leaderboard"],
    )
    assert rows == [
        ("tournament", "query", "string or null", "no"),
        ("ruleset", "query", "string or null", "no"),
        ("table_size", "query", "string or null", "no"),
    ]
    rows = re.findall(
        r"<tr><td><code>(\w+)</code></td><td>(\w+)</td><td>([^<]*)</td><td>(\w+)</td>",
        sections["/api/games/{game_id}"],
    )
    assert rows == [("game_id", "path", "string", "yes")]
    assert "<code>200</code>" in sections["/api/games/{game_id}"]


HAND_SCHEMA: dict[str, Any] = {
    "info": {"title": "Hand"},
    "paths": {
        "/b": {
            "parameters": [{"name": "shared", "in": "path"}],  # path-level: not an operation
            "post": {
                "summary": "Make a b",
                "description": "Longer words.",
                "requestBody": {"content": {"text/plain": {}, "application/json": {}}},
                "responses": {"422": {"description": "bad"}, "201": {"description": "made"}},
            },
            "get": {
                "parameters": [
                    {
                        "name": "x",
                        "in": "query",
                        "schema": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                    },
                    {
                        "name": "y",
                        "in": "path",
                        "required": True,
                        "schema": {"$ref": "#/components/schemas/Thing"},
                        "description": "the thing",
                    },
                    {"name": "z", "in": "header", "schema": {"oneOf": [{"type": "string"}]}},
                    {"name": "w", "in": "query"},
                ],
            },
            "trace": {},
        },
        "/a": {"delete": {"responses": {"204": {"description": "gone"}}}, "x-note": {}},
    },
}


def test_operations_of_a_hand_written_openapi_document() -> None:
    got = operations(HAND_SCHEMA)
    assert got == [
        Operation("DELETE", "/a", "", "", (), (), (("204", "gone"),)),
        Operation(
            "GET",
            "/b",
            "",
            "",
            (
                Parameter("x", "query", "integer or null", False, ""),
                Parameter("y", "path", "Thing", True, "the thing"),
                Parameter("z", "header", "string", False, ""),
                Parameter("w", "query", "any", False, ""),
            ),
            (),
            (),
        ),
        Operation(
            "POST",
            "/b",
            "Make a b",
            "Longer words.",
            (),
            ("application/json", "text/plain"),
            (("201", "made"), ("422", "bad")),
        ),
        Operation("TRACE", "/b", "", "", (), (), ()),
    ]
    assert operations({}) == []


def test_api_docs_page_of_a_hand_written_document() -> None:
    page = api_docs_page(HAND_SCHEMA, links=Links("/"))
    assert "<h1>Hand: API</h1>" in page
    assert re.findall(r"<h2><code>([A-Z]+ \S+)</code></h2>", page) == [
        "DELETE /a",
        "GET /b",
        "POST /b",
        "TRACE /b",
    ]
    assert "Request body: <code>application/json</code>, <code>text/plain</code>" in page
    assert "Responses: <code>201</code> made; <code>422</code> bad" in page
    assert 'href="/api/openapi.json"' in page
    # The link to the document follows the site's root.
    assert 'href="/board/api/openapi.json"' in api_docs_page(HAND_SCHEMA, links=Links("/board/"))
    empty = api_docs_page({"paths": {}}, links=Links("/"))
    assert "<h1>API: API</h1>" in empty and "No operations." in empty


def test_api_docs_escape_text_from_the_document() -> None:
    schema = {
        "info": {"title": "<b>t</b>"},
        "paths": {"/x": {"get": {"summary": "<script>alert(1)</script>"}}},
    }
    page = api_docs_page(schema, links=Links("/"))
    assert "<script>alert(1)</script>" not in page and "<b>t</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# --- A database that cannot be read --------------------------------------------------------


def _client_over_copy(site: Site, tmp_path: Path) -> tuple[Any, Path]:
    copy = tmp_path / "copy.db"
    shutil.copy(site.path, copy)
    db = open_database(f"sqlite:///{copy}", create=False)
    return db, copy


def _assert_clear_503(client: TestClient, reason: str) -> None:
    for path in ("/", "/bots/alpha", "/games/1", "/tournaments/1"):
        response = client.get(path)
        assert response.status_code == 503, (path, response.status_code)
        assert response.headers["content-type"] == HTML
        assert "<h1>Database unavailable</h1>" in response.text
        assert reason in response.text and "Traceback" not in response.text
        head = client.head(path)
        assert head.status_code == 503 and head.content == b""
    for path in ("/api/leaderboard", "/api/games/1"):
        response = client.get(path)
        assert response.status_code == 503, (path, response.status_code)
        assert response.headers["content-type"] == JSON
        assert set(response.json()) == {"error"} and reason in response.json()["error"]


def test_a_file_that_is_no_longer_a_database_gives_503_pages(site: Site, tmp_path: Path) -> None:
    db, copy = _client_over_copy(site, tmp_path)
    try:
        with TestClient(create_app(db), raise_server_exceptions=False) as client:
            copy.write_bytes(b"this is not a database\n" * 500)
            db.engine.dispose()  # new connections read the damaged file
            _assert_clear_503(client, "damaged")
    finally:
        db.close()


def test_a_database_whose_tables_were_dropped_gives_503_pages(site: Site, tmp_path: Path) -> None:
    db, copy = _client_over_copy(site, tmp_path)
    try:
        with TestClient(create_app(db), raise_server_exceptions=False) as client:
            with sqlite3.connect(copy) as raw:
                for table in ("games", "series", "submissions", "tournaments", "bots"):
                    raw.execute(f"DROP TABLE {table}")
            db.engine.dispose()
            _assert_clear_503(client, "schema is damaged")
    finally:
        db.close()


def test_the_openapi_document_lists_the_errors_the_site_sends(client: TestClient) -> None:
    """Each operation lists what it can answer besides 200, in the shape it is sent
    (``{"error": text}`` under /api/, an HTML page elsewhere); never FastAPI's own 422,
    which the site does not send (every parameter is text, checked by the site)."""
    document = client.get("/api/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(document)
    expected = {
        "/": {"200", "503"},
        "/tournaments/{tournament_id}": {"200", "404", "503"},
        "/submissions/{submission_id}": {"200", "404", "503"},
        "/bots/{name}": {"200", "404", "503"},
        "/series/{series_id}": {"200", "404", "503"},
        "/games/{game_id}": {"200", "404", "500", "503"},
        "/api/leaderboard": {"200", "404", "422", "503"},
        "/api/games/{game_id}": {"200", "404", "500", "503"},
    }
    assert {path: set(item["get"]["responses"]) for path, item in document["paths"].items()} == (
        expected
    )
    for path, item in document["paths"].items():
        for code, answer in item["get"]["responses"].items():
            if code == "200":
                continue
            if path.startswith("/api/"):
                schema = answer["content"][JSON]["schema"]
                assert schema["required"] == ["error"] and schema["properties"]["error"] == {
                    "type": "string"
                }
            else:
                assert set(answer["content"]) == {"text/html"}
    # What the document says is what is sent.
    missing = client.get("/api/games/999999")
    assert missing.status_code == 404 and set(missing.json()) == {"error"}
    invalid = client.get("/api/leaderboard?table_size=x")
    assert invalid.status_code == 422 and set(invalid.json()) == {"error"}
    unknown = client.get("/api/leaderboard?tournament=999999")
    assert unknown.status_code == 404 and set(unknown.json()) == {"error"}
    page = client.get("/api/docs").text
    assert "The database is unavailable" in page and "Validation Error" not in page
