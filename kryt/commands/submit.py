"""``kryt submit PATH``: validate a bot and store it as a new immutable version, locally or,
with ``--server URL``, on an arena server (which validates it again and plays it)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated, Any

import typer

from kryt.errors import ExitCode, UserError
from kryt.options import DatabaseOption, open_db


def submit(
    path: Annotated[Path, typer.Argument(help="Bot folder or .zip/.tar.gz archive with bot.toml.")],
    by: Annotated[
        str | None, typer.Option("--by", help="Who submits (default: your user).")
    ] = None,
    database: DatabaseOption = None,
    store: Annotated[
        Path | None,
        typer.Option(
            help="Where unpacked bot submissions are kept \\[default: .kryt/submissions].",
            show_default=False,
        ),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            envvar="KRYT_SERVER",
            help="Upload to this arena server (token: $KRYT_TOKEN or ~/.config/kryt/token).",
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option(help="With --server: wait for the validation games' verdict.")
    ] = True,
) -> None:
    """Validate the bot (manifest, paths, size, Python sources compile) and store it; nothing
    is stored if it is bad. With --server, upload it to an arena server instead."""
    import tempfile

    from sandbox import load_submission
    from sandbox.source_check import check_python_sources

    if server is not None:
        server = server_url(server)  # a bad URL is refused before any work

    # Compile-check first: a syntax error would otherwise surface as a forfeit of every game.
    with tempfile.TemporaryDirectory(prefix="kryt-submit-check-") as tmp:
        unpack = None if path.is_dir() else Path(tmp) / "unpacked"
        check_python_sources(load_submission(path, unpack_dir=unpack))
    if server is not None:
        _submit_remote(path, server, wait=wait)
        return
    from arena.tournament.store import DEFAULT_STORE, register

    submitter = _submitter(by)
    db = open_db(database)
    registered = register(path, db=db, submitted_by=submitter, store=store or DEFAULT_STORE)
    state = "stored" if registered.created else "already stored (same content)"
    _out().print(
        f"{registered.name} {registered.version}: {state} as submission"
        f" {registered.submission_id} (sha256 {registered.sha256[:16]}…)"
    )


SUBMITTER_MAX = 200
"""The longest ``--by`` (or user name) stored with a submission."""


def _submitter(by: str | None) -> str:
    """Who submits: ``--by``, else the user's login name; UserError (one line, exit 2) when
    it is empty, too long, not UTF-8 (bytes a shell or the environment passed through) or
    holds control characters, which every other stored name refuses too."""
    name = by if by is not None else getpass.getuser()
    where = "--by" if by is not None else "your user name (from the environment; give --by)"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise UserError(f"{where}: {shown!r} is not valid UTF-8") from None
    if not name.strip() or len(name) > SUBMITTER_MAX or not name.isprintable():
        raise UserError(
            f"{where}: {name[:SUBMITTER_MAX]!r} must be 1 to {SUBMITTER_MAX} printable characters"
        )
    return name


def _out() -> Any:
    from rich.console import Console

    return Console()


def _shown(value: object) -> str:
    """A value the server sent, as plain text for the terminal: it may carry a bot's words
    (its name, its crash message), so control characters are made visible."""
    from sandbox.death import printable

    return printable(str(value))


def server_url(text: str) -> str:
    """``text`` when it is an http(s) URL with a host (and a valid port), else
    :class:`UserError` naming it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        _port = parts.port  # raises ValueError when out of range or not a number
    except ValueError as exc:
        raise UserError(f"--server {_shown(text)!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(
            f"--server {_shown(text)!r} is not an http:// or https:// URL with a host",
            hint="e.g. --server https://arena.example.org",
        )
    return text


def _upload_limit(client: Any) -> int | None:
    """The server's upload limit as its ``/health`` publishes it, or None (not published,
    or the server does not answer: the upload itself then says why)."""
    from arena.service.server import ClientError

    try:
        limit = client.request("GET", "/health").get("max_upload_bytes")
    except ClientError:
        return None
    return limit if type(limit) is int and limit > 0 else None


def _lost_upload(exc: BaseException) -> bool:
    """Whether the connection broke while the request was sent (reset, broken pipe): what
    a server does that answers 413 from the declared size without reading the body."""
    import urllib.error

    cause = exc.__context__
    if isinstance(cause, urllib.error.URLError) and isinstance(cause.reason, BaseException):
        cause = cause.reason
    return isinstance(cause, ConnectionResetError | BrokenPipeError | ConnectionAbortedError)


def _submit_remote(path: Path, server: str, *, wait: bool) -> None:
    from rich.text import Text

    from arena.service.server import (
        Client,
        ClientError,
        ServerUnreachableError,
        archive_of,
        read_token,
    )

    out = _out()
    try:
        client = Client(server, read_token())
        archive, filename = archive_of(path)
        limit = _upload_limit(client)
        if limit is not None and len(archive) > limit:
            raise UserError(
                f"{_shown(filename)} is {len(archive)} bytes packed; {_shown(server)} accepts "
                f"uploads of at most {limit} bytes",
                hint="leave out what the bot does not need at run time",
            )
        try:
            data = client.upload(archive, filename)
        except ClientError as exc:
            if not _lost_upload(exc):
                raise
            raise UserError(
                f"{_shown(server)} closed the connection while receiving an upload of "
                f"{len(archive)} bytes (likely over its upload limit)"
            ) from None
        state = "uploaded" if data.get("created") else "already on the server (same content)"
        out.print(
            Text(
                f"{_shown(data['bot'])} {_shown(data['version'])}: {state} as submission"
                f" {_shown(data['submission_id'])}"
            ),
            highlight=False,
        )
        if wait and (data.get("check") or {}).get("status") == "pending":
            out.print("validation games against the reference bots...", highlight=False)
            data = client.wait(data["submission_id"])
    except ClientError as exc:
        code = (
            ExitCode.UNAVAILABLE if isinstance(exc, ServerUnreachableError) else ExitCode.BAD_INPUT
        )
        raise UserError(_shown(exc), code=code) from None
    check = data.get("check") or {}
    # Text, not markup: "[bold]" in a bot's crash message is the bot's text, shown as is.
    out.print(
        Text(
            f"status {_shown(data['status'])}; validation {_shown(check.get('status', '-'))}: "
            f"{_shown(check.get('message', ''))}"
        ),
        highlight=False,
    )
    if data["status"] == "rejected":
        raise typer.Exit(ExitCode.FAILED)
