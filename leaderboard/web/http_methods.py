"""HEAD answered wherever GET is, and the ``Allow`` header of a 405 saying so.

FastAPI's routes take only the methods they are declared with, so ``HEAD /`` would be a 405
though ``GET /`` works; RFC 9110 (9.1) asks a server to support HEAD wherever it supports
GET, with the same headers and no body. The middleware answers a HEAD as the GET it mirrors
and drops the body, so no route needs declaring twice.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    """ASGI middleware: a ``HEAD`` request is served as ``GET``, its body left out (the
    headers, ``Content-Length`` included, are those of the GET)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] != "http.response.body":
                await send(message)
            elif not message.get("more_body", False):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app({**scope, "method": "GET"}, receive, headers_only)


def allow_header(methods: set[str] | frozenset[str]) -> str:
    """The ``Allow`` value for a resource taking ``methods``: HEAD too wherever GET is."""
    allowed = set(methods)
    if "GET" in allowed:
        allowed.add("HEAD")
    return ", ".join(sorted(allowed))
