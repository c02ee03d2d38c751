"""``kryt tournament``: run a round robin, see its status, resume it after an interruption."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from arena.db import (
    Database,
    TournamentStatus,
    get_tournament,
    list_tournaments,
    submission_labels,
)
from arena.tournament.config import ConfigError, load_config
from arena.tournament.runner import SeriesOutcome, TournamentError, create
from arena.tournament.service import (
    ExecutorName,
    progress,
    tallies,
    tournament_config,
)
from arena.tournament.service import run_tournament as service_run
from arena.tournament.store import DEFAULT_STORE
from kryt.errors import ExitCode, UserError
from kryt.options import DatabaseOption, StoreOption, open_db
from leaderboard.standings import refit_and_store, standings
from referee.series import SeriesFormat
from sandbox import choose_backend

app = typer.Typer(help="Organisers: run round-robin tournaments.", no_args_is_help=True)
console = Console(stderr=True)
out = Console()


def _label(submission_id: int, labels: dict[int, tuple[str, str]]) -> str:
    name, version = labels.get(submission_id, (str(submission_id), "?"))
    return f"{name} {version}"


def series_table(tournament_id: int, db: Database) -> Table:
    """One row per series: the pair, games, W/D/L from the first bot's side, forfeits (at a
    classic table: the seats in order and each seat's losses)."""
    if tournament_config(tournament_id, db).ruleset != "default":
        return _table_series_table(tournament_id, db)
    table = Table(title=f"Series of tournament {tournament_id}")
    for column in ("bot A", "bot B", "games", "A wins", "draws", "B wins", "forfeits", "status"):
        table.add_column(column, justify="left" if column.startswith("bot") else "right")
    with db.read_session() as session:
        labels = submission_labels(session=session)
    for tally in tallies(tournament_id, db):
        table.add_row(
            Text(_label(tally.submission_a_id, labels)),
            Text(_label(tally.submission_b_id, labels)),
            f"{tally.played}/{tally.games_planned}",
            str(tally.a_wins),
            str(tally.draws),
            str(tally.b_wins),
            str(tally.forfeits),
            tally.status,
        )
    return table


def _table_series_table(tournament_id: int, db: Database) -> Table:
    from arena.tournament.table_runner import table_tallies

    table = Table(title=f"Series of tournament {tournament_id} (tables)")
    for column in ("seats (clockwise)", "games", "losses by seat", "draws", "forfeits", "status"):
        table.add_column(column, justify="left" if column.startswith("seats") else "right")
    with db.read_session() as session:
        labels = submission_labels(session=session)
    for tally in table_tallies(tournament_id, db):
        table.add_row(
            Text(", ".join(_label(s, labels) for s in tally.seats)),
            f"{tally.played}/{tally.games_planned}",
            " ".join(str(n) for n in tally.losses),
            str(tally.draws),
            str(tally.forfeits),
            tally.status,
        )
    return table


ExecutorOption = Annotated[
    ExecutorName,
    typer.Option("--executor", help="local (threads here) or dask (a Dask cluster)."),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler", help="Dask scheduler address (tcp://HOST:8786); none: a local cluster."
    ),
]
WorkerStoreOption = Annotated[
    str | None,
    typer.Option("--worker-store", help="Where Dask workers unpack bots (default: --store)."),
]

REFIT_SECONDS = 30.0
"""Ratings are refitted from the database as series finish, at most this often."""


def run_tournament(
    tournament_id: int,
    db: Database,
    *,
    executor: ExecutorName = ExecutorName.local,
    scheduler: str | None = None,
    worker_store: str | None = None,
    store: Path = DEFAULT_STORE,
    quiet: bool = False,
) -> list[SeriesOutcome]:
    """Play every unfinished series with a progress bar; Ctrl-C stops cleanly (resumable)."""
    config = tournament_config(tournament_id, db)
    done, planned = progress(tournament_id, db)
    started = time.monotonic()
    last_refit = started
    bar_columns = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("games"),
        TextColumn("{task.fields[rate]:.1f} games/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
    )
    with bar_columns:
        bar = bar_columns.add_task(escape(config.name), total=planned, completed=done, rate=0.0)
        played = 0

        def on_game(series_id: int, number: int, record: object) -> None:
            nonlocal played
            played += 1
            rate = played / max(1e-9, time.monotonic() - started)
            bar_columns.update(bar, advance=1, rate=rate)

        def on_series(outcome: SeriesOutcome) -> None:
            nonlocal last_refit
            if time.monotonic() - last_refit >= REFIT_SECONDS:
                last_refit = time.monotonic()
                refit_and_store(db, tournament_id=tournament_id)

        result = service_run(
            tournament_id,
            db,
            executor=executor,
            scheduler=scheduler,
            worker_store=worker_store,
            store=store,
            on_game=on_game,
            on_series=on_series,
            say=lambda line: console.print(Text(line)),
        )
    refit_and_store(db, tournament_id=tournament_id)
    return result.outcomes


def _report(tournament_id: int, db: Database, outcomes: list[SeriesOutcome]) -> int:
    out.print(series_table(tournament_id, db))
    aborted = [o for o in outcomes if o.status == "aborted"]
    for outcome in aborted:
        console.print(f"[red]series {outcome.series_id} aborted:[/red] {outcome.message}")
    from kryt.commands.leaderboard import print_standings, standings_table

    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament_id)
        name = get_tournament(tournament_id, session=session).name
    title = f"Leaderboard: {name} (tournament {tournament_id})"
    print_standings(out, lambda width: standings_table(board, title=title, width=width))
    if aborted:
        console.print(f"resume with: kryt tournament resume {tournament_id}")
        return ExitCode.FAILED
    return ExitCode.OK


@app.command()
def run(
    bots: Annotated[
        list[str] | None,
        typer.Argument(help="Bot folders or archives, or stored bots as NAME or NAME@VERSION."),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="TOML file with the settings (flags override it)."),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Tournament name.")] = None,
    games: Annotated[
        int | None, typer.Option("--games", "-n", help="Games per pair (per seating at tables).")
    ] = None,
    ruleset: Annotated[
        str | None,
        typer.Option(help="default (pairs) or classic (tables of --table-size, 2-4 seats)."),
    ] = None,
    table_size: Annotated[
        int | None, typer.Option("--table-size", help="Seats per table (classic ruleset).")
    ] = None,
    format: Annotated[
        SeriesFormat | None, typer.Option("--format", help="standard or duplicate.")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Tournament seed (deals, dealers).")] = None,
    move_seconds: Annotated[float | None, typer.Option(help="Time per move.")] = None,
    bank_seconds: Annotated[float | None, typer.Option(help="Time bank per game.")] = None,
    turn_limit: Annotated[int | None, typer.Option(help="Actions before a draw.")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-j")] = None,
    backend: Annotated[
        str | None, typer.Option(help="Sandbox: auto, docker, bwrap or process.")
    ] = None,
    unsafe: Annotated[
        bool | None,
        typer.Option("--unsafe", help="Allow untrusted bots in the unisolated process backend."),
    ] = None,
    memory_mb: Annotated[int | None, typer.Option(help="Memory limit per bot (MiB).")] = None,
    pids: Annotated[int | None, typer.Option(help="Process/thread limit per bot.")] = None,
    executor: ExecutorOption = ExecutorName.local,
    scheduler: SchedulerOption = None,
    worker_store: WorkerStoreOption = None,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Run a round robin: every pair of bots plays a series; results go to the database."""
    try:
        config = load_config(
            config_file,
            bots=bots or None,
            name=name,
            games_per_pair=games,
            ruleset=ruleset,
            table_size=table_size,
            format=format.value if format else None,
            seed=seed,
            move_seconds=move_seconds,
            bank_seconds=bank_seconds,
            turn_limit=turn_limit,
            concurrency=concurrency,
            backend=backend,
            allow_unsafe=unsafe,
            memory_mb=memory_mb,
            pids=pids,
        )
    except ConfigError as exc:
        raise UserError(str(exc), hint="see docs/configuration.md") from None
    db = open_db(database)
    if executor is ExecutorName.local:
        # Check the sandbox before storing anything, so a missing engine fails fast.
        choose_backend(config.sandbox.backend, config.sandbox.allow_unsafe)
    try:
        tournament_id = create(config, db=db, store=store)
    except TournamentError as exc:
        raise UserError(str(exc)) from None
    console.print(f"tournament [bold]{tournament_id}[/bold] created ({config.name})")
    outcomes = run_tournament(
        tournament_id,
        db,
        executor=executor,
        scheduler=scheduler,
        worker_store=worker_store,
        store=store,
    )
    raise typer.Exit(_report(tournament_id, db, outcomes))


@app.command()
def resume(
    tournament_id: Annotated[int, typer.Argument(help="The tournament to finish.")],
    executor: ExecutorOption = ExecutorName.local,
    scheduler: SchedulerOption = None,
    worker_store: WorkerStoreOption = None,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Finish an interrupted tournament: plays exactly the games that are missing."""
    db = open_db(database, create=False)
    with db.read_session() as session:
        tournament = get_tournament(tournament_id, session=session)
        status = tournament.status
    if status == TournamentStatus.FINISHED.value:
        console.print(f"tournament {tournament_id} is already finished")
    outcomes = run_tournament(
        tournament_id,
        db,
        executor=executor,
        scheduler=scheduler,
        worker_store=worker_store,
        store=store,
    )
    raise typer.Exit(_report(tournament_id, db, outcomes))


@app.command()
def status(
    tournament_id: Annotated[
        int | None, typer.Argument(help="One tournament (default: all).")
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Tournaments with their progress, or one tournament's series."""
    db = open_db(database, create=False)
    if tournament_id is not None:
        out.print(series_table(tournament_id, db))
        return
    table = Table(title="Tournaments")
    for column in ("id", "name", "status", "games", "created"):
        table.add_column(column)
    with db.read_session() as session:
        tournaments = [
            (t.id, t.name, t.status, t.created_at) for t in list_tournaments(session=session)
        ]
    for tid, name, state, created in tournaments:
        assert tid is not None
        done, planned = progress(tid, db)
        table.add_row(str(tid), name, state, f"{done}/{planned}", f"{created:%Y-%m-%d %H:%M}")
    out.print(table)
