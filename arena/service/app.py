"""The arena server: the leaderboard site, the authors' API and pages, health and metrics.

Routes added to the leaderboard's (``/``, ``/bots/{name}``, ``/games/{id}``, ...):

- ``GET /health`` (the database takes reads and writes), ``GET /metrics`` (Prometheus text);
- ``GET /api/me``, ``POST /api/submissions`` (the archive as the request body),
  ``GET /api/submissions``, ``GET /api/submissions/{id}``, ``POST /api/bots/{name}/retire``,
  ``GET /api/bots/{name}/logs``, ``GET /api/ladder``: every one needs
  ``Authorization: Bearer <token>`` but the ladder's;
- ``POST /api/register`` (an invite code, a name and a password: a new author and their
  first token; no token needed, the code is the credential), ``GET/POST /register``;
- ``GET/POST /login``, ``POST /logout``, ``GET /me`` (the author's private page: checks,
  forfeits, logs), ``POST /me/bots/{name}/retire``: forms carry a CSRF token.

Errors of the API are JSON problem details (RFC 9457): ``type``, ``title``, ``status``,
``detail``. Authentication fails closed: no, unknown, revoked or expired token → 401; a bot of
another author → 403; too many tries or writes → 429 with ``Retry-After``. A method a path does
not take (any method, ``TRACE`` and ``CONNECT`` too) is a 405 with ``Allow`` (pages too; HEAD is
answered wherever GET is, as GET without the body); ``/api/docs`` is the API's page made here
from ``/api/openapi.json`` (nothing fetched from elsewhere); a malformed id in a query
(``?tournament=abc``) a 422; a request body that stops arriving for ``body_timeout_seconds``, or
trickles in below ``BODY_MIN_RATE``, a 408 (the connection is closed). Every answer, a 500 of a
bug too, is counted in ``/metrics`` and carries the hardening headers. Blocking work of the
async routes (database, unpacking, password hashes) runs in worker threads, so one upload does
not hold up other requests."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.exception_handlers import (
    http_exception_handler,
    request_validation_exception_handler,
)
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from sqlalchemy import func
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.db import (
    Bot,
    ConflictError,
    Database,
    DatabaseUnavailableError,
    Game,
    InvalidRecordError,
    NotFoundError,
    Submission,
    SubmissionStatus,
    find_bot,
    get_submission,
    list_submissions,
    set_submission_status,
)
from arena.db.accounts import (
    InviteError,
    Principal,
    audit,
    authenticate_token,
    bots_of_author,
    find_author,
    hash_token,
    owner_of,
    redeem_invite,
)
from arena.db.engine import SQLITE_BUSY_TIMEOUT_S
from arena.db.ladder import checks_of_author, get_check, ladder_series_ids, logs_of_submissions
from arena.db.models import ApiToken, Author, SubmissionCheck
from arena.db.types import utcnow
from arena.service.auth import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    PasswordError,
    RateLimiter,
    Signer,
    hash_password,
    password_credential,
    token_credential,
    verify_password,
)
from arena.service.ladder import Ladder, entrants
from arena.service.settings import ServiceSettings
from arena.service.uploads import (
    ForbiddenError,
    StoreUnavailableError,
    UploadError,
    Validator,
    accept_upload,
)
from arena.tournament.runner import label_prefix
from leaderboard.web.api_docs import api_docs_page
from leaderboard.web.app import LINKS
from leaderboard.web.app import create_app as create_leaderboard_app
from leaderboard.web.http_methods import HeadAsGet, allow_header
from leaderboard.web.pages import PageNotFoundError, parse_id
from leaderboard.web.render import render
from sandbox import sweep_leftovers
from sandbox.submission import NAME_RE as BOT_NAME_RE

log = logging.getLogger(__name__)

#: What a caller is told when the database is unavailable (the reason is logged, not shown).
UNAVAILABLE_DETAIL = "the arena's database is unavailable; try again later"
#: What a caller is told of a bug (the traceback is logged, never shown).
INTERNAL_DETAIL = "internal error (logged on the server)"
HEALTH_LOCK_WAIT_S = 3.0
"""How long ``/health``'s write probe waits for SQLite's write lock: a writer holding it
longer is reported (writers wait up to the busy timeout, 60 s, then fail)."""
HARDENING = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
)
"""Headers every answer carries (unless it sets them itself)."""

PROBLEM = "application/problem+json"
FILENAME_HEADER = "x-kryt-filename"
ID_QUERIES = {"/api/leaderboard": ("tournament",)}
"""Query parameters that are database ids: anything but a positive decimal number there is a
malformed request (422); a well-formed id of nothing is a 404 (the route's own answer)."""


class Problem(Exception):
    """An API error, answered as a JSON problem document."""

    def __init__(self, status: int, title: str, detail: str, *, retry_after: float = 0) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.retry_after = retry_after


HTTP_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
)
"""Methods ``/metrics`` counts by name; any other (a client may send any token as its
method) is counted as ``OTHER``, so clients cannot add series to it without bound."""


@dataclass
class Metrics:
    """Counters for ``/metrics`` (in memory, since the start of this process)."""

    started: float = field(default_factory=time.time)
    requests: Counter[tuple[str, int]] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, method: str, status: int) -> None:
        """Count one answer of ``status`` to a ``method`` request (unknown methods as
        ``OTHER``)."""
        shown = method if method in HTTP_METHODS else "OTHER"
        with self.lock:
            self.requests[(shown, status)] += 1


@dataclass
class Service:
    """What the routes share: the database, settings, limiters and background workers."""

    db: Database
    settings: ServiceSettings
    signer: Signer
    writes: RateLimiter
    failures: RateLimiter
    validator: Validator
    ladder: Ladder | None
    metrics: Metrics
    background: bool = True
    """Whether validations run (as uploads arrive); without it they stay pending until a
    server that runs them starts (``Validator.resume``)."""
    startup_problem: Exception | None = None
    """Why the server could not start (the ladder's Dask scheduler cannot be reached...), for
    :func:`arena.service.server.serve` to say in one line."""


def _remote(request: Request) -> str:
    return request.client.host if request.client is not None else "?"


def create_service_app(
    db: Database, settings: ServiceSettings, *, run_background: bool = True
) -> FastAPI:
    """The arena server over ``db``; the validator and (if enabled) the ladder run in the
    background while the app is served (``run_background=False``: neither starts)."""
    prefix = label_prefix(db.url, 0).removesuffix("t0-") + "arena-"
    service = Service(
        db=db,
        settings=settings,
        signer=Signer(settings.secret),
        writes=RateLimiter(settings.writes_per_minute),
        failures=RateLimiter(settings.auth_failures_per_minute),
        validator=Validator(db, settings, label_prefix=prefix),
        ladder=Ladder(db, settings, label_prefix=prefix) if settings.ladder.enabled else None,
        metrics=Metrics(),
        background=run_background,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if run_background:
            # A server killed with -9 may have left bot containers, socket directories and
            # cgroups (bwrap and plain bots die with it); remove those of dead runners only,
            # so another server on the same database keeps its bots.
            swept = sweep_leftovers(prefix)
            if swept:
                log.warning("removed %d sandbox(es) left over by a dead server", swept)
            resumed = service.validator.resume()
            if resumed:
                log.info("resuming %d validation(s) left pending", resumed)
            if service.ladder is not None:
                try:
                    service.ladder.start()
                except Exception as exc:
                    service.startup_problem = exc
                    raise
        try:
            yield
        finally:
            if service.ladder is not None and run_background:
                service.ladder.stop()
            service.validator.close()

    app = FastAPI(
        title="Kryt Arena",
        docs_url=None,  # FastAPI's page loads Swagger UI from a CDN: /api/docs is ours
        redoc_url=None,
        openapi_url="/api/openapi.json",
        lifespan=lifespan,
    )
    app.state.service = service

    @app.get("/api/docs", response_class=HTMLResponse, include_in_schema=False)
    def api_docs() -> str:
        return api_docs_page(app.openapi(), links=LINKS)

    @app.middleware("http")
    async def api_problems(request: Request, call_next: Callable[[Request], Any]) -> Response:
        """Any other error under /api/ (the mounted leaderboard's, an unknown route) becomes
        a problem document too."""
        response: Response = await call_next(request)
        if response.status_code < 400 or not request.url.path.startswith("/api/"):
            return response
        if response.headers.get("content-type", "").startswith(PROBLEM):
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[attr-defined]
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            data = None
        detail = _detail_of(data) or body.decode(errors="replace")[:500]
        if response.status_code == 500:  # the mounted app's "Internal Server Error"
            detail = INTERNAL_DETAIL
        return _problem_response(response.status_code, detail, response.headers)

    @app.middleware("http")
    async def malformed_ids(request: Request, call_next: Callable[[Request], Any]) -> Response:
        """A malformed id in a query parameter (``?tournament=abc``) is a 422 naming it."""
        for name in ID_QUERIES.get(request.url.path, ()):
            for value in request.query_params.getlist(name):
                # Not int(): it refuses more than 4,300 digits (an id too large is the
                # route's 404).
                if not (value.isascii() and value.isdigit() and value.strip("0")):
                    detail = f"query.{name}: must be a positive integer id, got {value[:40]!r}"
                    return _problem_response(422, detail, {})
        response: Response = await call_next(request)
        return response

    # HEAD as GET inside the edge, which counts it as the HEAD it was.
    app.add_middleware(HeadAsGet)
    # The outermost layer but Starlette's own (ServerErrorMiddleware, whose 500s would be
    # neither counted nor hardened): added last.
    app.add_middleware(Edge, metrics=service.metrics, body_timeout=settings.body_timeout_seconds)

    @app.exception_handler(StarletteHTTPException)
    async def http_problem(request: Request, exc: StarletteHTTPException) -> Response:
        if not request.url.path.startswith("/api/"):
            return await http_exception_handler(request, exc)
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no API route at {request.url.path}"
        return _problem_response(exc.status_code, detail, exc.headers or {})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        if not request.url.path.startswith("/api/"):
            return await request_validation_exception_handler(request, exc)
        return _problem_response(422, _detail_of({"detail": exc.errors()}), {})

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        """A bug in :class:`Edge` itself (which answers every other one): a problem document
        under /api/ too (the server logs the traceback)."""
        return _internal_error(request.url.path)

    @app.exception_handler(DatabaseUnavailableError)
    async def database_unavailable(request: Request, exc: DatabaseUnavailableError) -> Response:
        """The database cannot be read or written (gone, read-only, locked past the busy
        timeout): a 503 to retry later, not a 500; the reason stays in the server's log."""
        log.error("database unavailable for %s %s: %s", request.method, request.url.path, exc)
        return await problem(
            request,
            Problem(503, "Service unavailable", UNAVAILABLE_DETAIL, retry_after=30),
        )

    @app.exception_handler(Problem)
    async def problem(request: Request, exc: Problem) -> Response:
        headers = {"Retry-After": str(max(1, round(exc.retry_after)))} if exc.retry_after else {}
        if request.url.path.startswith("/api/"):
            return _problem_response(exc.status, exc.detail, headers, title=exc.title)
        html = render(
            "error.html", links=LINKS, title=exc.title, heading=exc.title, message=exc.detail
        )
        return HTMLResponse(html, status_code=exc.status, headers=headers)

    _add_operations(app, service)
    _add_api(app, service)
    _add_pages(app, service)
    leaderboard = create_leaderboard_app(db)
    _add_method_fallbacks(app, leaderboard)
    app.mount("/", leaderboard)
    fastapi_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _describe_problems(fastapi_openapi(), leaderboard.openapi())
        return app.openapi_schema or fastapi_openapi()

    app.openapi = openapi  # type: ignore[method-assign]
    return app


_PROBLEM_ANSWERS = {
    "4XX": "Refused: a problem document (RFC 9457: type, title, status, detail)",
    "5XX": "Failed on the server (the database unavailable, say): a problem document",
}


def _describe_problems(schema: dict[str, Any], leaderboard: dict[str, Any]) -> None:
    """Make the service's OpenAPI document (``schema``, changed in place) say what it
    serves: the mounted leaderboard's ``/api/`` operations are added, and every ``/api/``
    operation answers errors as problem documents (``4XX``, ``5XX``). FastAPI's own 422
    (its ``detail`` list) is dropped everywhere: the service never sends it."""
    paths = schema.setdefault("paths", {})
    for path, item in leaderboard.get("paths", {}).items():
        if path.startswith("/api/") and path not in paths:
            paths[path] = copy.deepcopy(item)  # the leaderboard keeps its own document
    problem = {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path, item in paths.items():
        for operation in item.values():
            responses = operation.setdefault("responses", {})
            for code in [c for c in responses if c != "2XX" and not c.startswith("2")]:
                del responses[code]  # FastAPI's 422, the leaderboard's {"error"} shapes
            if path.startswith("/api/"):
                for code, description in _PROBLEM_ANSWERS.items():
                    responses[code] = {"description": description, "content": problem}
    models = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        models.pop(name, None)
    models["Problem"] = {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
        },
        "required": ["type", "title", "status", "detail"],
    }


def _add_method_fallbacks(app: FastAPI, mounted: FastAPI) -> None:
    """For every path of ``app`` and of the app ``mounted`` at ``/``, answer every method
    none of its routes takes (``TRACE``, ``CONNECT`` and unknown ones too) with 405 and
    ``Allow`` (a problem document under /api/). Without it the mounted app, which matches
    every path, would answer them 404 "no page"."""
    allowed: dict[str, set[str]] = {}
    for route in [*app.router.routes, *mounted.router.routes]:
        if isinstance(route, Route) and route.methods:  # FastAPI's routes are Routes too
            allowed.setdefault(route.path, set()).update(route.methods)
    for path, methods in allowed.items():
        app.router.routes.append(_OtherMethods(path, methods))


class _OtherMethods(Route):
    """Every method but ``allowed`` on ``path``: a 405 with ``Allow``. The methods it takes
    match nothing here, so they reach the routes after it (the mounted app's)."""

    def __init__(self, path: str, allowed: set[str]) -> None:
        allow = allow_header(allowed)
        super().__init__(path, _method_not_allowed(allow), include_in_schema=False)
        self.methods = None  # any method (a function endpoint would take GET only)
        self.allowed = frozenset(allowed)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and scope.get("method") in self.allowed:
            return Match.NONE, {}
        return match, child


def _method_not_allowed(allow: str) -> Callable[[Request], Any]:
    async def not_allowed(request: Request) -> Response:
        detail = f"{request.method} is not allowed on {request.url.path}; allowed: {allow}"
        if request.url.path.startswith("/api/"):
            return _problem_response(405, detail, {"Allow": allow}, title="Method Not Allowed")
        title = "Method not allowed"
        html = render("error.html", links=LINKS, title=title, heading=title, message=detail)
        return HTMLResponse(html, status_code=405, headers={"Allow": allow})

    return not_allowed


def _internal_error(path: str) -> Response:
    """The answer to a bug: no traceback (the server logs it); a problem document under /api/."""
    if path.startswith("/api/"):
        return _problem_response(500, INTERNAL_DETAIL, {})
    return PlainTextResponse("Internal Server Error", status_code=500)


def _body_timeout(path: str, detail: str) -> Response:
    """The answer to a request whose body stopped arriving: 408, and the connection closed."""
    response: Response
    if path.startswith("/api/"):
        response = _problem_response(408, detail, {})
    else:
        title = "Request timeout"
        html = render("error.html", links=LINKS, title=title, heading=title, message=detail)
        response = HTMLResponse(html, status_code=408)
    response.headers["Connection"] = "close"
    return response


BOTH_LENGTHS = "the request has both Content-Length and Transfer-Encoding; send one of them"
"""The answer to a request that declares its body's length twice (RFC 9112, 6.1)."""

BODY_MIN_RATE = 500
"""Bytes a second a request body must average once its first ``body_timeout_seconds`` are
spent (as Apache's ``mod_reqtimeout`` does): a 5 MiB upload may take about three hours."""


class BodyTimeout(Exception):
    """A client stopped sending a request body (``ServiceSettings.body_timeout_seconds``)."""


class Edge:
    """The service's outermost layer (inside Starlette's ServerErrorMiddleware).

    - counts every answer for ``/metrics`` and adds :data:`HARDENING` to it;
    - answers an exception of any layer inside it (the service's routes and middleware, the
      mounted leaderboard app) with its own 500, logged with the traceback, so these are
      counted and hardened too; under /api/ a problem document;
    - waits at most ``body_timeout`` seconds for each piece of a request body, and for the
      whole body at :data:`BODY_MIN_RATE` bytes a second after its first ``body_timeout``
      seconds (uvicorn has no such limit: a client could hold a worker by stalling or
      trickling mid-body), then answers 408 and closes the connection.
    """

    def __init__(self, app: ASGIApp, *, metrics: Metrics, body_timeout: float) -> None:
        self.app = app
        self.metrics = metrics
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        lengths = {
            name.lower(): value.strip()
            for name, value in scope.get("headers", [])
            if name.lower() in (b"content-length", b"transfer-encoding")
        }
        if len(lengths) == 2:
            # A request smuggling signal (RFC 9112, 6.1): refused, and the connection closed
            # (h11 would read the body as chunked and keep the connection for the next one).
            response = _problem_response(400, BOTH_LENGTHS, {})
            response.headers["Connection"] = "close"
            await response(scope, receive, send)
            self.metrics.count(scope["method"], 400)
            return
        declared = lengths.get(b"content-length", b"0")
        has_body = b"transfer-encoding" in lengths or declared not in (b"", b"0")
        started = complete = timed_out = body_done = False

        loop = asyncio.get_running_loop()
        body_started = loop.time()
        body_bytes = 0
        timeout_detail = ""

        async def receive_in_time() -> Message:
            nonlocal timed_out, body_done, body_bytes, timeout_detail
            if body_done:  # after the body: waits for a disconnect, never timed
                return await receive()
            # Each piece within body_timeout, and the whole body at BODY_MIN_RATE after the
            # first body_timeout: a client trickling a byte now and then is stopped too.
            now = loop.time()
            overall = body_started + self.body_timeout + body_bytes / BODY_MIN_RATE - now
            wait = min(self.body_timeout, overall)
            try:
                if wait <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(receive(), wait)
            except TimeoutError:
                timed_out = True
                elapsed = loop.time() - body_started
                # One text for both limits: which one ran out first says little (a stall
                # right after the first piece meets both at about the same moment).
                timeout_detail = (
                    f"the request body stopped arriving or came too slowly: {body_bytes}"
                    f" bytes in {elapsed:.0f} s (each piece within {self.body_timeout:g} s,"
                    f" and at least {BODY_MIN_RATE} bytes a second after the first"
                    f" {self.body_timeout:g} s)"
                )
                raise BodyTimeout(timeout_detail) from None
            if message["type"] == "http.request":
                body_bytes += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def send_counted(message: Message) -> None:
            nonlocal started, complete
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in HARDENING:
                    headers.setdefault(name, value)
                if has_body and not body_done:
                    # Answered before the body was read (413, 429, 401...): the connection
                    # closes, else the server would go on reading and dropping the body.
                    headers["Connection"] = "close"
                self.metrics.count(scope["method"], int(message["status"]))
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                complete = True
            await send(message)

        path = str(scope.get("path", ""))
        try:
            await self.app(scope, receive_in_time, send_counted)
        except Exception as exc:
            if timed_out and not started:
                log.info("%s %s: %s; answered 408", scope["method"], path, exc)
                await _body_timeout(path, timeout_detail)(scope, receive, send_counted)
                return
            if started and not complete:
                raise  # the server closes the connection: the client sees a cut answer
            if isinstance(exc, ClientDisconnect) and not started:
                log.info("%s %s: the client left mid-request", scope["method"], path)
                return  # nobody to answer
            if not timed_out:
                log.error("internal error on %s %s", scope["method"], path, exc_info=exc)
            if not started:
                await _internal_error(path)(scope, receive, send_counted)


def _problem_response(
    status: int, detail: str, headers: Mapping[str, str], *, title: str = ""
) -> JSONResponse:
    """A problem document (RFC 9457); ``title`` defaults to the status's reason phrase."""
    if not title:
        try:
            title = HTTPStatus(status).phrase
        except ValueError:
            title = "Error"
    keep = {k: v for k, v in headers.items() if k.lower() in ("retry-after", "allow")}
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=keep)


def _detail_of(data: object) -> str:
    """The message of a JSON error body: ``{"error": ...}``, ``{"detail": ...}`` or the
    list of FastAPI's validation errors (``query.limit: Input should be ...``)."""
    if not isinstance(data, dict):
        return ""
    message = data.get("detail", data.get("error"))
    if isinstance(message, list):
        parts = []
        for item in message:
            if isinstance(item, dict):
                where = ".".join(str(x) for x in item.get("loc", ()))
                parts.append(f"{where}: {item.get('msg', '')}" if where else str(item.get("msg")))
        return "; ".join(parts)
    return "" if message is None else str(message)


# ---------------------------------------------------------------------------- authentication


def _authenticate(request: Request, service: Service, *, write: bool) -> Principal:
    """The principal of the bearer token, or a 401/429 problem (audited)."""
    remote = _remote(request)
    wait = service.failures.take(remote)
    if wait:
        raise Problem(429, "Too many requests", "too many refused credentials", retry_after=wait)
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    with service.failures.kept_if_refused(remote) as attempt:
        principal = None
        if scheme.lower() == "bearer" and secret.strip():
            with service.db.session() as session:
                principal = authenticate_token(secret.strip(), session=session)
                if principal is None:
                    audit(
                        "token", "refused", session=session, target=request.url.path, remote=remote
                    )
        if principal is None:
            attempt.refuse()
            detail = (
                "missing token: send Authorization: Bearer <token>"
                if not header
                else "invalid token (unknown, revoked or expired)"
            )
            raise Problem(401, "Unauthorized", detail)
    if write:
        wait = service.writes.take(f"token:{principal.token_id}")
        if wait:
            raise Problem(
                429, "Too many requests", "write rate limit of this token reached", retry_after=wait
            )
    return principal


def _owned_bot(name: str, principal_author: int, *, session: Session) -> Bot:
    """The bot called ``name`` when it belongs to the author; 404 / 403 otherwise."""
    # A name no bot can have (one with a NUL, which PostgreSQL cannot even compare) names none.
    bot = find_bot(name, session=session) if BOT_NAME_RE.fullmatch(name) else None
    if bot is None or bot.id is None:
        raise Problem(404, "Not found", f"no bot named {name[:80]!r}")
    if owner_of(bot.id, session=session) != principal_author:
        raise Problem(403, "Forbidden", f"bot {name!r} belongs to another author")
    return bot


def _submission_json(row: Submission, bot: str, check: SubmissionCheck | None) -> dict[str, Any]:
    return {
        "submission_id": row.id,
        "bot": bot,
        "version": row.version,
        "sha256": row.sha256,
        "status": row.status,
        "submitted_at": row.submitted_at.isoformat(),
        "check": None
        if check is None
        else {
            "status": check.status,
            "message": check.message,
            "games": [{k: v for k, v in g.items() if k != "log"} for g in check.games],
            "finished_at": None if check.finished_at is None else check.finished_at.isoformat(),
        },
    }


# ---------------------------------------------------------------------------- operations


def _add_operations(app: FastAPI, service: Service) -> None:
    @app.get("/health")
    def health() -> Response:
        limit = service.settings.max_upload_bytes  # kryt submit checks an archive against it
        try:
            problem = service.db.file_problem()  # first: the pool may hide a deleted file
            if problem is None:
                with service.db.read_session() as session:
                    session.exec(select(func.count()).select_from(Bot)).one()
                problem = _write_problem(service.db)
        except Exception as exc:
            problem = str(exc)
        if problem is not None:
            return JSONResponse(
                {"status": "unavailable", "database": problem, "max_upload_bytes": limit},
                status_code=503,
            )
        ladder = service.ladder
        return JSONResponse(
            {
                "status": "ok",
                "database": "ok",
                "ladder": None if ladder is None else {"running_series": ladder.running()},
                "max_upload_bytes": limit,
            }
        )

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics() -> str:
        lines = [
            "# HELP kryt_uptime_seconds Seconds since the server started.",
            "# TYPE kryt_uptime_seconds gauge",
            f"kryt_uptime_seconds {time.time() - service.metrics.started:.1f}",
            "# HELP kryt_http_requests_total HTTP requests answered, by method and status.",
            "# TYPE kryt_http_requests_total counter",
        ]
        with service.metrics.lock:
            for (method, status), n in sorted(service.metrics.requests.items()):
                lines.append(f'kryt_http_requests_total{{method="{method}",status="{status}"}} {n}')
        with service.db.read_session() as session:
            games = session.exec(
                select(func.count()).select_from(Game).where(col(Game.voided).is_(False))
            ).one()
            by_status = session.exec(
                select(Submission.status, func.count()).group_by(col(Submission.status))
            ).all()
            ladder_unfinished = len(ladder_series_ids(session=session, unfinished_only=True))
            entrants_n = len(entrants(session=session))
        lines += [
            "# HELP kryt_games_total Counted games in the database.",
            "# TYPE kryt_games_total gauge",
            f"kryt_games_total {games}",
            "# HELP kryt_submissions Submissions by status.",
            "# TYPE kryt_submissions gauge",
            *(f'kryt_submissions{{status="{s}"}} {n}' for s, n in sorted(by_status)),
            "# HELP kryt_ladder_unfinished_series Ladder series not finished.",
            "# TYPE kryt_ladder_unfinished_series gauge",
            f"kryt_ladder_unfinished_series {ladder_unfinished}",
            "# HELP kryt_ladder_entrants Bots on the ladder (latest active version each).",
            "# TYPE kryt_ladder_entrants gauge",
            f"kryt_ladder_entrants {entrants_n}",
        ]
        return "\n".join(lines) + "\n"


def _write_problem(db: Database) -> str | None:
    """Why the database cannot take writes now, or None; cheap enough for every ``/health``.

    SQLite (whose file the caller checked with ``Database.file_problem``): the file and its
    WAL files must be writable by this process, and the write lock obtainable within
    :data:`HEALTH_LOCK_WAIT_S` (``BEGIN IMMEDIATE``, rolled back at once: nothing is
    written). PostgreSQL: a write transaction must not be read-only (a standby,
    ``default_transaction_read_only``)."""
    if db.path is None:
        with db.session() as session:
            shown = session.connection().exec_driver_sql("SHOW transaction_read_only")
            read_only = shown.scalar()
        if read_only == "on":
            return (
                f"database {db.display_url} takes no writes: its transactions are read-only"
                " (a standby server, or default_transaction_read_only)"
            )
        return None
    for path in (db.path, *(db.path.with_name(db.path.name + end) for end in ("-wal", "-shm"))):
        if path.exists() and not os.access(path, os.W_OK):
            return (
                f"database file {path} is not writable by the server (permissions, the"
                " immutable flag or a read-only file system): writes fail"
            )
    raw = db.engine.raw_connection()
    try:
        cursor = raw.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={int(HEALTH_LOCK_WAIT_S * 1000)}")
            try:
                cursor.execute("BEGIN IMMEDIATE")
                cursor.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return (
                        f"database {db.display_url} takes no writes: another writer has held"
                        f" its lock for over {HEALTH_LOCK_WAIT_S:g} s ({exc})"
                    )
                return f"database {db.display_url} takes no writes: {exc}"
            finally:
                cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        finally:
            cursor.close()
    finally:
        raw.close()
    return None


# ---------------------------------------------------------------------------- JSON API


async def _read_body(request: Request, limit: int, what: str = "uploads") -> bytes:
    """The request body, or a 413 saying ``{what} are limited to {limit} bytes`` once it is (or
    its ``Content-Length`` says it is) larger."""
    too_large = Problem(413, "Payload too large", f"{what} are limited to {limit} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and (
        not (declared.isascii() and declared.isdigit()) or int(declared) > limit
    ):
        raise too_large
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _add_api(app: FastAPI, service: Service) -> None:
    db = service.db

    @app.get("/api/me")
    def me(request: Request) -> dict[str, Any]:
        principal = _authenticate(request, service, write=False)
        with db.read_session() as session:
            bots = [b.name for b in bots_of_author(principal.author_id, session=session)]
        return {"author": principal.author_name, "bots": bots}

    @app.post("/api/submissions", status_code=202)
    async def upload(request: Request) -> JSONResponse:
        # Everything but reading the body blocks (database, unpacking, hashing, copying):
        # it runs in worker threads so the server answers other requests meanwhile.
        principal = await run_in_threadpool(_authenticate, request, service, write=True)
        data = await _read_body(request, service.settings.max_upload_bytes)
        # A hint for messages only (never a path); ``kryt submit`` percent-encodes it.
        filename = urllib.parse.unquote(request.headers.get(FILENAME_HEADER, "upload"))
        content_type = request.headers.get("content-type", "")
        return await run_in_threadpool(
            _store_upload, service, data, filename, principal, _remote(request), content_type
        )

    @app.get("/api/submissions")
    def my_submissions(request: Request) -> dict[str, Any]:
        principal = _authenticate(request, service, write=False)
        with db.read_session() as session:
            out = []
            for bot in bots_of_author(principal.author_id, session=session):
                for row in list_submissions(session=session, bot_name=bot.name):
                    assert row.id is not None
                    out.append(_submission_json(row, bot.name, get_check(row.id, session=session)))
        return {"submissions": out}

    @app.get("/api/submissions/{submission_id}")
    def one_submission(submission_id: str, request: Request) -> dict[str, Any]:
        principal = _authenticate(request, service, write=False)
        try:
            sid = parse_id(submission_id, "submission")
        except PageNotFoundError:
            raise Problem(404, "Not found", f"no submission {submission_id[:40]!r}") from None
        with db.read_session() as session:
            try:
                row = get_submission(sid, session=session)
            except NotFoundError:
                raise Problem(404, "Not found", f"no submission {submission_id}") from None
            bot = session.get(Bot, row.bot_id)
            assert bot is not None and bot.id is not None
            if owner_of(bot.id, session=session) != principal.author_id:
                raise Problem(403, "Forbidden", f"submission {submission_id} is another author's")
            return _submission_json(row, bot.name, get_check(sid, session=session))

    @app.post("/api/bots/{name}/retire")
    def retire(name: str, request: Request) -> dict[str, Any]:
        principal = _authenticate(request, service, write=True)
        return _retire(service, name, principal, _remote(request))

    @app.get("/api/bots/{name}/logs")
    def bot_logs(name: str, request: Request, limit: int = 50) -> dict[str, Any]:
        principal = _authenticate(request, service, write=False)
        problem: Problem | None = None
        owned = ""
        with db.read_session() as session:
            try:
                owned = _owned_bot(name, principal.author_id, session=session).name
            except Problem as refused:
                problem = refused
        if problem is not None:
            _audit_refusal(service, "logs", name, principal, _remote(request))
            raise problem
        with db.read_session() as session:
            ids = [s.id for s in list_submissions(session=session, bot_name=owned) if s.id]
            rows = logs_of_submissions(ids, session=session, limit=max(1, min(limit, 500)))
            return {
                "bot": owned,
                "logs": [
                    {
                        "game_id": g.id,
                        "seat": entry.seat,
                        "submission_id": entry.submission_id,
                        "end_reason": g.end_reason,
                        "forfeit": g.forfeit_seat == entry.seat,
                        "forfeit_detail": g.forfeit_detail
                        if g.forfeit_seat == entry.seat
                        else None,
                        "truncated": entry.truncated,
                        "text": entry.text,
                    }
                    for entry, g in rows
                ],
            }

    @app.post("/api/register", status_code=201)
    async def register(request: Request) -> JSONResponse:
        body = await _read_body(request, 16 * 1024, "registration requests")
        fields = _json_body(body)
        if not isinstance(fields, dict) or not all(
            isinstance(fields.get(k, ""), str) for k in ("invite", "name", "password")
        ):
            raise Problem(
                422, "Invalid registration", 'send JSON {"invite": .., "name": .., "password": ..}'
            )
        done = await run_in_threadpool(_register, service, fields, _remote(request))
        return JSONResponse(
            {"author": done.name, "token": done.token, "expires_at": done.expires_at},
            status_code=201,
            headers={"Cache-Control": "no-store"},
        )

    @app.get("/api/ladder")
    def ladder_state() -> dict[str, Any]:
        with db.read_session() as session:
            unfinished = ladder_series_ids(session=session, unfinished_only=True)
            players = entrants(session=session)
        ladder = service.ladder
        return {
            "enabled": ladder is not None,
            "entrants": players,
            "unfinished_series": unfinished,
            "games_per_series": service.settings.ladder.games_per_series,
            "budget_games": service.settings.ladder.budget_games,
        }


def _json_body(body: bytes) -> Any:
    """The JSON of a request body (empty: ``{}``), or None when it is not JSON: malformed,
    not UTF-8, or nested too deeply for the parser (a RecursionError, never a 500)."""
    try:
        return json.loads(body or b"{}")
    except (ValueError, RecursionError):
        return None


def _store_upload(
    service: Service,
    data: bytes,
    filename: str,
    principal: Principal,
    remote: str,
    content_type: str = "",
) -> JSONResponse:
    """Validate and store an upload (blocking: run it in a worker thread); the answer of
    ``POST /api/submissions`` or a problem (audited)."""
    db = service.db
    try:
        accepted = accept_upload(
            data,
            filename,
            principal,
            db=db,
            settings=service.settings,
            remote=remote,
            content_type=content_type,
        )
    except ForbiddenError as exc:
        raise Problem(403, "Forbidden", str(exc)) from None
    except StoreUnavailableError as exc:
        raise Problem(
            503, "Service unavailable", f"{exc}; try again later", retry_after=30
        ) from None
    except UploadError as exc:
        with db.session() as session:
            audit(
                "submit",
                "invalid",
                session=session,
                author_id=principal.author_id,
                token_id=principal.token_id,
                target=filename,
                detail=str(exc),
                remote=remote,
            )
        title = "Conflict" if exc.status == 409 else "Invalid submission"
        raise Problem(exc.status, title, str(exc)) from None
    if (accepted.created or accepted.revalidate) and service.background:
        service.validator.enqueue(accepted.submission_id)
    with db.read_session() as session:
        row = get_submission(accepted.submission_id, session=session)
        body = _submission_json(
            row, accepted.bot, get_check(accepted.submission_id, session=session)
        )
    body["created"] = accepted.created
    return JSONResponse(body, status_code=202 if accepted.created else 200)


def _audit_refusal(
    service: Service, action: str, name: str, principal: Principal, remote: str
) -> None:
    """Audit ``action`` refused on bot ``name`` (not the caller's, or none such), in a
    transaction of its own: the refused request's is rolled back with its error."""
    with service.db.session() as session:
        audit(
            action,
            "forbidden",
            session=session,
            author_id=principal.author_id,
            token_id=principal.token_id,
            target=name[:200],
            remote=remote,
        )


def _retire(service: Service, name: str, principal: Principal, remote: str) -> dict[str, Any]:
    problem: Problem | None = None
    retired: list[str] = []
    with service.db.session() as session:
        try:
            bot = _owned_bot(name, principal.author_id, session=session)
        except Problem as refused:
            problem = refused
        else:
            for row in list_submissions(session=session, bot_name=bot.name):
                if row.status in (SubmissionStatus.ACTIVE.value, SubmissionStatus.PENDING.value):
                    assert row.id is not None
                    set_submission_status(row.id, SubmissionStatus.RETIRED, session=session)
                    retired.append(row.version)
            audit(
                "retire",
                "ok",
                session=session,
                author_id=principal.author_id,
                token_id=principal.token_id,
                target=bot.name,
                detail=", ".join(retired),
                remote=remote,
            )
    if problem is not None:
        _audit_refusal(service, "retire", name, principal, remote)
        raise problem
    return {"bot": name, "retired": retired}


# ---------------------------------------------------------------------------- registration


@dataclass(frozen=True, slots=True)
class Registered:
    """An author who registered with an invite, and their first token (shown once)."""

    author_id: int
    name: str
    token: str
    expires_at: str
    token_id: int


def _register(service: Service, fields: dict[str, str], remote: str) -> Registered:
    """Spend an invite code on a new author; a problem (audited) when anything is wrong.

    Refused codes count against the caller's address like refused tokens; a taken or
    malformed name or a bad password leaves the code unused (the transaction rolls back).
    """
    wait = service.failures.take(remote)
    if wait:
        raise Problem(429, "Too many requests", "too many refused invite codes", retry_after=wait)
    code = fields.get("invite", "").strip()
    name = fields.get("name", "").strip()
    with service.failures.kept_if_refused(remote) as attempt:  # kept for a refused code only
        try:
            password_hash = hash_password(fields.get("password", ""))
        except PasswordError as exc:
            raise Problem(422, "Invalid registration", str(exc)) from None
        lifetime = timedelta(days=service.settings.token_days)
        try:
            with service.db.session() as session:
                author, token = redeem_invite(
                    code,
                    name,
                    session=session,
                    password_hash=password_hash,
                    token_lifetime=lifetime,
                )
                assert author.id is not None
                audit(
                    "register",
                    "ok",
                    session=session,
                    author_id=author.id,
                    token_id=token.token_id,
                    target=name,
                    remote=remote,
                )
                return Registered(
                    author.id, name, token.secret, token.expires_at.isoformat(), token.token_id
                )
        except InviteError as exc:
            attempt.refuse()
            outcome, detail = "refused", str(exc)
            problem = Problem(403, "Forbidden", detail)
        except ConflictError as exc:
            outcome, detail = "conflict", str(exc)
            problem = Problem(409, "Conflict", detail)
        except InvalidRecordError as exc:
            outcome, detail = "invalid", str(exc)
            problem = Problem(422, "Invalid registration", detail)
        with service.db.session() as session:
            audit(
                "register", outcome, session=session, target=name[:40], detail=detail, remote=remote
            )
        raise problem


# ---------------------------------------------------------------------------- pages


#: Fields a posted form may have (ours have at most four).
MAX_FORM_FIELDS = 20


def _form(body: bytes) -> dict[str, str]:
    """A posted form's fields (the first value of each); 400 for more than
    :data:`MAX_FORM_FIELDS` fields."""
    try:
        parsed = parse_qs(
            body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS
        )
    except ValueError:  # parse_qs's "Max number of fields exceeded"
        raise Problem(400, "Bad request", f"a form has at most {MAX_FORM_FIELDS} fields") from None
    return {k: v[0] for k, v in parsed.items()}


def _add_pages(app: FastAPI, service: Service) -> None:
    db = service.db
    signer = service.signer
    secure = service.settings.secure_cookies

    def session_principal(request: Request) -> Principal | None:
        """Who the session cookie signs in (blocking: it reads the database), or None.

        The cookie is bound to the credential it was made from; that credential must still
        be good on every request: the token not revoked or expired, the password unchanged,
        the author not disabled."""
        claim = signer.claim(request.cookies.get(SESSION_COOKIE))
        if claim is None:
            return None
        with db.read_session() as session:
            author = session.get(Author, claim.author_id)
            if author is None or author.id is None or author.disabled:
                return None
            if claim.token_id:
                token = session.get(ApiToken, claim.token_id)
                if (
                    token is None
                    or token.author_id != author.id
                    or token.revoked_at is not None
                    or token.expires_at <= utcnow()
                ):
                    return None
                credential = token_credential(token.token_hash)
            elif author.password_hash is not None:
                credential = password_credential(author.password_hash)
            else:
                return None
            if not signer.session_valid(claim, credential):
                return None
            return Principal(author.id, author.name, claim.token_id or None)

    def session_author(request: Request) -> int | None:
        principal = session_principal(request)
        return None if principal is None else principal.author_id

    def session_cookie(author_id: int, token_id: int | None, credential: str) -> str:
        return signer.session(
            author_id,
            service.settings.session_hours * 3600,
            token_id=token_id,
            credential=credential,
        )

    def csrf_binding(request: Request) -> str | None:
        return request.cookies.get(SESSION_COOKIE) or request.cookies.get(CSRF_COOKIE)

    def audit_form(outcome: str, author_id: int | None, target: str, request: Request) -> None:
        with db.session() as session:
            audit(
                "form",
                outcome,
                session=session,
                author_id=author_id,
                target=target,
                remote=_remote(request),
            )

    async def checked_form(request: Request) -> dict[str, str]:
        """The posted form, when its CSRF token matches the caller's cookie; else 403."""
        body = await _read_body(request, 64 * 1024, "forms")
        form = _form(body)
        if not signer.csrf_ok(csrf_binding(request), form.get("csrf")):
            author_id = await run_in_threadpool(session_author, request)
            await run_in_threadpool(
                audit_form, "csrf refused", author_id, request.url.path, request
            )
            raise Problem(
                403, "Forbidden", "the form's CSRF token is missing or wrong; reload the page"
            )
        return form

    @app.get("/login", response_class=HTMLResponse)
    def login_form(request: Request) -> Response:
        binding = request.cookies.get(CSRF_COOKIE)
        fresh = not binding
        binding = binding or secrets.token_urlsafe(24)
        html = render(
            "login.html", links=LINKS, title="Sign in", csrf=signer.csrf_for(binding), error=""
        )
        response = HTMLResponse(html)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE, binding, httponly=True, samesite="strict", secure=secure
            )
        return response

    @app.post("/login")
    async def login(request: Request) -> Response:
        remote = _remote(request)
        wait = service.failures.blocked(remote)
        if wait:
            raise Problem(429, "Too many requests", "too many failed sign-ins", retry_after=wait)
        body = await _read_body(request, 16 * 1024, "forms")
        form = _form(body)
        if not signer.csrf_ok(request.cookies.get(CSRF_COOKIE), form.get("csrf")):
            raise Problem(
                403, "Forbidden", "the form's CSRF token is missing or wrong; reload the page"
            )
        wait = service.failures.take(remote)
        if wait:
            raise Problem(429, "Too many requests", "too many failed sign-ins", retry_after=wait)
        with service.failures.kept_if_refused(remote) as attempt:
            # Blocking (database, the slow password hash): in a worker thread.
            response = await run_in_threadpool(sign_in, request, form, remote)
            if response.status_code == 401:
                attempt.refuse()
            return response

    def sign_in(request: Request, form: dict[str, str], remote: str) -> Response:
        """Check the name and password (or token) of the sign-in form; audited."""
        author_id: int | None = None
        token_id: int | None = None
        credential = ""
        with db.session() as session:
            token = form.get("token", "").strip()
            if token:
                principal = authenticate_token(token, session=session)
                if principal is not None:
                    author_id, token_id = principal.author_id, principal.token_id
                    credential = token_credential(hash_token(token))
            else:
                author = find_author(form.get("name", "").strip(), session=session)
                if (
                    author is not None
                    and not author.disabled
                    and author.password_hash is not None
                    and verify_password(author.password_hash, form.get("password", ""))
                ):
                    author_id = author.id
                    credential = password_credential(author.password_hash)
            audit(
                "login",
                "ok" if author_id is not None else "refused",
                session=session,
                author_id=author_id,
                target=form.get("name", "")[:40] if not token else "token",
                remote=remote,
            )
        if author_id is None:
            binding = request.cookies.get(CSRF_COOKIE) or ""
            html = render(
                "login.html",
                links=LINKS,
                title="Sign in",
                csrf=signer.csrf_for(binding),
                error="Wrong name, password or token.",
            )
            return HTMLResponse(html, status_code=401)
        response = RedirectResponse("/me", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            session_cookie(author_id, token_id, credential),
            max_age=service.settings.session_hours * 3600,
            httponly=True,
            samesite="strict",
            secure=secure,
        )
        return response

    def register_page(request: Request, *, error: str = "", status: int = 200) -> Response:
        binding = request.cookies.get(CSRF_COOKIE)
        fresh = not binding
        binding = binding or secrets.token_urlsafe(24)
        html = render(
            "register.html",
            links=LINKS,
            title="Register",
            csrf=signer.csrf_for(binding),
            error=error,
            token="",
            name="",
        )
        response = HTMLResponse(html, status_code=status)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE, binding, httponly=True, samesite="strict", secure=secure
            )
        return response

    @app.get("/register", response_class=HTMLResponse)
    def register_form(request: Request) -> Response:
        return register_page(request)

    @app.post("/register")
    async def register_post(request: Request) -> Response:
        body = await _read_body(request, 16 * 1024, "forms")
        form = _form(body)
        if not signer.csrf_ok(request.cookies.get(CSRF_COOKIE), form.get("csrf")):
            raise Problem(
                403, "Forbidden", "the form's CSRF token is missing or wrong; reload the page"
            )
        try:
            done = await run_in_threadpool(_register, service, form, _remote(request))
        except Problem as exc:
            if exc.status == 429:
                raise
            return register_page(request, error=exc.detail, status=exc.status)
        html = render(
            "register.html",
            links=LINKS,
            title="Registered",
            csrf="",
            error="",
            token=done.token,
            name=done.name,
        )
        response = HTMLResponse(html, status_code=201)
        response.headers["Cache-Control"] = "no-store"  # the page holds a secret
        response.set_cookie(
            SESSION_COOKIE,
            session_cookie(done.author_id, done.token_id, token_credential(hash_token(done.token))),
            max_age=service.settings.session_hours * 3600,
            httponly=True,
            samesite="strict",
            secure=secure,
        )
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        await checked_form(request)
        # Only a session that is still good is remembered as ended (anyone can make up a
        # cookie and get a CSRF token for it: that must not fill the memory).
        claim = signer.claim(request.cookies.get(SESSION_COOKIE))
        if claim is not None and await run_in_threadpool(session_author, request) is not None:
            signer.end(claim)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @app.get("/me", response_class=HTMLResponse)
    def my_page(request: Request) -> Response:
        author_id = session_author(request)
        if author_id is None:
            return RedirectResponse("/login", status_code=303)
        with db.read_session() as session:
            author = session.get(Author, author_id)
            if author is None or author.disabled:
                return RedirectResponse("/login", status_code=303)
            bots = bots_of_author(author_id, session=session)
            versions: dict[str, list[Submission]] = {
                b.name: list_submissions(session=session, bot_name=b.name) for b in bots
            }
            ids = [s.id for rows in versions.values() for s in rows if s.id is not None]
            logs = logs_of_submissions(ids, session=session, limit=100)
            checks = checks_of_author(author_id, session=session)
            labels = {s.id: (name, s.version) for name, rows in versions.items() for s in rows}
            html = render(
                "author.html",
                links=LINKS,
                title=f"{author.name}: my bots",
                author=author,
                bots=bots,
                versions=versions,
                checks=checks,
                logs=logs,
                labels=labels,
                csrf=signer.csrf_for(request.cookies.get(SESSION_COOKIE, "")),
            )
        return HTMLResponse(html)

    @app.post("/me/bots/{name}/retire")
    async def retire_form(name: str, request: Request) -> Response:
        if await run_in_threadpool(session_author, request) is None:
            raise Problem(401, "Unauthorized", "sign in first")
        await checked_form(request)
        await run_in_threadpool(retire_signed_in, request, name, _remote(request))
        return RedirectResponse("/me", status_code=303)

    def retire_signed_in(request: Request, name: str, remote: str) -> None:
        principal = session_principal(request)  # still good after reading the form
        if principal is None:
            raise Problem(401, "Unauthorized", "sign in first")
        _retire(service, name, principal, remote)
