"""``kryt replay GAME_ID [--verify]``: print a stored game readably, or re-check it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.db import (
    InvalidRecordError,
    get_game,
    get_series,
    get_tournament,
    stored_record,
    submission_labels,
)
from arena.tournament.extend import SeedChain, seed_chain
from arena.tournament.ladder import is_ladder
from arena.tournament.runner import TournamentError
from arena.tournament.seeds import commitment as seed_commitment
from arena.tournament.seeds import deal_problems
from arena.tournament.tracebacks import HEAD
from kryt.errors import ExitCode
from kryt.options import MAX_ID, DatabaseOption, open_db
from referee.record import GameRecord, table_losers
from referee.replay import verify
from referee.rules import Game
from sandbox.death import printable

out = Console()


def replay(
    game_id: Annotated[
        int,
        typer.Argument(min=1, max=MAX_ID, help="The game's id (see the web page or status)."),
    ],
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
        seats = (
            tuple(row.seats) if row.seats else (row.seat0_submission_id, row.seat1_submission_id)
        )
        names = tuple("{} {}".format(*labels.get(s, (str(s), "?"))) for s in seats)
        try:
            record = stored_record(row, names)
        except InvalidRecordError as exc:
            out.print(Text("mismatch", style="red") + Text(f": {printable(str(exc))}"))
            raise typer.Exit(ExitCode.FAILED) from None
        tournament = get_tournament(series.tournament_id, session=session)
        # The tournament's seed, or for a series added by `kryt tournament extend` its
        # round's own seed and commitment (arena.tournament.extend).
        try:
            chain = seed_chain(tournament.seed, tournament.config, series)
        except TournamentError as exc:
            out.print(Text("mismatch", style="red") + Text(f": {printable(str(exc))}"))
            raise typer.Exit(ExitCode.FAILED) from None
        whose = _whose_seed(tournament.seed, tournament.config, chain)
        commitment_check = _commitment_check(chain, whose)
        book = [d for d in tournament.config.get("book", []) if isinstance(d, str)]
        deal_check = deal_problems(
            tournament_seed=chain.seed,
            # Checked by _commitment_check, which names the round's seed for a round's game.
            stored_commitment=None,
            series_seed=series.seed,
            expected_series_seed=chain.series_seed,
            series_format=series.format,
            games_planned=series.games_planned,
            number=row.number,
            deck=record.deck,
            book=book,
            unknown_book=chain.imported_book is not None,
        )
        book_decks = len(book)
        where = (
            f"series {row.series_id} game {row.number} (attempt {row.attempt}),"
            f" tournament {series.tournament_id}"
        )
        result_code, game_ref = row.result, row.id
    # The deal as either ruleset lays it out: its trump and face-up card.
    dealt = Game.from_deck(
        record.deck, record.dealer, players=record.seats, ruleset=record.ruleset
    ).view(0)
    # Everything a bot controls (names, what it sent, details) is printed as plain text,
    # never as Rich markup, and with control characters made visible.
    out.print(Text(f"Game {game_ref}: {where}", style="bold"))
    out.print(
        Text("    ".join(f"seat {i}: {printable(name)}" for i, name in enumerate(names)))
        + Text(f"    dealer: seat {record.dealer}")
    )
    out.print(
        Text(
            f"trump {dealt.trump.symbol} (face up {dealt.face_up})    referee"
            f" {printable(record.referee_version)}"
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
            Text(printable(names[move.seat])),
            Text(printable(move.action)),  # canonical, unless imported before it was checked
            f"{move.seconds:.3f}",
        )
    if record.final_cover:
        last = record.moves[-1].seat if record.moves else 0
        table.add_row(
            "",
            str(1 - last),
            Text(printable(names[1 - last])),
            Text(f"cover {record.final_cover} (automatic final answer)"),
            "",
        )
    out.print(table)
    out.print(
        Text("result: ")
        + Text(printable(_result_text(record, result_code, names)), style="bold")
        + Text(f" by {record.ending.value}")
    )
    if record.forfeit is not None:
        seat = record.forfeit.seat
        # A tournament crash keeps the bot's traceback (or how its process ended and its
        # last output) after the detail: shown below it, each line marked as the bot's.
        first, rest = detail_parts(record.forfeit.detail)
        # repr() alone escapes every character printable() would, once; printable() before
        # it doubled each backslash of the escapes it had written.
        out.print(
            Text(
                f"forfeit by seat {seat} ({printable(names[seat])}): {record.ending.value}:"
                f" {printable(first)};"
                f" sent: {record.forfeit.offending_input!r}"
            )
        )
        if rest:
            lines = printable(rest, keep_newlines=True).split("\n")
            out.print(Text("\n".join(f"  │ {line}" for line in lines)), soft_wrap=True)
    if record.double_forfeit_detail:
        nobody = "neither bot" if record.seats == 2 else "no bot"
        out.print(Text(f"{nobody} played: {printable(record.double_forfeit_detail)}"))
    if record.voided:
        out.print(Text("voided", style="yellow") + Text(f": {printable(record.void_reason)}"))
    if not verify_:
        return
    check = verify(record)
    unmatched, committed = commitment_check
    problems = [*check.problems, *([unmatched] if unmatched else []), *deal_check]
    if not problems:
        # A record with time controls had its move times charged again (referee.replay).
        timed = " and every move fits its seat's clock" if record.time_controls else ""
        if record.voided:
            # A voided game has no result: its moves are what the replay can vouch for.
            out.print(
                "[green]verified[/green]: every stored move is legal by the rules engine"
                f"{timed}; the game was voided, so it has no result to reproduce"
            )
        else:
            out.print(
                f"[green]verified[/green]: the rules engine reproduces the stored result{timed}"
            )
        # The seed, then whether it is the one committed to before the games.
        seed = whose + (
            committed
            or "; it has no stored commitment (a tournament stored before commitments were,"
            " or imported from a game file without them): that it was fixed before the games"
            " is [yellow]not checked[/yellow]"
        )
        if chain.imported_book is not None:
            out.print(
                f"[green]verified[/green]: the series seed follows from {seed}; the deal is a"
                f" deck of the tournament's deal book ({chain.imported_book} decks), which"
                " stayed in the database the game was exported from: [yellow]not checked"
                "[/yellow]"
            )
            return
        if book_decks:
            # A book's deals are its decks in order, not drawn from the seed (checked above).
            out.print(
                f"[green]verified[/green]: the deal is the deck the tournament's deal book"
                f" ({book_decks} decks) gives for this game; the series seed follows from"
                f" {seed}"
            )
            return
        out.print(f"[green]verified[/green]: the deal follows from {seed}")
        return
    for problem in problems:
        out.print(Text("mismatch", style="red") + Text(f": {printable(problem)}"))
    raise typer.Exit(ExitCode.FAILED)


def _whose_seed(tournament_seed: int, config: Mapping[str, Any], chain: SeedChain) -> str:
    """Which seed the game's series derives from, in words: the tournament's, or the one of
    the ``kryt tournament extend`` round it belongs to (the ladder's earlier seed)."""
    if chain.seed == tournament_seed:
        return "the tournament's seed"
    if is_ladder(config):
        return "the ladder's earlier seed"
    return "the tournament's seed for its extension round"


def _commitment_check(chain: SeedChain, whose: str) -> tuple[str | None, str | None]:
    """Whether the seed the series derives from matches the commitment stored for it (the
    one published before the games: at the tournament's creation, or the round's):
    ``(problem, None)`` when it does not, ``(None, ", which matches ...")`` when it does,
    ``(None, None)`` when no commitment is stored. A seed that does not give its commitment
    is not the seed the deals were committed to, so the deals could have been chosen."""
    if chain.commitment is None:
        return None, None
    expected = seed_commitment(chain.seed)
    if expected != chain.commitment:
        return (
            f"{whose} does not match the commitment published before the games (stored"
            f" {chain.commitment[:16]!r}..., the seed gives {expected[:16]}...)",
            None,
        )
    return None, f", which matches its published commitment ({chain.commitment[:16]}...)"


APPENDED: tuple[str, ...] = (f"\n{HEAD}", "\nits process: ", "last output:\n")
"""Where what a tournament appends to a crash's detail starts (arena.tournament.tracebacks;
sandbox.backend's start-up error): the bot's traceback, how its process ended, its output."""
BUILD_FAILED_MARK = ") did not build: "
"""What a failed build's detail says (sandbox.runtimes.containers.build_failure) before its
one-line reason; the compiler's output follows on the next lines."""


def detail_parts(detail: str) -> tuple[str, str]:
    """A forfeit's detail as its first part, shown on one line (a newline or ``\\r`` a bot
    put in its own error message is escaped there, so it cannot print a line of its own), and
    what the tournament appended after it (shown below, line by line), split at the first of
    :data:`APPENDED`."""
    cuts = [
        at + (len(marker) if marker.endswith("\n") else 1)
        for marker in APPENDED
        if (at := detail.find(marker)) >= 0
    ]
    # A build that failed: its one-line reason, then the compiler's output.
    built = detail.find(BUILD_FAILED_MARK)
    if built >= 0 and (end := detail.find("\n", built)) >= 0:
        cuts.append(end + 1)
    if not cuts:
        return detail, ""
    cut = min(cuts)
    return detail[:cut].removesuffix("\n"), detail[cut:]


def _result_text(record: GameRecord, result_code: str | None, names: tuple[str, ...]) -> str:
    """The stored result in words: the winner of the two-player game, or a table's loser
    and, at its turn limit, who beat whom."""
    if record.voided or result_code is None:
        return "none (voided)"
    if record.ruleset == "default":
        won = {"seat0": f"{names[0]} wins", "seat1": f"{names[1]} wins"}
        return won.get(result_code, "draw")
    if record.loser is not None:
        return "; ".join(f"{names[x]} loses" for x in table_losers(record.loser, record.pairwise))
    if record.pairwise:
        return "; ".join(f"{names[w]} beats {names[x]}" for w, x in record.pairwise)
    return "draw"
