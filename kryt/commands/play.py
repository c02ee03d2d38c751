"""``kryt play A B``: a quick series between two bot folders, with the table of results."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.tournament.config import SandboxSettings
from arena.tournament.seats import SandboxSlot
from arena.tournament.seeds import draw_seed
from referee.protocol.messages import TimeControl
from referee.series import SeriesConfig, SeriesFormat, run_series
from sandbox import choose_backend, load_submission
from sandbox.death import printable

out = Console()
err = Console(stderr=True)


def play(
    bot_a: Annotated[Path, typer.Argument(help="First bot folder or archive (seat 0).")],
    bot_b: Annotated[Path, typer.Argument(help="Second bot folder or archive (seat 1).")],
    games: Annotated[int, typer.Option("--games", "-n", min=1, help="Games to play.")] = 10,
    seed: Annotated[
        int | None,
        typer.Option(help="Series seed (deals, first dealer); default: a secret random one."),
    ] = None,
    format: Annotated[SeriesFormat, typer.Option("--format")] = SeriesFormat.STANDARD,
    move_seconds: Annotated[float, typer.Option(help="Time per move.")] = 1.0,
    bank_seconds: Annotated[float, typer.Option(help="Time bank per game.")] = 10.0,
    backend: Annotated[str, typer.Option(help="Sandbox: auto, docker, bwrap or process.")] = "auto",
) -> None:
    """Play a series between your own bots (trusted: they may run without isolation)."""
    if seed is None:
        seed = draw_seed()
    config = SeriesConfig(
        games=games,
        seed=seed,
        format=format,
        time_control=TimeControl.from_seconds(move_seconds, bank_seconds),
    )
    sandbox = choose_backend(backend, allow_unsafe=False)
    err.print(f"sandbox: [bold]{sandbox.describe()}[/bold]")
    limits = SandboxSettings().limits()
    slots: list[SandboxSlot] = []
    # Archives are unpacked into a temporary folder that lives as long as the series.
    with tempfile.TemporaryDirectory(prefix="kryt-play-") as tmp:
        for seat, path in enumerate((bot_a, bot_b)):
            unpack = None if path.is_dir() else Path(tmp) / f"bot{seat}"
            submission = load_submission(path, unpack_dir=unpack)
            name = f"{submission.manifest.name} {submission.manifest.version}"
            if seat == 1 and slots and slots[0].name == name:
                name += " (2)"
            slots.append(
                SandboxSlot(
                    sandbox,
                    submission,
                    name=name,
                    limits=limits,
                    label=f"kryt-play-{os.getpid()}-{seat}",
                    trusted=True,
                )
            )
        try:
            result = run_series(config, (slots[0], slots[1]))
        finally:
            for slot in slots:
                slot.close()
    table = Table(title=f"{slots[0].name} (seat 0) vs {slots[1].name} (seat 1), seed {seed}")
    for column in ("game", "dealer", "winner", "ending", "actions", "details"):
        table.add_column(column)
    for number, record in sorted(result.games.items()):
        winner = "draw" if record.winner is None else slots[record.winner].name
        detail = ""
        if record.forfeit is not None:
            detail = f"seat {record.forfeit.seat}: {record.forfeit.detail}"
        table.add_row(
            str(number),
            str(record.dealer),
            Text(winner),
            record.ending.value,
            str(len(record.moves)),
            Text(printable(detail[:80])),
        )
    out.print(table)
    score = result.score(0)
    out.print(
        f"[bold]{slots[0].name}[/bold] +{score.wins} ={score.draws} -{score.losses}"
        f" [bold]{slots[1].name}[/bold]"
    )
    if format is SeriesFormat.DUPLICATE:
        out.print(f"pentanomial (0, ½, 1, 1½, 2 points per deal pair): {result.pentanomial(0)}")
