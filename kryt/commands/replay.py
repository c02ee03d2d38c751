"""``kryt replay GAME_ID [--verify]``: print a stored game readably, or re-check it."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from kryt.errors import ExitCode
from kryt.options import DatabaseOption, open_db
from leaderboard.db import (
    get_game,
    get_series,
    get_tournament,
    submission_labels,
)
from referee.replay import StoredMove, verify
from referee.rules import DEFAULT_TURN_LIMIT, Card

out = Console()


class _Stored(BaseModel):
    """The stored game, detached from the database session."""

    id: int
    series_id: int
    number: int
    attempt: int
    dealer: int
    deck: list[str]
    actions: list[dict[str, Any]]
    result: str | None
    end_reason: str
    forfeit_seat: int | None
    forfeit_reason: str | None
    forfeit_input: str | None
    voided: bool
    void_reason: str | None
    referee_version: str
    seat0_submission_id: int
    seat1_submission_id: int


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
        config = dict(get_tournament(series.tournament_id, session=session).config)
        labels = submission_labels(session=session)
        game = _Stored.model_validate(row, from_attributes=True)
        tournament_id = series.tournament_id
    seats = (game.seat0_submission_id, game.seat1_submission_id)
    names = tuple("{} {}".format(*labels.get(s, (str(s), "?"))) for s in seats)
    turn_limit = int(config.get("turn_limit", DEFAULT_TURN_LIMIT))
    trump = Card.parse(game.deck[6]).suit
    out.print(
        f"[bold]Game {game.id}[/bold]: series {game.series_id} game {game.number}"
        f" (attempt {game.attempt}), tournament {tournament_id}"
    )
    out.print(f"seat 0: {names[0]}    seat 1: {names[1]}    dealer: seat {game.dealer}")
    out.print(f"trump {trump.symbol} (face up {game.deck[6]})    referee {game.referee_version}")
    out.print("deck: " + " ".join(game.deck))
    table = Table(show_edge=False)
    for column in ("#", "seat", "bot", "action", "seconds"):
        table.add_column(column, justify="right" if column in {"#", "seconds"} else "left")
    for number, move in enumerate(game.actions, start=1):
        auto = " (automatic final answer)" if move.get("auto") else ""
        table.add_row(
            str(number),
            str(move["seat"]),
            names[int(move["seat"])],
            f"{move['action']}{auto}",
            f"{float(move['seconds']):.3f}",
        )
    out.print(table)
    result = {"seat0": f"{names[0]} wins", "seat1": f"{names[1]} wins", "draw": "draw"}
    out.print(
        f"result: [bold]{result.get(game.result or '', 'none (voided)')}[/bold]"
        f" by {game.end_reason}"
    )
    if game.forfeit_seat is not None:
        out.print(
            f"forfeit by seat {game.forfeit_seat} ({names[game.forfeit_seat]}):"
            f" {game.forfeit_reason}; sent: {game.forfeit_input!r}"
        )
    if game.voided:
        out.print(f"[yellow]voided[/yellow]: {game.void_reason}")
    if not verify_:
        return
    check = verify(
        deck=game.deck,
        dealer=game.dealer,
        moves=[
            StoredMove(int(m["seat"]), str(m["action"]), bool(m.get("auto"))) for m in game.actions
        ],
        result=game.result,
        end_reason=game.end_reason,
        turn_limit=turn_limit,
        forfeit_seat=game.forfeit_seat,
        voided=game.voided,
    )
    if check.ok:
        out.print("[green]verified[/green]: the rules engine reproduces the stored result")
        return
    for problem in check.problems:
        out.print(f"[red]mismatch[/red]: {problem}")
    raise typer.Exit(ExitCode.FAILED)
