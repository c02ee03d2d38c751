"""uvicorn's HTTP/1.1 protocol with a deadline on a request's headers.

uvicorn (h11) has none: a connection that sends nothing, or trickles its request line and
headers a byte at a time, is held open for ever, and enough of them exhaust the server's
file descriptors. Here a client gets ``header_timeout`` seconds from connecting (or from the
end of the previous response on a kept-alive connection) to complete a request's headers.
Past it the connection is closed: with a 408 when part of a request had arrived (as
Apache's ``mod_reqtimeout`` and nginx's ``client_header_timeout`` do), silently when nothing
had (an idle connection may be closed at any time). The body has its own limits
(``arena.service.app.Edge``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "HEADER_TIMEOUT_TEXT",
    "HeaderDeadlineProtocol",
    "header_deadline_protocol",
]

DEFAULT_HEADER_TIMEOUT = 30.0
"""Seconds a client has to complete a request's headers (``kryt leaderboard serve``; the arena
server's is ``ServiceSettings.header_timeout_seconds``)."""
HEADER_TIMEOUT_TEXT = "the request's headers did not arrive in time"


def _timeout_response() -> bytes:
    body = f"Request timeout: {HEADER_TIMEOUT_TEXT}.\n".encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\n"
        "content-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class HeaderDeadlineProtocol(H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request headers are late."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._answered: object = None  # the request cycle whose headers completed last
        self._partial = False  # bytes of the next request have arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._header_deadline is not None and data:
            self._partial = True
        super().data_received(data)
        self._note_headers()

    def on_response_complete(self) -> None:
        # Armed first: finishing a response may start a pipelined request at once, whose
        # headers are then complete already (noted just after).
        self._arm()
        super().on_response_complete()
        if self.transport.is_closing():
            self._disarm()
        else:
            self._note_headers()
            # The start of a pipelined request that came with the last one waits in h11's
            # buffer, not in a later data_received: it is part of a request all the same.
            if self._header_deadline is not None and self.conn.trailing_data[0]:
                self._partial = True

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._partial = False
        self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _note_headers(self) -> None:
        """A new request cycle means a request's headers are complete: no deadline now."""
        if self.cycle is not None and self.cycle is not self._answered:
            self._answered = self.cycle
            self._disarm()

    def _headers_late(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing():
            return
        if self._partial:
            self.transport.write(_timeout_response())
        self.transport.close()


def header_deadline_protocol(seconds: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class for ``uvicorn.Config(http=...)`` with this header deadline."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout": seconds})
