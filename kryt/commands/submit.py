"""``kryt submit PATH``: validate a bot and store it as a new immutable version."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer

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
            help="Where unpacked bot submissions are kept [default: .kryt/submissions].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Validate the bot (manifest, paths, size, Python sources compile) and store it; nothing
    is stored if it is bad."""
    import tempfile

    from sandbox import load_submission
    from sandbox.source_check import check_python_sources

    # Compile-check first: a syntax error would otherwise surface as a forfeit of every game.
    with tempfile.TemporaryDirectory(prefix="kryt-submit-check-") as tmp:
        unpack = None if path.is_dir() else Path(tmp) / "unpacked"
        check_python_sources(load_submission(path, unpack_dir=unpack))
    from arena.tournament.store import DEFAULT_STORE, register

    db = open_db(database)
    registered = register(
        path, db=db, submitted_by=by or getpass.getuser(), store=store or DEFAULT_STORE
    )
    state = "stored" if registered.created else "already stored (same content)"
    typer.echo(
        f"{registered.name} {registered.version}: {state} as submission"
        f" {registered.submission_id} (sha256 {registered.sha256[:16]}…)"
    )
