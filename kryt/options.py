"""Options shared by several command groups."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from arena.db import Database

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "--db",
        "-d",
        help="Database URL or SQLite path (default: $KRYT_DATABASE_URL, else ./kryt.db).",
        show_default=False,
    ),
]

StoreOption = Annotated[
    Path,
    typer.Option(help="Where unpacked bot submissions are kept."),
]


_OPENED: list[Database] = []
"""Databases this invocation opened, closed by :func:`close_opened_databases` when it ends."""


def open_db(url: str | None, *, create: bool = True) -> Database:
    """Open the results database; with ``create=False`` a missing SQLite file is an error.

    The database stays open for the rest of the command and is closed when ``kryt.cli.main``
    returns, so a program that runs ``main()`` again and again keeps no pooled connection
    (a PostgreSQL server counts them against its limit).
    """
    from arena.db import open_database  # here, not at start-up: sqlalchemy is slow to import

    db = open_database(url, create=create)
    _OPENED.append(db)
    return db


def close_opened_databases() -> None:
    """Close every database :func:`open_db` opened (closing one twice is harmless)."""
    while _OPENED:
        db = _OPENED.pop()
        # A server gone meanwhile must not turn the command's own outcome into a traceback.
        with suppress(Exception):
            db.close()


MAX_GAMES = 1_000_000
"""The most games of one ``kryt play`` or ``kryt bot check``: a tournament's most games per
pair (``arena.tournament.config.MAX_GAMES_PER_PAIR``, not imported: start-up stays light)."""

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


def refuse_two_time_controls(bot: str, first: str | None, second: str) -> None:
    """``--time KEY=...`` given for ``bot`` under ``first`` (None: not yet) and again under
    ``second`` (its name and its name with the version, say): which would win is a guess, so
    it is one ``error:`` line (exit 2), as ``[bot_time]`` naming one bot twice is."""
    from kryt.errors import UserError

    if first is not None:
        raise UserError(
            f"--time names the bot {bot} twice, as {first!r} and as {second!r}:"
            " give each bot one control",
            hint="see docs/configuration.md#time-controls",
        )


def refuse_contradictory_time(
    shared: list[str], move: float | None, bank: float | None, increment: float | None
) -> None:
    """``--time MOVE+BANK[+INCREMENT]`` for every bot (``shared``, as given) given twice, or
    beside ``--move-seconds``/``--bank-seconds``/``--increment-seconds``: which would win is a
    guess, so it is one ``error:`` line (exit 2), in ``kryt play`` as in ``tournament run``."""
    from kryt.errors import UserError

    hint = "see docs/configuration.md#time-controls"
    if len(shared) > 1:
        raise UserError(
            f"--time is given {len(shared)} times for every bot"
            f" ({', '.join(map(repr, shared))}): give it once (BOT=MOVE+BANK for one bot)",
            hint=hint,
        )
    separate = [
        flag
        for flag, value in (
            ("--move-seconds", move),
            ("--bank-seconds", bank),
            ("--increment-seconds", increment),
        )
        if value is not None
    ]
    if shared and separate:
        raise UserError(
            f"--time {shared[0]} sets the move, bank and increment of every bot, and"
            f" {' and '.join(separate)} would set {'it' if len(separate) == 1 else 'them'}"
            " again: give either --time or the separate options",
            hint=hint,
        )
