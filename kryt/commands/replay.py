"""``kryt replay GAME_ID [--verify]``: print a stored game readably, or re-check it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.db import get_game, get_series, stored_record, submission_labels
from kryt.errors import ExitCode
from kryt.options import DatabaseOption, open_db
from referee.replay import verify
from referee.rules import Card

out = Console()


def replay(
    game_id: Annotated[int, typer.Argument(help="The game's id (see the web page or status).")],
    verify_: Annotated[
        bool,
        typer.Option("--verify", help="Re-execute through the rules engine and check the result."),
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Print a stored game move by move; with --verify, confirm its stored result."""
    db = open_db(database, create=False)
    with db.read_session() as session:
        row = get_game(game_id, session=session)
        series = get_series(row.series_id, session=session)
        labels = submission_labels(session=session)
        seats = (row.seat0_submission_id, row.seat1_submission_id)
        names = tuple("{} {}".format(*labels.get(s, (str(s), "?"))) for s in seats)
        record = stored_record(row, (names[0], names[1]))
        where = (
            f"series {row.series_id} game {row.number} (attempt {row.attempt}),"
            f" tournament {series.tournament_id}"
        )
        result_code, game_ref = row.result, row.id
    trump = Card.parse(record.deck[6]).suit
    # Everything a bot controls (names, what it sent, details) is printed as plain text,
    # never as Rich markup, and with control characters made visible.
    out.print(Text(f"Game {game_ref}: {where}", style="bold"))
    out.print(
        Text(f"seat 0: {visible(names[0])}    seat 1: {visible(names[1])}    dealer: seat ")
        + Text(str(record.dealer))
    )
    out.print(
        Text(
            f"trump {trump.symbol} (face up {record.deck[6]})    referee"
            f" {visible(record.referee_version)}"
        )
    )
    out.print(Text("deck: " + " ".join(record.deck)))
    table = Table(show_edge=False)
    for column in ("#", "seat", "bot", "action", "seconds"):
        table.add_column(column, justify="right" if column in {"#", "seconds"} else "left")
    for number, move in enumerate(record.moves, start=1):
        table.add_row(
            str(number),
            str(move.seat),
            Text(visible(names[move.seat])),
            Text(move.action),
            f"{move.seconds:.3f}",
        )
    if record.final_cover:
        last = record.moves[-1].seat if record.moves else 0
        table.add_row(
            "",
            str(1 - last),
            Text(visible(names[1 - last])),
            Text(f"cover {record.final_cover} (automatic final answer)"),
            "",
        )
    out.print(table)
    result = {"seat0": f"{names[0]} wins", "seat1": f"{names[1]} wins", "draw": "draw"}
    out.print(
        Text("result: ")
        + Text(visible(result.get(result_code or "", "none (voided)")), style="bold")
        + Text(f" by {record.ending.value}")
    )
    if record.forfeit is not None:
        seat = record.forfeit.seat
        out.print(
            Text(
                f"forfeit by seat {seat} ({visible(names[seat])}): {record.ending.value}:"
                f" {visible(record.forfeit.detail)};"
                f" sent: {visible(record.forfeit.offending_input)!r}"
            )
        )
    if record.voided:
        out.print(Text("voided", style="yellow") + Text(f": {visible(record.void_reason)}"))
    if not verify_:
        return
    check = verify(record)
    if check.ok:
        out.print("[green]verified[/green]: the rules engine reproduces the stored result")
        return
    for problem in check.problems:
        out.print(Text("mismatch", style="red") + Text(f": {visible(problem)}"))
    raise typer.Exit(ExitCode.FAILED)


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}
_CONTROL.update({ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"})


def visible(text: str) -> str:
    """``text`` with control characters (terminal escapes, newlines) shown as escapes."""
    return text.translate(_CONTROL)
