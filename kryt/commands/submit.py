"""``kryt submit PATH``: validate a bot and store it as a new immutable version."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from arena.tournament.store import DEFAULT_STORE, register
from kryt.options import DatabaseOption, StoreOption, open_db

out = Console()


def submit(
    path: Annotated[Path, typer.Argument(help="Bot folder or .zip/.tar.gz archive with bot.toml.")],
    by: Annotated[
        str | None, typer.Option("--by", help="Who submits (default: your user).")
    ] = None,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Validate the bot (manifest, paths, size) and store it; nothing is stored if it is bad."""
    db = open_db(database)
    registered = register(path, db=db, submitted_by=by or getpass.getuser(), store=store)
    state = "stored" if registered.created else "already stored (same content)"
    out.print(
        f"{registered.name} {registered.version}: {state} as submission"
        f" {registered.submission_id} (sha256 {registered.sha256[:16]}…)"
    )
