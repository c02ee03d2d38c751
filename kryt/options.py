"""Options shared by several command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arena.db import Database, open_database

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "-d",
        help="Database URL or SQLite path (default: $KRYT_DATABASE_URL, else ./kryt.db).",
        show_default=False,
    ),
]

StoreOption = Annotated[
    Path,
    typer.Option(help="Where unpacked bot submissions are kept."),
]


def open_db(url: str | None, *, create: bool = True) -> Database:
    """Open the results database; with ``create=False`` a missing SQLite file is an error."""
    return open_database(url, create=create)
