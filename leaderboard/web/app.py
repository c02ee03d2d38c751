"""The leaderboard web site: HTML pages, a small JSON API and the static files.

Routes: ``/`` (overall leaderboard), ``/tournaments/{id}``, ``/submissions/{id}``,
``/bots/{name}``, ``/series/{id}``, ``/games/{id}`` (replay viewer),
``/api/leaderboard[?tournament=ID][&ruleset=NAME][&table_size=N]``, ``/api/games/{id}``,
``/static/...``, ``/api/docs`` (the API's page, made here: nothing is fetched from elsewhere)
and ``/api/openapi.json``. HEAD is answered wherever GET is. Unknown or malformed ids give a 404
page (or a JSON error under ``/api``); a ruleset the rules core does not know, or a table size
it cannot seat, a 422; a database that cannot be read gives a 503 with the reason; a game whose
stored row is damaged (its deal and moves do not unpack) a 500 page saying ``game N is stored
inconsistently: ...`` (logged as one line: retrying does not help, the row needs repair).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlmodel import Session
from starlette.exceptions import HTTPException as StarletteHTTPException

from arena.db import Database, DatabaseUnavailableError, NotFoundError
from leaderboard.standings import InvalidFilterError
from leaderboard.web.api_docs import api_docs_page
from leaderboard.web.bot_page import bot_page
from leaderboard.web.http_methods import HeadAsGet, allow_header
from leaderboard.web.pages import (
    DAMAGED_GAME_HEADING,
    DamagedGameError,
    PageNotFoundError,
    game_json,
    game_page,
    leaderboard_json,
    leaderboard_page,
    parse_id,
    series_page,
    submission_page,
)
from leaderboard.web.render import Links, render

LINKS = Links("/", static=False)
log = logging.getLogger(__name__)


def static_dir() -> Path:
    """The folder of the site's CSS and JavaScript."""
    return Path(str(files("leaderboard.web").joinpath("static")))


def _error_response(
    request: Request,
    status: int,
    heading: str,
    message: str,
    headers: dict[str, str] | None = None,
) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    html = render("error.html", links=LINKS, title=heading, heading=heading, message=message)
    return HTMLResponse(html, status_code=status, headers=headers)


_ERROR_JSON = {
    "application/json": {
        "schema": {
            "type": "object",
            "properties": {"error": {"type": "string"}},
            "required": ["error"],
        }
    }
}
_ERROR_PAGE = {"text/html": {"schema": {"type": "string"}}}


def _describe_errors(schema: dict[str, Any]) -> None:
    """Make ``schema`` (the OpenAPI document, changed in place) list the errors the site
    sends: ``{"error": ...}`` under ``/api/``, an HTML page elsewhere; 404 for an id or name
    that names nothing, 422 for a bad filter, 500 for a damaged stored game, 503 when the
    database is unavailable. FastAPI's own 422 (its ``detail`` list) is dropped: every
    parameter is taken as text and checked by the site, so it is never sent."""
    for path, item in schema.get("paths", {}).items():
        content = _ERROR_JSON if path.startswith("/api/") else _ERROR_PAGE
        for operation in item.values():
            errors: dict[str, str] = {}
            if "{" in path:
                errors["404"] = "Nothing has that id or name (or it is not one)"
            if path == "/api/leaderboard":
                errors["404"] = "No tournament has that id (or it is not one)"
                errors["422"] = "A filter that is not valid (the error says which)"
            if "{game_id}" in path:
                errors["500"] = "The stored game is damaged"
            errors["503"] = "The database is unavailable"
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for code, description in errors.items():
                responses[code] = {"description": description, "content": content}
    models = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        models.pop(name, None)
    if "components" in schema and not models:
        schema["components"].pop("schemas", None)
        if not schema["components"]:
            del schema["components"]


def table_size_filter(table_size: str | None) -> int | None:
    """The ``table_size`` filter of ``/api/leaderboard`` as a number, or InvalidFilterError
    quoting it (whether the board's ruleset seats it is the board's own check)."""
    if table_size is None:
        return None
    if not (table_size.isascii() and table_size.isdigit()) or len(table_size) > 4:
        raise InvalidFilterError(f"table_size must be a number of seats, got {table_size!r}")
    return int(table_size)


def create_app(db: Database) -> FastAPI:
    """The leaderboard site reading ``db`` (each request uses its own read-only session)."""
    app = FastAPI(
        title="Kryt Arena leaderboard",
        docs_url=None,  # FastAPI's page loads Swagger UI from a CDN: /api/docs is ours
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.add_middleware(HeadAsGet)
    fastapi_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _describe_errors(fastapi_openapi())  # fills app.openapi_schema, kept from then on
        return app.openapi_schema or fastapi_openapi()

    app.openapi = openapi  # type: ignore[method-assign]
    app.mount("/static", StaticFiles(directory=static_dir()), name="static")

    def read(build: Callable[[Session], Any]) -> Any:
        with db.read_session() as session:
            return build(session)

    @app.exception_handler(PageNotFoundError)
    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: Exception) -> Response:
        return _error_response(request, 404, "Not found", str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            return _error_response(request, 404, "Not found", f"no page at {request.url.path}")
        headers = dict(exc.headers or {})
        if exc.status_code == 405 and "Allow" in headers:
            headers["Allow"] = allow_header({m.strip() for m in headers["Allow"].split(",")})
            return _error_response(
                request,
                405,
                "Method not allowed",
                f"{request.method} is not allowed on {request.url.path};"
                f" allowed: {headers['Allow']}",
                headers,
            )
        return _error_response(request, exc.status_code, "Error", str(exc.detail), headers)

    @app.exception_handler(InvalidFilterError)
    async def invalid_filter(request: Request, exc: InvalidFilterError) -> Response:
        return _error_response(request, 422, "Invalid filter", str(exc))

    @app.exception_handler(DamagedGameError)
    async def damaged_game(request: Request, exc: DamagedGameError) -> Response:
        # Not a 503: the database answers, and asking again gives the same damaged row.
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return _error_response(request, 500, DAMAGED_GAME_HEADING, str(exc))

    @app.exception_handler(DatabaseUnavailableError)
    async def unavailable(request: Request, exc: DatabaseUnavailableError) -> Response:
        return _error_response(request, 503, "Database unavailable", str(exc))

    @app.get("/api/docs", response_class=HTMLResponse, include_in_schema=False)
    def api_docs() -> str:
        return api_docs_page(app.openapi(), links=LINKS)

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return str(read(lambda s: leaderboard_page(session=s, links=LINKS)))

    @app.get("/tournaments/{tournament_id}", response_class=HTMLResponse)
    def tournament(tournament_id: str) -> str:
        tid = parse_id(tournament_id, "tournament")
        return str(read(lambda s: leaderboard_page(session=s, links=LINKS, tournament_id=tid)))

    @app.get("/submissions/{submission_id}", response_class=HTMLResponse)
    def submission(submission_id: str) -> str:
        sid = parse_id(submission_id, "submission")
        return str(read(lambda s: submission_page(sid, session=s, links=LINKS)))

    @app.get("/bots/{name}", response_class=HTMLResponse)
    def bot(name: str) -> str:
        # Bot names are printable ASCII; anything else (a NUL, which PostgreSQL cannot even
        # compare) names no bot.
        if not name.isascii() or not name.isprintable() or len(name) > 40:
            raise PageNotFoundError(f"no bot named {name[:40]!r}")
        return str(read(lambda s: bot_page(name, session=s, links=LINKS)))

    @app.get("/series/{series_id}", response_class=HTMLResponse)
    def series(series_id: str) -> str:
        sid = parse_id(series_id, "series")
        return str(read(lambda s: series_page(sid, session=s, links=LINKS)))

    @app.get("/games/{game_id}", response_class=HTMLResponse)
    def game(game_id: str) -> str:
        gid = parse_id(game_id, "game")
        return str(read(lambda s: game_page(gid, session=s, links=LINKS)))

    @app.get("/api/leaderboard")
    def api_leaderboard(
        tournament: str | None = None, ruleset: str | None = None, table_size: str | None = None
    ) -> dict[str, Any]:
        tid = None if tournament is None else parse_id(tournament, "tournament")
        size = table_size_filter(table_size)
        data: dict[str, Any] = read(
            lambda s: leaderboard_json(
                session=s, tournament_id=tid, ruleset=ruleset, table_size=size
            )
        )
        return data

    @app.get("/api/games/{game_id}")
    def api_game(game_id: str) -> dict[str, Any]:
        gid = parse_id(game_id, "game")
        data: dict[str, Any] = read(lambda s: game_json(gid, session=s))
        return data

    return app
