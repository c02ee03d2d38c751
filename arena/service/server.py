"""Running the arena server (uvicorn) and the client side of its API (upload, list).

The client uses only the standard library (``urllib``) so ``kryt submit --server`` works
from an author's machine without the server's dependencies.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import stat
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.db import Database
from arena.service.settings import ServiceSettings

log = logging.getLogger(__name__)

TOKEN_ENV = "KRYT_TOKEN"
TOKEN_FILE = Path("~/.config/kryt/token")


class ServeError(RuntimeError):
    """The server cannot start: its address cannot be listened on (``unavailable``) or its
    port file cannot be written. The message is one line."""

    def __init__(self, message: str, *, unavailable: bool, hint: str | None = None) -> None:
        super().__init__(message)
        self.unavailable = unavailable
        self.hint = hint
        """What to do about it, when it is not the address (None: choose another one)."""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: any free port), or :class:`ServeError`."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, OverflowError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ServeError(f"cannot listen on {host}:{port}: {reason}", unavailable=True) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise ServeError(f"cannot listen on {host}:{port}: {reason}", unavailable=True) from None
    return sock


def serve(
    db: Database,
    settings: ServiceSettings,
    *,
    port_file: Path | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve until interrupted; prints (and optionally writes) the address it listens on.
    :class:`ServeError` (before serving) when the address or the port file is unusable.
    ``sock``: bound already by :func:`listen` (so that a command line refuses an unusable
    address before it opens, and so creates, a database); closed at the end.

    A SQLite database that opening it created (no file was at its path: a wrong path, or
    the arena's file deleted or moved) is said in the log before anything else: the server
    starts on it, empty."""
    import uvicorn

    from arena.service.app import create_service_app
    from arena.service.http_protocol import header_deadline_protocol
    from sandbox.death import printable

    if db.created:
        log.warning(
            "created a new, empty database at %s: there was no file at that path. If this"
            " arena has a database, stop the server and point KRYT_DATABASE_URL (or"
            " --database) at it, or restore it from a backup",
            printable(str(db.path)),
        )
    if sock is None:
        sock = listen(settings.host, settings.port)
    try:
        port = sock.getsockname()[1]
        if port_file is not None:
            try:
                port_file.write_text(str(port))
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise ServeError(
                    f"cannot write the port file {port_file}: {reason}", unavailable=False
                ) from None
        app = create_service_app(db, settings)
        config = uvicorn.Config(
            app,
            http=header_deadline_protocol(settings.header_timeout_seconds),
            log_level="warning",
            proxy_headers=True,
            forwarded_allow_ips="127.0.0.1,::1",  # a proxy on either loopback
        )
        server = uvicorn.Server(config)
        shown = f"[{settings.host}]" if ":" in settings.host else settings.host
        print(f"kryt arena listening on http://{shown}:{port}", flush=True)
        service = app.state.service
        # A failed start is said once, below: not also as uvicorn's traceback of it.
        uvicorn_log = logging.getLogger("uvicorn.error")
        quiet = _Quiet(lambda: service.startup_problem is not None)
        uvicorn_log.addFilter(quiet)
        try:
            server.run(sockets=[sock])
        except SystemExit:  # uvicorn's exit when the application did not start
            if service.startup_problem is None:
                raise
            raise _startup_error(service.startup_problem) from None
        finally:
            uvicorn_log.removeFilter(quiet)
    finally:
        sock.close()


class _Quiet(logging.Filter):
    """Drops every record once ``muted()`` says so."""

    def __init__(self, muted: Callable[[], bool]) -> None:
        super().__init__()
        self.muted = muted

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.muted()


def _startup_error(problem: Exception) -> ServeError:
    """The one-line :class:`ServeError` of what kept the application from starting."""
    first = str(problem).strip().splitlines()
    message = f"the server could not start: {first[0] if first else type(problem).__name__}"
    dask_executor = sys.modules.get("arena.tournament.dask_executor")
    if dask_executor is not None:
        hint = "check --scheduler (or KRYT_ARENA_LADDER_SCHEDULER); see docs/scaling.md"
        if isinstance(problem, dask_executor.SchedulerUnavailableError):
            return ServeError(message, unavailable=True, hint=hint)
        if isinstance(problem, dask_executor.DaskExecutorError):
            return ServeError(message, unavailable=False, hint=hint)
    return ServeError(message, unavailable=True, hint="see the server's log above")


class ClientError(RuntimeError):
    """The server refused a request or could not be reached (the message says why)."""


class ServerUnreachableError(ClientError):
    """No answer came from the server (refused, reset, timed out, no such host): the
    request may be worth retrying later, unlike a refusal."""


_NOT_OURS = "the answer is not what a Kryt Arena server sends (is this the arena's URL?)"
_SUBMISSION_FIELDS = {"submission_id": int, "bot": str, "version": str, "status": str}


def _submission(data: Any, url: str) -> dict[str, Any]:
    """``data`` if it has the shape of a submission document (``_submission_json`` in
    arena/service/app.py), else :class:`ClientError`: what a command shows of it is there."""
    if not isinstance(data, dict) or any(
        type(data.get(k)) is not t for k, t in _SUBMISSION_FIELDS.items()
    ):
        raise ClientError(f"{url}: {_NOT_OURS}")
    check = data.get("check")
    if check is not None and not (
        isinstance(check, dict)
        and isinstance(check.get("status", ""), str)
        and isinstance(check.get("message", ""), str)
    ):
        raise ClientError(f"{url}: {_NOT_OURS}")
    return data


def read_token(environ: dict[str, str] | None = None, path: Path = TOKEN_FILE) -> str:
    """The API token: ``$KRYT_TOKEN``, else the token file, which must be private (0600)."""
    env = os.environ if environ is None else environ
    token = env.get(TOKEN_ENV, "").strip()
    if token:
        return _well_formed(token, f"${TOKEN_ENV}")
    file = path.expanduser()
    if not file.is_file():
        raise ClientError(
            f"no API token: set {TOKEN_ENV} or write it to {file} (chmod 600); ask the organiser"
        )
    mode = stat.S_IMODE(file.stat().st_mode)
    if mode & 0o077:
        raise ClientError(
            f"{file} is readable by others (mode {mode:o}); run `chmod 600 {file}` first"
        )
    try:
        text = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientError(f"cannot read the API token in {file}: {exc}") from None
    return _well_formed(text, str(file))


_TOKEN_CHARS = re.compile(r"[!-~]+")
"""What a token the server issues is made of: printable ASCII, no space (an HTTP header
holds it; a line break there would add a header of the sender's choosing)."""


def _well_formed(token: str, where: str) -> str:
    """``token``, or a ClientError saying the one at ``where`` cannot be a token (a second
    line, a space, a character a copy and paste brought along such as a curly quote)."""
    if _TOKEN_CHARS.fullmatch(token):
        return token
    bad = next(char for char in token if not _TOKEN_CHARS.fullmatch(char))
    raise ClientError(
        f"the API token in {where} is malformed: it holds {bad!a}, and a token is one"
        " word of printable ASCII; copy it again from the page that issued it"
    )


@dataclass(frozen=True, slots=True)
class Client:
    """A small client of the arena server's JSON API."""

    base_url: str
    token: str
    timeout: float = 120.0

    def __post_init__(self) -> None:
        _well_formed(self.token, "the client")  # never sent: a header would carry it

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """One API call; a problem document becomes a :class:`ClientError`."""
        url = self._url(path)
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as exc:
            try:
                problem = json.loads(exc.read() or b"{}")
                detail = problem.get("detail") or problem.get("error") or exc.reason
            except ValueError:
                detail = exc.reason
            raise ClientError(f"{url}: {exc.code} {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ServerUnreachableError(f"cannot reach {url}: {exc}") from None
        try:
            data = json.loads(answer or b"{}")
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
            data = None
        if not isinstance(data, dict):
            raise ClientError(f"{url}: {_NOT_OURS}")
        return data

    def upload(self, archive: bytes, filename: str) -> dict[str, Any]:
        """Upload a submission archive; the stored version and its check. The file name is
        percent-encoded: a header holds Latin-1 only (``бот.zip``) and no line breaks."""
        answer = self.request(
            "POST",
            "/api/submissions",
            archive,
            {
                "Content-Type": "application/octet-stream",
                "X-Kryt-Filename": urllib.parse.quote(filename, safe=""),
            },
        )
        return _submission(answer, self._url("/api/submissions"))

    def submissions(self) -> list[dict[str, Any]]:
        """The caller's submissions, as the server lists them: a row that is not an object
        comes back empty (a listing shows what it has of each)."""
        rows = self.request("GET", "/api/submissions").get("submissions", [])
        if not isinstance(rows, list):
            raise ClientError(f"{self._url('/api/submissions')}: {_NOT_OURS}")
        return [row if isinstance(row, dict) else {} for row in rows]

    def _url(self, path: str) -> str:
        return self.base_url.rstrip("/") + path

    def wait(self, submission_id: int, *, timeout: float = 600.0) -> dict[str, Any]:
        """Poll a submission until its check is finished (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            path = f"/api/submissions/{submission_id}"
            data = _submission(self.request("GET", path), self._url(path))
            check = data.get("check")
            if check is None or check.get("status") != "pending":
                return data
            if time.monotonic() > deadline:
                return data
            time.sleep(1.0)


def archive_of(path: Path) -> tuple[bytes, str]:
    """The bytes to upload for a bot folder (packed as .tar.gz) or an archive file."""
    if path.is_dir():
        from arena.tournament.store import pack
        from sandbox import load_submission

        return pack(load_submission(path)), f"{path.name}.tar.gz"
    if not path.is_file():
        raise ClientError(f"{path} is neither a bot folder nor an archive")
    return path.read_bytes(), path.name


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use `kryt arena serve`")
