"""``kryt leaderboard``: the standings as a table or JSON, the web site, a static export.

    kryt leaderboard [--tournament ID] [--json] [--database URL]
    kryt leaderboard --html DIR            write the site as static files
    kryt leaderboard serve [--host H] [--port P]

The database is opened without creating it, so a fresh folder says there is no database yet.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.db import (
    Database,
    DatabaseError,
    DatabaseMissingError,
    get_tournament,
)
from kryt.errors import ExitCode, UserError, classify, echo_error
from kryt.options import MAX_ID, open_db
from leaderboard.formatting import board_name, tenths, visible
from leaderboard.standings import (
    InvalidFilterError,
    Leaderboard,
    resolve_board_kind,
    standings,
)
from leaderboard.web.queries import Progress, progress

app = typer.Typer(
    help="Show the leaderboard: a table, JSON, a web site (serve) or static HTML (--html).",
    invoke_without_command=True,
)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        "--db",
        "-d",
        help="Database URL or SQLite path (default: KRYT_DATABASE_URL, then ./kryt.db).",
        show_default=False,
    ),
]


def _fail(error: UserError) -> typer.Exit:
    # One line (plus a hint) on stderr, like the root command does for typed errors.
    echo_error(f"error: {error}")
    if error.hint:
        echo_error(f"hint: {error.hint}")
    return typer.Exit(error.code)


def _check_filters(ruleset: str | None, table_size: int | None, tournament: int | None) -> None:
    """A usage error, before any database is opened, for a filter no game can match, where
    the tournament's ruleset does not decide it (then the board itself checks it)."""
    if ruleset is None and tournament is not None:
        return
    try:
        resolve_board_kind(ruleset, table_size)
    except InvalidFilterError as exc:
        raise _fail(UserError(_filter_error(exc))) from None


def _filter_error(exc: InvalidFilterError) -> str:
    return f"--ruleset/--table-size: {exc}"  # the value is quoted with repr: escaped


def _open(url: str | None) -> Database:
    try:
        return open_db(url, create=False)
    except DatabaseMissingError as exc:
        # The message already says what to do; the generic "is the server running" hint of
        # unavailable databases would only mislead here.
        raise _fail(UserError(str(exc), code=ExitCode.UNAVAILABLE)) from None
    except DatabaseError as exc:
        known = classify(exc)
        assert known is not None  # every DatabaseError is a known user error
        raise _fail(known) from None


def _forfeits(forfeits: dict[str, int]) -> str:
    return ", ".join(f"{reason.replace('_', ' ')} {n}" for reason, n in sorted(forfeits.items()))


DROP_FIRST = ("Elo", "LOS", "Version", "±", "Score%")
"""Columns given up, in this order, when the table does not fit the terminal: the Forfeits
column is kept (a bot that wins by its opponents' crashes must show it)."""

FORFEITS_MIN = 14
"""Narrowest Forfeits column (reasons wrap onto more lines below that)."""
NAME_MIN = 8
"""Narrowest Bot and Version columns once the table must fold names to fit a terminal."""


def standings_table(
    board: Leaderboard,
    *,
    title: str,
    done: Progress | None = None,
    width: int | None = None,
) -> Table:
    """The rich table of the standings: rank, bot, version, BayesElo rating ± interval, live
    Elo (``*`` provisional), games, W/D/L, score %, LOS over the next bot, forfeits.

    With ``width`` (a terminal's columns) the table fits it: the columns of
    :data:`DROP_FIRST` go first, the Forfeits column stays (its reasons wrap)."""
    caption = []
    if done is not None:
        played = (
            f"{done.games_done}/{done.games_planned} games played, "
            f"{done.series_done}/{done.series_total} series done"
            + (f", {done.voided} voided" if done.voided else "")
        )
        if board.games != done.games_done:
            # The progress counts every game of the scope; this board holds only some (or
            # none) of them: say both, so the two numbers never seem to disagree.
            played = (
                f"{board.games} games on this board "
                f"({board_name(board.ruleset, board.table_size)}); all boards: {played}"
            )
        caption.append(played)
    if board.fit is not None:
        caption.append(
            f"BayesElo: prior {board.fit.prior:g}, first-mover advantage "
            f"{tenths(board.fit.advantage)}, drawelo {tenths(board.fit.drawelo)}, "
            f"{board.fit.confidence_text} intervals {board.intervals}; "
            "Elo is live (* provisional)"
        )
    if board.note:
        caption.append(visible(board.note))
    headers = ["#", "Bot", "Version", "Rating", "±", "Elo", "Games", "W/D/L", "Score%", "LOS"]
    rows = [
        [
            str(row.rank),
            visible(row.bot),
            visible(row.version),  # free text to the database (only bot.toml checks it)
            "—" if row.rating is None else f"{row.rating:.0f}",
            "—" if row.interval is None else f"{row.interval:.0f}",
            f"{row.elo:.0f}{'*' if row.elo_provisional else ''}",
            str(row.games),
            f"{row.wins}/{row.draws}/{row.losses}",
            f"{100 * row.score:.1f}",
            "" if row.los_next is None else f"{row.los_next:.2f}",
        ]
        for row in board.rows
    ]
    forfeits = [_forfeits(row.forfeits) for row in board.rows]
    widths = [max([len(h), *(len(cells[i]) for cells in rows)]) for i, h in enumerate(headers)]
    keep = list(range(len(headers)))
    if width is not None:
        forfeit_width = max([len("Forfeits"), *(len(f) for f in forfeits)])
        wanted = min(forfeit_width, FORFEITS_MIN)

        def total() -> int:
            # Each column takes its text plus one space of padding on each side and a rule.
            return sum(widths[i] + 3 for i in keep) + wanted + 4

        for header in DROP_FIRST:
            if total() <= width:
                break
            keep.remove(headers.index(header))
    # Still too wide (long names, a narrow terminal): the names fold onto more lines rather
    # than the table being cut at the terminal's edge (a number is never folded).
    fold = width is not None and total() > width
    # Text, not markup: the title and the note carry names (a tournament's, a bot's version)
    # that must be shown as they are, brackets and all.
    table = Table(title=Text(title), caption=Text("\n".join(caption)))
    for i in keep:
        # Never cut a name or a number short: the forfeits wrap instead, and the names fold
        # when even that is not enough.
        name = headers[i] in ("Bot", "Version")
        table.add_column(
            headers[i],
            justify="left" if name else "right",
            no_wrap=not (fold and name),
            overflow="fold",
            min_width=min(widths[i], NAME_MIN) if fold and name else widths[i],
        )
    table.add_column("Forfeits", justify="left", overflow="fold", min_width=len("Forfeits"))
    for cells, forfeit in zip(rows, forfeits, strict=True):
        table.add_row(*(Text(cells[i]) for i in keep), Text(forfeit))
    return table


def print_standings(console: Console, table_of: Callable[[int | None], Table]) -> None:
    """Print the standings table made by ``table_of(width)``: fitted to a terminal, whole
    (no width limit) when the output is piped or captured, or when the terminal is too
    narrow even for the fitted table (its lines then wrap, but nothing is cut off)."""
    if console.is_terminal:
        fitted = table_of(console.width)
        # Every column has its least width (a name folded, a number whole); below their sum,
        # with a rule and two spaces of padding per column, Rich would crop the table.
        needed = sum((column.min_width or 0) + 3 for column in fitted.columns) + 1
        if needed <= console.width:
            console.print(fitted)
            return
    table = table_of(None)
    wide = console.options.update_width(10_000)
    whole = max(console.width, console.measure(table, options=wide).maximum)
    Console(file=console.file, width=whole, color_system=None).print(table)


@app.callback()
def leaderboard(
    ctx: typer.Context,
    tournament: Annotated[
        int | None,
        typer.Option(
            "--tournament",
            "-t",
            min=1,
            max=MAX_ID,
            help="Only this tournament (default: all games).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    ruleset: Annotated[
        str | None,
        typer.Option(help="default or classic (default: the tournament's, else default)."),
    ] = None,
    table_size: Annotated[
        int | None, typer.Option("--table-size", help="Seats at the table (classic: 2-4).")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Write the site as static HTML into this folder.", dir_okay=True
        ),
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Print the standings: rank, bot, version, rating ± interval, Elo, games, W/D/L,
    score %, LOS over the next, forfeits by reason."""
    ctx.obj = {"database": database}
    if ctx.invoked_subcommand is not None:
        return
    _check_filters(ruleset, table_size, tournament)
    if html is not None:
        if as_json or tournament is not None or ruleset is not None or table_size is not None:
            # The export is the whole site (every tournament, and JSON files beside it).
            raise _fail(
                UserError(
                    "--html exports every tournament: "
                    "drop --json/--tournament/--ruleset/--table-size"
                )
            )
        _export(html, database)
        return
    with _open(database) as db:
        try:
            with db.read_session() as session:
                if tournament is not None:
                    name = get_tournament(tournament, session=session).name
                    title = f"Leaderboard: {name} (#{tournament})"
                else:
                    title = "Leaderboard: all tournaments"
                if as_json:
                    # Imported here: the web pages (Jinja) are not needed for a table.
                    from leaderboard.web.pages import leaderboard_json

                    data = leaderboard_json(
                        session=session,
                        tournament_id=tournament,
                        ruleset=ruleset,
                        table_size=table_size,
                    )
                    typer.echo(json.dumps(data, indent=2))
                    return
                board = standings(
                    session=session,
                    tournament_id=tournament,
                    ruleset=ruleset,
                    table_size=table_size,
                )
                done = progress(session=session, tournament_id=tournament)
                if ruleset is not None or table_size is not None or board.ruleset != "default":
                    # The board shown: asked for, the tournament's, or the only one with games.
                    title += f" ({board.ruleset}, table of {board.table_size})"
        except InvalidFilterError as exc:
            raise _fail(UserError(_filter_error(exc))) from None
        except DatabaseError as exc:
            known = classify(exc)
            assert known is not None
            raise _fail(known) from None
    print_standings(
        Console(), lambda width: standings_table(board, title=title, done=done, width=width)
    )


def _export(directory: Path, database: str | None) -> None:
    from leaderboard.export import ExportError, export_html

    with _open(database) as db:
        try:
            summary = export_html(db, directory)
        except ExportError as exc:
            raise _fail(UserError(str(exc))) from None
        except DatabaseError as exc:
            known = classify(exc)
            assert known is not None
            raise _fail(known) from None
    typer.echo(
        f"wrote {summary.pages} pages to {visible(str(summary.directory))} ("
        f"{summary.tournaments} tournaments, {summary.submissions} submissions, "
        f"{summary.series} series, {summary.games} games); "
        f"open {visible(str(summary.directory / 'index.html'))}"
    )
    for problem in summary.damaged:  # its page says so instead of the replay
        echo_error(f"warning: {problem}; its page shows this instead of the replay")
    if summary.damaged:
        raise typer.Exit(ExitCode.FAILED)


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=1, max=65535)] = 8000,
    database: DatabaseOption = None,
) -> None:
    """Serve the leaderboard web site (standings, bot pages, game replays) until Ctrl-C."""
    import uvicorn

    from arena.service.http_protocol import DEFAULT_HEADER_TIMEOUT, header_deadline_protocol
    from leaderboard.web import create_app

    url = database if database is not None else (ctx.obj or {}).get("database")
    db = _open(url)
    try:
        _check_port(host, port)
        shown = f"[{host}]" if ":" in host else host
        typer.echo(f"Leaderboard of {db.display_url} at http://{shown}:{port}/ (Ctrl-C to stop)")
        uvicorn.run(
            create_app(db),
            host=host,
            port=port,
            log_level="warning",
            http=header_deadline_protocol(DEFAULT_HEADER_TIMEOUT),
        )
    finally:
        db.close()


def _check_port(host: str, port: int) -> None:
    """Fail with one line now if the address cannot be listened on (uvicorn would only log)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise _fail(
            UserError(
                f"cannot listen on {host}:{port}: {reason}",
                code=ExitCode.UNAVAILABLE,
                hint="choose another --port (or --host)",
            )
        ) from None
