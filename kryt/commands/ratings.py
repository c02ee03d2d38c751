"""``kryt ratings``: rate any result set with the BayesElo model and print the table or JSON."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kryt.errors import echo_error
from leaderboard.formatting import confidence_percent, tenths, visible
from leaderboard.ratings import (
    BayesEloFit,
    PairCounts,
    PairedIntervals,
    Pentanomial,
    RatingsError,
    fit_bayeselo,
    pair_consecutive,
    paired_intervals,
    pentanomial_counts,
    read_games_csv,
)
from leaderboard.ratings.bayeselo import DEFAULT_DRAWELO

app = typer.Typer(
    help="Rate result sets with the BayesElo model (Rémi Coulom's bayeselo).",
    no_args_is_help=True,
)

EXIT_BAD_INPUT = 2


@app.callback()
def ratings() -> None:
    """Rate result sets with the BayesElo model (Rémi Coulom's bayeselo)."""


def _fail(message: str) -> typer.Exit:
    # One line on stderr and exit code 2, like a usage error: bad input is not a crash.
    echo_error(f"error: {message}")
    return typer.Exit(EXIT_BAD_INPUT)


def _table(fit: BayesEloFit, paired: PairedIntervals | None) -> Table:
    table = Table(
        title="BayesElo ratings",
        caption=(
            f"prior {fit.prior:g} virtual draws, first-mover advantage {tenths(fit.advantage)}, "
            f"drawelo {tenths(fit.drawelo)}, scale {fit.scale:.4f}, "
            f"{confidence_percent(fit.confidence)} intervals"
        ),
    )
    for header in ("Rank", "Bot", "Rating", "±"):
        table.add_column(header, justify="left" if header == "Bot" else "right")
    if paired is not None:
        table.add_column("± paired", justify="right")
    for header in ("Games", "Score %", "Draws %", "LOS next"):
        table.add_column(header, justify="right")
    if paired is not None:
        table.add_column("LOS paired", justify="right")
    paired_by_name = paired.by_name() if paired is not None else {}
    paired_los = _paired_los(fit, paired) if paired is not None else {}
    for row in fit.table():
        cells: list[str | Text] = [
            str(row.rank),
            Text(visible(row.name)),
            f"{row.rating:.1f}",
            f"{row.interval:.1f}",
        ]
        if paired is not None:
            cells.append(f"{paired_by_name[row.name][1]:.1f}")
        cells += [
            str(row.games),
            f"{100 * row.score:.1f}",
            f"{100 * row.draw_rate:.1f}",
            "" if row.los_next is None else f"{row.los_next:.3f}",
        ]
        if paired is not None:
            los = paired_los.get(row.name)
            cells.append("" if los is None else f"{los:.3f}")
        table.add_row(*cells)
    return table


def _paired_los(fit: BayesEloFit, paired: PairedIntervals) -> dict[str, float | None]:
    """LOS over the next row under the paired covariance, the one of the "± paired" column
    (the "LOS next" column goes with the per-game "±")."""
    order = [row.name for row in fit.table()]
    below = dict(pairwise(order))
    return {name: paired.los(name, below[name]) if name in below else None for name in order}


def _pentanomial_table(paired_games: PairedIntervals, pentanomials: list[Pentanomial]) -> Table:
    table = Table(title=f"Deal pairs (paired intervals: {paired_games.method})")
    table.add_column("Pairing", justify="left")
    for points in ("0", "½", "1", "1½", "2"):
        table.add_column(points, justify="right")
    table.add_column("Score %", justify="right")
    for p in pentanomials:
        table.add_row(
            Text(visible(f"{p.player} v {p.opponent}")), *map(str, p.counts), f"{100 * p.score:.1f}"
        )
    return table


@app.command("fit")
def fit(
    file: Annotated[Path, typer.Argument(help="CSV file with the columns first,second,result.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    prior: Annotated[float, typer.Option(help="Virtual draws per player.")] = 2.0,
    offset: Annotated[float, typer.Option(help="Added to every displayed rating.")] = 0.0,
    confidence: Annotated[float, typer.Option(help="Level of the intervals.")] = 0.95,
    paired: Annotated[
        bool,
        typer.Option(
            "--paired",
            help="Rows 1+2, 3+4, ... are deal pairs (seats swapped): add pentanomial counts "
            "and intervals that treat each pair as one unit (sandwich estimate).",
        ),
    ] = False,
    advantage: Annotated[
        float | None,
        typer.Option(
            help="Fix the first-mover advantage at this many Elo instead of fitting it.",
            show_default="fitted",
        ),
    ] = None,
    drawelo: Annotated[
        float | None,
        typer.Option(
            help="Fix drawelo at this many Elo instead of fitting it (BayesElo's start: 97.3).",
            show_default="fitted",
        ),
    ] = None,
) -> None:
    """Fit BayesElo to FILE and print rank, bot, rating ± interval, games, score, LOS."""
    paired_result: PairedIntervals | None = None
    pentanomials: list[Pentanomial] = []
    # A parameter with no finite maximum (say, only draws: drawelo) is refused with advice to
    # fix it; these options are how.
    fixed_advantage = 0.0 if advantage is None else advantage
    fixed_drawelo = DEFAULT_DRAWELO if drawelo is None else drawelo
    try:
        games = read_games_csv(file)
        if paired:
            pairs = pair_consecutive(games)
            pentanomials = pentanomial_counts(pairs)
            paired_result = paired_intervals(
                pairs,
                prior=prior,
                offset=offset,
                confidence=confidence,
                fit_advantage=advantage is None,
                fit_drawelo=drawelo is None,
                advantage=fixed_advantage,
                drawelo=fixed_drawelo,
            )
            result = paired_result.fit
        else:
            result = fit_bayeselo(
                PairCounts.from_games(games),
                prior=prior,
                offset=offset,
                confidence=confidence,
                fit_advantage=advantage is None,
                fit_drawelo=drawelo is None,
                advantage=fixed_advantage,
                drawelo=fixed_drawelo,
            )
    except IsADirectoryError:
        raise _fail(f"{file} is a directory, not a CSV file") from None
    except OSError as exc:
        raise _fail(f"cannot read {file}: {exc.strerror or exc}") from None
    except RatingsError as exc:
        raise _fail(str(exc)) from None

    if as_json:
        data = result.to_dict()
        if paired_result is not None:
            paired_by_name = paired_result.by_name()
            paired_los = _paired_los(result, paired_result)
            for player in data["players"]:
                player["interval_paired"] = paired_by_name[player["name"]][1]
                player["los_next_paired"] = paired_los[player["name"]]
            data["paired_method"] = paired_result.method
            data["pentanomials"] = [
                {"player": p.player, "opponent": p.opponent, "counts": list(p.counts)}
                for p in pentanomials
            ]
        typer.echo(json.dumps(data, indent=2))
        return
    console = Console()
    console.print(_table(result, paired_result))
    if paired_result is not None:
        console.print(_pentanomial_table(paired_result, pentanomials))
