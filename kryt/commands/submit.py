"""``kryt submit PATH``: validate a bot and store it as a new immutable version, locally or,
with ``--server URL``, on an arena server (which validates it again and plays it)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from arena.tournament.store import DEFAULT_STORE, register
from kryt.errors import ExitCode, UserError
from kryt.options import DatabaseOption, StoreOption, open_db

out = Console()


def submit(
    path: Annotated[Path, typer.Argument(help="Bot folder or .zip/.tar.gz archive with bot.toml.")],
    by: Annotated[
        str | None, typer.Option("--by", help="Who submits (default: your user).")
    ] = None,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
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
    """Validate the bot (manifest, paths, size) and store it; nothing is stored if it is bad."""
    if server is not None:
        _submit_remote(path, server, wait=wait)
        return
    db = open_db(database)
    registered = register(path, db=db, submitted_by=by or getpass.getuser(), store=store)
    state = "stored" if registered.created else "already stored (same content)"
    out.print(
        f"{registered.name} {registered.version}: {state} as submission"
        f" {registered.submission_id} (sha256 {registered.sha256[:16]}…)"
    )


def _submit_remote(path: Path, server: str, *, wait: bool) -> None:
    from arena.service.server import Client, ClientError, archive_of, read_token

    try:
        client = Client(server, read_token())
        archive, filename = archive_of(path)
        data = client.upload(archive, filename)
        state = "uploaded" if data.get("created") else "already on the server (same content)"
        out.print(
            f"{data['bot']} {data['version']}: {state} as submission {data['submission_id']}",
            highlight=False,
        )
        if wait and (data.get("check") or {}).get("status") == "pending":
            out.print("validation games against the reference bots...", highlight=False)
            data = client.wait(int(data["submission_id"]))
    except ClientError as exc:
        code = ExitCode.UNAVAILABLE if "cannot reach" in str(exc) else ExitCode.BAD_INPUT
        raise UserError(str(exc), code=code) from None
    check = data.get("check") or {}
    out.print(
        f"status {data['status']}; validation {check.get('status', '-')}: "
        f"{check.get('message', '')}",
        highlight=False,
    )
    if data["status"] == "rejected":
        raise typer.Exit(ExitCode.FAILED)
