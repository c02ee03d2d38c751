"""``kryt games``: find stored games (with their ids, for ``kryt replay``), export them as a
game file (plain text, see docs/games-format.md), CSV or JSON, and import a game file.

    kryt games list [--bot NAME] [--tournament ID] [--result win|loss|draw|void|seat0|seat1]
                    [--reason ENDING] [--limit N]
    kryt games export FILE [--format text|csv|json] [--force] [the same filters]
    kryt games import FILE
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kryt.errors import ExitCode, UserError
from kryt.options import MAX_ID, DatabaseOption, open_db
from referee.files import file_kind, read_regular_file

if TYPE_CHECKING:
    from sqlmodel import Session

    from arena.db.models import Game
    from leaderboard.games_io import GameFilter

app = typer.Typer(
    help="List, export and import stored games (ids for kryt replay).", no_args_is_help=True
)

BotFilter = Annotated[
    str | None, typer.Option("--bot", "-b", help="Only games of this bot (any version).")
]
TournamentFilter = Annotated[
    int | None,
    typer.Option("--tournament", "-t", min=1, max=MAX_ID, help="Only games of this tournament."),
]
ResultFilter = Annotated[
    str | None,
    typer.Option(
        "--result",
        "-r",
        help="seat0, seat1, draw or void (seat0 and seat1: two-player games; a table game is"
        " a draw or, with --bot, a win or loss); with --bot also win or loss (from that bot's"
        " side).",
    ),
]
ReasonFilter = Annotated[
    list[str] | None,
    typer.Option(
        "--reason",
        help="Only games that ended this way (out, timeout, crash, 'illegal action', ...:"
        " quote endings with a space); repeatable.",
        show_default=False,
    ),
]

FORMATS = ("text", "csv", "json")
WORDS = {"result", "ending"}


def _filter(
    bot: str | None,
    tournament: int | None,
    result: str | None,
    reason: list[str] | None,
    limit: int | None,
    newest_first: bool = False,
) -> GameFilter:
    from leaderboard.games_io import GameFilter

    return GameFilter(
        bot=bot,
        tournament_id=tournament,
        result=result,
        reasons=tuple(reason or ()),
        limit=limit,
        newest_first=newest_first,
    )


def _ending(reason: str, detail: str | None, *, voided: bool = False) -> str:
    """The ending, with where a crashed bot's code raised (``crash at bot.py:12``); a game
    voided after it was recorded: ``void (played: out)``, as its record says."""
    from arena.tournament.tracebacks import crash_site
    from referee.protocol.messages import GameEndReason
    from sandbox.death import printable

    site = crash_site(detail)
    played = f"{reason} at {printable(site)}" if site else reason
    if voided and reason != GameEndReason.VOID.value:
        return f"{GameEndReason.VOID.value} (played: {played})"
    return played


@app.command("list")
def list_games(
    bot: BotFilter = None,
    tournament: TournamentFilter = None,
    result: ResultFilter = None,
    reason: ReasonFilter = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=MAX_ID, help="At most this many.")
    ] = 50,
    oldest: Annotated[
        bool, typer.Option("--oldest", help="Oldest first (default newest).")
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Stored games with their ids (newest first): tournament, series, seats, result, ending."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from arena.db import get_series, submission_labels
    from leaderboard.games_io import select_games
    from sandbox.death import printable as visible

    # One game more than shown: the footer says the list was cut only when it was.
    where = _filter(bot, tournament, result, reason, limit + 1, newest_first=not oldest)
    db = open_db(database, create=False)
    with db.read_session() as session:
        _check_filters(where, session=session)
        games = select_games(where, session=session)
        cut = len(games) > limit
        games = games[:limit]
        labels = submission_labels(session=session)
        tables = any(game.players > 2 for game in games)
        columns = ["id", "tourn.", "series", "game", "seat 0", "seat 1"]
        columns += ["seats 2-3"] * tables + ["result", "ending"]
        table = Table(show_edge=False)
        for column in columns:
            left = " " in column or column in WORDS
            table.add_column(column, justify="left" if left else "right", no_wrap=True)
        table.add_column("moves", justify="right", no_wrap=True)
        tournaments: dict[int, int] = {}
        for game in games:
            if game.series_id not in tournaments:
                series = get_series(game.series_id, session=session)
                tournaments[game.series_id] = series.tournament_id
            seats = game.seat_ids
            names = ["{} {}".format(*labels.get(s, (str(s), "?"))) for s in seats]
            more = [Text(visible(", ".join(names[2:])))] * tables
            table.add_row(
                str(game.id),
                str(tournaments[game.series_id]),
                str(game.series_id),
                f"{game.number}" + (f"/{game.attempt}" if game.attempt > 1 else ""),
                Text(visible(names[0])),
                Text(visible(names[1])),
                *more,
                _result_cell(game),
                Text(_ending(game.end_reason, game.forfeit_detail, voided=game.voided)),
                str(game.move_count),
            )
    console = Console()
    if not console.is_terminal:  # piped or captured: no width to respect, keep rows whole
        console = Console(width=200)
    if not games:
        typer.echo("no games match")
        return
    console.print(table)
    typer.echo(
        f"{len(games)} games"
        + (f" (the first {limit}; use --limit)" if cut else "")
        + "; see one with: kryt replay ID"
    )


@app.command("export")
def export(
    file: Annotated[str, typer.Argument(help="Output file, or - for standard output.")],
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="text (default; .kgn), csv or json (default: from the file's extension).",
        ),
    ] = None,
    bot: BotFilter = None,
    tournament: TournamentFilter = None,
    result: ResultFilter = None,
    reason: ReasonFilter = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace FILE even when it is not an earlier export of kryt (a game file,"
            " CSV or JSON export); never a database.",
        ),
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Write games (all, or those matching the filters) as a game file, CSV or JSON; no file
    is written when no game matches (exit 1)."""
    from leaderboard.gamefile import format_games, to_csv, to_json
    from leaderboard.games_io import export_entries, exportable, select_games

    chosen = format or {".csv": "csv", ".json": "json"}.get(Path(file).suffix.lower(), "text")
    if chosen not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, got {chosen!r}")
    if file != "-":
        _check_target(Path(file), force=force)
    where = _filter(bot, tournament, result, reason, None)
    db = open_db(database, create=False)
    with db.read_session() as session:
        _check_filters(where, session=session)  # a typo must not empty an earlier export
        chosen_games = exportable(select_games(where, session=session), session=session)
        games, tables, unfinished = (
            chosen_games.games,
            chosen_games.tables,
            chosen_games.unfinished,
        )
        if not games and (tables or unfinished):
            tables_why = "classic-table games, which a game file cannot hold (it has two seats)"
            unfinished_why = (
                "games of tournaments not finished, whose seeds a game file would reveal"
                " (they stay secret until the tournament finishes)"
            )
            if not unfinished:
                why = f"the {tables} games chosen are {tables_why}"
            elif not tables:
                why = f"the {unfinished} games chosen are {unfinished_why}"
            else:
                why = f"{tables} games chosen are {tables_why}; {unfinished} are {unfinished_why}"
            raise UserError(
                f"nothing to export: {why}",
                hint="kryt leaderboard --html DIR exports a site with every game",
            )
        if not games and file != "-":  # an earlier export stays, nothing new is created
            typer.echo(f"no games match: nothing written to {_shown_path(file)}", err=True)
            raise typer.Exit(ExitCode.FAILED)
        entries = export_entries(games, session=session)
    text = {"text": format_games, "csv": to_csv, "json": to_json}[chosen](entries)
    if tables:
        typer.echo(f"left out {tables} classic-table games (a game file has two seats)", err=True)
    if unfinished:
        typer.echo(
            f"left out {unfinished} games of tournaments not finished (their seeds stay secret"
            " until they finish)",
            err=True,
        )
    if file == "-":
        sys.stdout.write(text)
        return
    _write_atomically(Path(file), text, force=force)
    typer.echo(f"wrote {len(entries)} games to {_shown_path(file)} ({chosen})", err=True)


SQLITE_HEADER = b"SQLite format 3\x00"
OUR_EXPORT = re.compile(
    rb'\A(?:\[KrytGameFile "|\s*\[\s*(?:\]|\{\s*"KrytGameFile")|game_id,tournament,)'
)
"""How an export of ours starts: a game file's first header, a JSON array of games (or an
empty one), the CSV header row."""
HEAD_BYTES = 64
"""The bytes of an existing target read to tell what it is (SQLite, an export of ours)."""


def _check_filters(where: GameFilter, *, session: Session) -> None:
    """Refuse a tournament id or a bot name the database does not know (``no tournament with
    id 9``, as ``kryt leaderboard -t 9`` says): a typo is not "no games match", and an export
    with it would have replaced an earlier export with an empty file."""
    from arena.db import get_bot, get_tournament

    if where.tournament_id is not None:
        get_tournament(where.tournament_id, session=session)
    if where.bot is not None:
        get_bot(where.bot, session=session)


def _check_target(path: Path, *, force: bool = False) -> os.stat_result | None:
    """Refuse to write an export over a database (``kryt games export kryt.db`` would have
    replaced the results with text), over anything that is not a regular file (a symbolic
    link, a device, a named pipe, a socket, a directory), or, unless ``force``, over a
    non-empty file that is not an earlier export of ours (by its first bytes: a typo'd
    ``kryt games export notes.txt`` would have lost the notes), before anything is opened or
    written; the target's status, or None when there is none yet.

    Looked at with ``lstat`` (a link is not followed), and a regular file is opened without
    following a link or blocking, so a named pipe put there meanwhile is never waited on."""
    shown = _shown_path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"cannot write {shown}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UserError(
            f"cannot write {shown}: it is {file_kind(info.st_mode)}, not a regular file"
        )
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        handle = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"cannot write {shown}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(
                f"cannot write {shown}: it is {file_kind(info.st_mode)}, not a regular file"
            )
        head = os.read(handle, HEAD_BYTES)
    except OSError as exc:
        raise UserError(f"cannot write {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(handle)
    if head.startswith(SQLITE_HEADER):
        raise UserError(
            f"{shown} is an SQLite database, not overwritten with the export",
            hint="name a new file, e.g. games.kgn, games.csv or games.json",
        )
    if head and not force and OUR_EXPORT.match(head) is None:
        raise UserError(
            f"{shown} exists and is not an export of kryt games (a game file, CSV or JSON):"
            " not replaced",
            hint="name a new file, or add --force to replace it",
        )
    return info


def _new_file_mode() -> int:
    """The permissions a new file gets here (0666 less the umask)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _write_atomically(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a
    rename: an export that fails half-way leaves the old file as it was.

    The temporary file has an unpredictable name and is created exclusively (``mkstemp``:
    never through a link someone planted); it is synced before it replaces ``path``, which is
    checked again just before (only a regular file, or nothing, is replaced; not a file other
    than an export of ours unless ``force``: see :func:`_check_target`). A file
    replaced keeps its permissions; a new one gets the usual ones (0666 less the umask)."""
    data = text.encode("utf-8")
    shown = _shown_path(path)
    existing = _check_target(path, force=force)
    mode = stat.S_IMODE(existing.st_mode) & 0o777 if existing else _new_file_mode()
    directory = path.parent
    try:
        handle, name = tempfile.mkstemp(
            dir=directory, prefix=f".{path.name[:100]}.", suffix=".kryt-tmp"
        )
    except OSError as exc:
        raise UserError(f"cannot write {shown}: {exc.strerror or exc}") from None
    tmp = Path(name)
    try:
        try:
            os.fchmod(handle, mode)
            _write_all(handle, data)
            os.fsync(handle)
        finally:
            os.close(handle)
        _check_target(path, force=force)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UserError(f"cannot write {shown}: {exc.strerror or exc}") from None
        raise
    _sync_directory(directory)


def _write_all(handle: int, data: bytes) -> None:
    """Write all of ``data`` to the open file ``handle``."""
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every file system can)."""
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _result_cell(game: Game) -> str:
    """A game's result in the list: 1-0, 0-1 or ½-½, and at a table the seat that lost
    (``limit`` when the turn limit decided it, ``draw`` when nobody lost)."""
    if game.voided:
        return "void"
    if game.ruleset == "default":
        return {"seat0": "1-0", "seat1": "0-1", "draw": "½-½"}.get(game.result or "", "?")
    if game.loser_seat is not None:
        from referee.record import table_losers

        losers = table_losers(game.loser_seat, game.pairwise or ())
        return ",".join(f"s{x}" for x in losers) + " lost"
    return "limit" if game.pairwise else "draw"


def _shown_path(path: str | Path) -> str:
    """A file name as given on the command line, with control characters made visible."""
    from sandbox.death import printable

    return printable(str(path))


@app.command("import")
def import_(
    file: Annotated[
        Path,
        typer.Argument(help="A game file (text) or a JSON export.", exists=True, dir_okay=False),
    ],
    database: DatabaseOption = None,
) -> None:
    """Store the games of a game file with their tournaments, series and bot versions
    (idempotent: importing the same file twice adds nothing)."""
    from leaderboard.gamefile import GameFileError, load_games
    from leaderboard.games_io import import_entries
    from sandbox.death import printable

    try:
        data = read_regular_file(file)
    except OSError as exc:
        raise UserError(f"cannot read {_shown_path(file)}: {exc.strerror or exc}") from None
    try:  # the whole file is checked before the database is opened: all of it, or nothing
        entries = load_games(
            data, source=_shown_path(file.name), json_name=file.suffix.lower() == ".json"
        )
    except GameFileError as exc:
        raise UserError(printable(str(exc))) from None
    db = open_db(database)
    try:
        with db.session() as session:
            summary = import_entries(entries, session=session)
    except BaseException:
        db.discard_if_unused()  # a database this import created, and failed to fill
        raise
    if summary.games == 0 and db.discard_if_unused():
        # A file with no games (an empty file, /dev/null): it creates no empty arena.
        typer.echo(f"{_shown_path(file)} holds no games: nothing imported, no database created")
        return
    typer.echo(
        f"imported {summary.created} new games of {summary.games} read"
        f" ({summary.tournaments_created} new"
        f" tournament{'' if summary.tournaments_created == 1 else 's'}) into {db.display_url}"
    )
    # Statuses the file would have moved back (or changed in a tournament run here): kept.
    for line in summary.kept[:KEPT_SHOWN]:
        typer.echo(f"kept: {printable(line)}", err=True)
    if len(summary.kept) > KEPT_SHOWN:
        typer.echo(f"kept: ... and {len(summary.kept) - KEPT_SHOWN} more statuses", err=True)


KEPT_SHOWN = 10
"""At most this many lines about statuses an import kept."""
