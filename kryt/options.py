"""Options shared by several command groups."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from arena.db import Database

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
    from arena.db import open_database  # here, not at start-up: sqlalchemy is slow to import

    return open_database(url, create=create)


MAX_ID = 2**31 - 1
"""The largest id of a stored row (``arena.db._util.MAX_ID``; not imported: start-up stays
light). Id arguments are checked against it, so a huge number is a usage error, not a
database driver's overflow."""

BackendOption = Annotated[
    str,
    typer.Option(
        "--backend",
        help="Sandbox backend: auto (docker, then bwrap, then process), docker, bwrap or process.",
    ),
]
"""The one name of the sandbox choice in every command (``--sandbox`` is a hidden alias)."""

BackendAliasOption = Annotated[
    str | None, typer.Option("--sandbox", hidden=True, show_default=False)
]


def backend_choice(backend: str, alias: str | None) -> str:
    """The sandbox backend asked for by ``--backend`` or its hidden alias ``--sandbox``."""
    return alias if alias is not None else backend
