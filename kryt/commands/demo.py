"""``kryt demo``: the whole system in one command on the embedded defaults.

Registers the bundled example bots, runs a round robin among them in the best sandbox
available (their code is trusted, so a machine without Docker or bubblewrap still runs it),
stores everything in ``./kryt.db``, prints the leaderboard and writes the web page.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from arena.tournament.config import load_config
from arena.tournament.runner import create
from arena.tournament.service import ExecutorName
from arena.tournament.store import EXAMPLES
from kryt.commands.tournament import _prepare, _report, run_tournament
from kryt.errors import UserError
from kryt.options import DatabaseOption, open_db

err = Console(stderr=True)


def demo(
    games: Annotated[int, typer.Option("--games", "-n", min=2, help="Games per pair.")] = 20,
    seed: Annotated[
        int | None, typer.Option(help="Tournament seed (default: a secret random one).")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, help="Series played at the same time.")
    ] = 2,
    html: Annotated[
        Path, typer.Option(help="Where to write the static leaderboard web page.")
    ] = Path("kryt-leaderboard"),
    database: DatabaseOption = None,
) -> None:
    """Run a round-robin tournament of the bundled example bots and show the leaderboard."""
    bots = sorted(str(p) for p in EXAMPLES.iterdir() if (p / "bot.toml").is_file())
    config = load_config(
        None,
        name="demo",
        bots=bots,
        games_per_pair=games,
        seed=seed,
        concurrency=concurrency,
        # Quick moves keep the demo short: the Monte-Carlo bot thinks for a share of the limit.
        move_seconds=0.2,
        bank_seconds=2.0,
    )
    from leaderboard.export import ExportError, export_html, prepare_folder

    made = not html.exists()
    try:  # before any game is played: a folder that cannot be written is one line, exit 2
        prepare_folder(html)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    try:
        db = open_db(database)
    except BaseException:
        if made:  # a refused database leaves no empty site behind
            shutil.rmtree(html, ignore_errors=True)
        raise
    err.print(f"database: {db.display_url}")
    tournament_id: int | None = None
    try:
        with _prepare(
            config, executor=ExecutorName.local, scheduler=None, worker_store=None
        ) as prepared:
            tournament_id = create(config, db=db, submitted_by="kryt demo")
            result = run_tournament(tournament_id, db, prepared=prepared)
    except BaseException:
        # Stopped or refused before the tournament was stored (Ctrl-C while the sandbox is
        # checked, no sandbox at all): as `kryt tournament run`, no empty arena or site stays.
        if tournament_id is None and db.discard_if_unused() and made:
            shutil.rmtree(html, ignore_errors=True)
        raise
    code = _report(tournament_id, db, result)
    try:
        summary = export_html(db, html)
    except ExportError as exc:  # a write failed after the check (a full disk, say)
        raise UserError(
            str(exc),
            hint="the games are stored: `kryt leaderboard --html DIR` (with the same"
            " --database) writes the page again",
        ) from None
    index = (summary.directory / "index.html").resolve()
    err.print(f"web page written to [bold]{index.as_uri()}[/bold] ({summary.pages} pages)")
    err.print(
        "live web page: [bold]kryt leaderboard serve[/bold] (then open http://127.0.0.1:8000)"
    )
    raise typer.Exit(code)
