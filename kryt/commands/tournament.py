"""``kryt tournament``: run a round robin or a gauntlet, see its status, resume it after an
interruption, extend it with more games, change a stored setting, cancel it.

Exit status always matches the state: 0 only when the tournament is finished; 1 when series
are left (with the resume command); 130 after Ctrl-C, SIGTERM or SIGHUP, at any moment from
the start (one line; the resume command once the tournament is stored); 2
for a bad setting (nothing is stored) or an imported tournament (nothing to run); 3 when the
sandbox, the Dask cluster or the tournament itself (another live run holds it) is
unavailable.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
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
from sqlmodel import Session

from arena.db import (
    Database,
    DatabaseUnavailableError,
    NotFoundError,
    SeriesStatus,
    TournamentStatus,
    get_tournament,
    list_tournaments,
    never_played,
    series_of_tournament,
    submission_labels,
    unfinished_series,
)
from arena.db.engine import lost_connection
from arena.tournament.config import ConfigError, TournamentConfig, load_config
from arena.tournament.lease import RunLease, TournamentBusyError
from arena.tournament.runner import SeriesOutcome, TournamentError, check_bot_time_early
from arena.tournament.service import (
    ClusterUnavailableError,
    ExecutorName,
    ImportedTournamentError,
    LadderTournamentError,
    PreparedExecutor,
    RunResult,
    cancel,
    change_settings,
    create_tournament,
    prepare_executor,
    progress,
    runnable_config,
    series_shown,
    tallies,
    tournament_config,
    tournament_ruleset,
    tournament_state,
    tournament_states,
)
from arena.tournament.service import extend as extend_tournament
from arena.tournament.service import run_tournament as service_run
from arena.tournament.store import DEFAULT_STORE
from kryt.errors import (
    ExitCode,
    Interrupted,
    UserError,
    classify,
    interrupted_by,
    signals_held,
    signals_stop_like_ctrl_c,
)
from kryt.options import (
    MAX_ID,
    BackendAliasOption,
    DatabaseOption,
    StoreOption,
    open_db,
    refuse_contradictory_time,
)
from kryt.texts import DETAIL_LINES, detail_lines, result_by
from leaderboard.standings import refit_and_store, standings
from referee.record import GameRecord
from referee.series import SeriesFormat
from sandbox.death import printable

app = typer.Typer(
    help="Organisers: run round-robin and gauntlet tournaments.", no_args_is_help=True
)
console = Console(stderr=True)
out = Console()


def _label(submission_id: int, labels: dict[int, tuple[str, str]]) -> str:
    name, version = labels.get(submission_id, (str(submission_id), "?"))
    return f"{name} {version}"


_STATUS_WIDTH = max(len(status) for status in SeriesStatus)
"""A series' status is never cut short on a narrow terminal (the bots' names wrap instead)."""


def series_table(tournament_id: int, db: Database, *, stopped: bool) -> Table:
    """One row per series: the pair, games, W/D/L from the first bot's side, forfeits (at a
    classic table: the seats in order and each seat's losses). ``stopped``: no run plays the
    tournament now, so a series stored as running shows ``stopped`` (:func:`series_shown`)."""
    if tournament_ruleset(tournament_id, db) != "default":
        return _table_series_table(tournament_id, db, stopped=stopped)
    table = Table(title=f"Series of tournament {tournament_id}")
    for column in ("bot A", "bot B", "games", "A wins", "draws", "B wins", "forfeits", "status"):
        table.add_column(
            column,
            justify="left" if column.startswith("bot") else "right",
            min_width=_STATUS_WIDTH if column == "status" else None,
            overflow="fold" if column.startswith("bot") else "ellipsis",
        )
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
            series_shown(tally.status, stopped=stopped),
        )
    return table


def print_series_table(tournament_id: int, db: Database, *, stopped: bool) -> None:
    """Print :func:`series_table`: the bots' names folded on a terminal, whole when the
    output is piped or captured (as the standings are)."""
    from kryt.commands.leaderboard import print_standings

    table = series_table(tournament_id, db, stopped=stopped)
    print_standings(out, lambda _width: table)


def _table_series_table(tournament_id: int, db: Database, *, stopped: bool) -> Table:
    from arena.tournament.table_runner import table_tallies

    table = Table(title=f"Series of tournament {tournament_id} (tables)")
    for column in ("seats (clockwise)", "games", "losses by seat", "draws", "forfeits", "status"):
        table.add_column(
            column,
            justify="left" if column.startswith("seats") else "right",
            min_width=_STATUS_WIDTH if column == "status" else None,
            overflow="fold" if column.startswith("seats") else "ellipsis",
        )
    with db.read_session() as session:
        labels = submission_labels(session=session)
    for tally in table_tallies(tournament_id, db):
        table.add_row(
            Text(", ".join(_label(s, labels) for s in tally.seats)),
            f"{tally.played}/{tally.games_planned}",
            " ".join(str(n) for n in tally.losses),
            str(tally.draws),
            str(tally.forfeits),
            series_shown(tally.status, stopped=stopped),
        )
    return table


class LiveLines:
    """What a run prints as results come in: one line per game (``verbose``: bots, game
    number, result, ending, moves, a forfeit's first line), else one line per finished
    series with its score. Bot text is printed as plain text with control characters made
    visible (never as Rich markup). Thread-safe: games end on the executor's threads.

    Its reads (the bots' names, a series' score) ride out a lost database connection as the
    run's own do (:meth:`~arena.db.Database.retrying`); setting ``cancel`` (the run's stop)
    ends such a wait with the DatabaseUnavailableError."""

    def __init__(
        self,
        tournament_id: int,
        db: Database,
        *,
        verbose: bool,
        console: Console,
        cancel: threading.Event | None = None,
    ):
        self.tournament_id = tournament_id
        self.db = db
        self.verbose = verbose
        self.console = console
        self.cancel = cancel
        self._lock = threading.Lock()

        def read(session: Session) -> dict[int, tuple[str, ...]]:
            labels = submission_labels(session=session)
            return {
                s.id: tuple(_label(sid, labels) for sid in s.seat_ids)
                for s in series_of_tournament(tournament_id, session=session)
                if s.id is not None
            }

        self.seats = db.retrying(
            read, what=f"reading the bots of tournament {tournament_id}", read=True, cancel=cancel
        )

    def _names(self, series_id: int) -> tuple[str, ...]:
        return self.seats.get(series_id, ("seat 0", "seat 1"))

    def game(self, series_id: int, number: int, record: GameRecord) -> None:
        """The line of one game (printed only when verbose)."""
        if not self.verbose:
            return
        names = self._names(series_id)
        if record.ruleset == "default":
            result = "draw" if record.winner is None else f"{names[record.winner]} wins"
        else:
            result = "draw" if record.loser is None else f"{names[record.loser]} loses"
        detail = ""
        if record.forfeit is not None:
            first = record.forfeit.detail.splitlines()[0] if record.forfeit.detail else ""
            detail = f" ({names[record.forfeit.seat]}: {first})"[:160]
        line = (
            f"series {series_id} game {number}: {' vs '.join(names)}:"
            f" {result_by(result, record.ending.value)}, {len(record.moves)} moves{detail}"
        )
        with self._lock:
            self.console.print(Text(printable(line)), soft_wrap=True)

    def series(self, outcome: SeriesOutcome) -> None:
        """The line of a finished (or stopped) series with its score so far."""
        if self.verbose and outcome.status == "finished":
            return  # every game was printed already
        names = self._names(outcome.series_id)
        score = self.db.retrying_call(
            lambda: self._score(outcome.series_id),
            what=f"reading the score of series {outcome.series_id}",
            cancel=self.cancel,
        )
        line = f"series {outcome.series_id} {outcome.status}: {score or ' vs '.join(names)}"
        with self._lock:
            self.console.print(Text(printable(line)), soft_wrap=True)

    def _score(self, series_id: int) -> str:
        names = self._names(series_id)
        if len(names) == 2 and tournament_config(self.tournament_id, self.db).ruleset == "default":
            for tally in tallies(self.tournament_id, self.db):
                if tally.series_id == series_id:
                    return (
                        f"{names[0]} vs {names[1]} +{tally.a_wins} ={tally.draws}"
                        f" -{tally.b_wins} ({tally.played}/{tally.games_planned} games)"
                    )
            return ""
        from arena.tournament.table_runner import table_tallies

        for table in table_tallies(self.tournament_id, self.db):
            if table.series_id == series_id:
                losses = ", ".join(
                    f"{name} {lost}" for name, lost in zip(names, table.losses, strict=False)
                )
                return (
                    f"{', '.join(names)}: losses {losses}, {table.draws} draws"
                    f" ({table.played}/{table.games_planned} games)"
                )
        return ""


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

VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="One line per game as it ends (default: one per finished series)."
    ),
]

TakeOverOption = Annotated[
    bool,
    typer.Option(
        "--take-over",
        help="Take the tournament from a run that holds it but is dead (its lease not expired).",
    ),
]

REFIT_SECONDS = 30.0
"""Ratings are refitted from the database as series finish, at most this often."""


def _sigterm_stops_like_ctrl_c(received: list[int]) -> AbstractContextManager[None]:
    """While a run plays, SIGTERM (``kill``, ``docker stop``, systemd) and SIGHUP (the
    terminal closed, an SSH session dropped) stop it the way Ctrl-C does: they raise
    KeyboardInterrupt in the main thread, so the executors stop every game and bot and the
    command exits 130 with the resume command. A SIGHUP ignored on purpose (``nohup``) stays
    ignored. Each signal received is appended to ``received`` (to name it in the message).
    See :func:`kryt.errors.signals_stop_like_ctrl_c`."""
    return signals_stop_like_ctrl_c(received)


@contextmanager
def _stops_cleanly(kept: Callable[[], str]) -> Iterator[None]:
    """The whole of ``run``, ``resume`` and ``extend`` stops on SIGTERM and SIGHUP as on
    Ctrl-C, from its first line (``kryt`` itself handles them while the command is
    imported): sandbox probing, opening the database and storing the tournament included,
    not only the games. A stop the run itself did not report (it says what it kept and
    raises Interrupted) is one line ``interrupted by SIGTERM: ...`` ending in ``kept()``
    (what is stored, with the resume command when there is something to resume); exit 130.
    """
    try:
        with _sigterm_stops_like_ctrl_c([]):
            yield
    except KeyboardInterrupt:
        console.print(f"interrupted{interrupted_by()}: {kept()}", soft_wrap=True)
        raise Interrupted from None


@dataclass
class _Kept:
    """What a run, resume or extend has stored so far, for the line a stop prints: the
    tournament once it is stored (else ``nothing``), and whether it was finished (a stop
    while its ratings are fitted or its report printed leaves nothing to resume)."""

    nothing: str
    tournament_id: int | None = None
    finished: bool = False

    def __call__(self) -> str:
        if self.tournament_id is None:
            return self.nothing
        if self.finished:
            return f"tournament {self.tournament_id} is finished and every game is saved"
        return (
            "the games played so far are saved; resume with: "
            f"kryt tournament resume {self.tournament_id}"
        )


@contextmanager
def _discarded_unless_stored(db: Database, kept: _Kept) -> Iterator[None]:
    """A run refused or stopped before its tournament is stored (a misspelt bot name, an
    invalid bot folder, no sandbox) removes the SQLite file it created itself: a typo
    leaves no empty arena behind (:meth:`Database.discard_if_unused`)."""
    try:
        yield
    except BaseException:
        if kept.tournament_id is None:
            db.discard_if_unused()
        raise


def _check_executor_flags(
    executor: ExecutorName, scheduler: str | None, worker_store: str | None
) -> None:
    """``--scheduler`` and ``--worker-store`` are for the Dask executor: with the local one
    they would be ignored, so they are refused (one line, exit 2) before anything is done.
    A ``--scheduler`` that is no address (``tcp://HOST:8786``) is refused the same way: it is
    a typo to fix, not a scheduler to start."""
    if executor is ExecutorName.dask:
        from arena.tournament.scheduler_address import scheduler_address_problem

        problem = None if scheduler is None else scheduler_address_problem(scheduler)
        if problem is not None:
            raise UserError(
                f"--scheduler {scheduler!r} is not a Dask scheduler address: {problem}",
                hint="see docs/scaling.md",
            )
        return
    given = [
        flag
        for flag, value in (("--scheduler", scheduler), ("--worker-store", worker_store))
        if value is not None
    ]
    if given:
        them = "it" if len(given) == 1 else "them"
        raise UserError(
            f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for --executor dask,"
            f" not --executor {executor.value}: add --executor dask, or leave {them} out",
            hint="see docs/configuration.md",
        )


def _time_flags(
    specs: list[str],
    *,
    move_seconds: float | None,
    bank_seconds: float | None,
    increment_seconds: float | None,
) -> tuple[float | None, float | None, float | None, dict[str, str]]:
    """The time-control flags as ``(move, bank, increment, per-bot controls)``.

    ``--time MOVE+BANK[+INCREMENT]`` sets all three for every bot, so it is refused beside
    ``--move-seconds``, ``--bank-seconds`` or ``--increment-seconds``, given twice, or given
    twice for one bot: which one would win is a guess (one ``error:`` line, exit 2)."""
    from referee.timecontrol import parse_time_spec

    shared: list[str] = []
    bot_time: dict[str, str] = {}
    for spec in specs:
        if "=" in spec:
            key, _, value = spec.rpartition("=")
            bot = key.strip()
            if bot in bot_time:
                raise UserError(
                    f"--time gives {bot!r} two controls ({bot_time[bot]!r} and {value!r}):"
                    " give each bot one",
                    hint="see docs/configuration.md#time-controls",
                )
            bot_time[bot] = value
        else:
            shared.append(spec)
    refuse_contradictory_time(shared, move_seconds, bank_seconds, increment_seconds)
    if not shared:
        return move_seconds, bank_seconds, increment_seconds, bot_time
    try:
        control = parse_time_spec(shared[0], setting=True)
    except ValueError as exc:
        raise UserError(f"--time: {exc}") from None
    return control.move_seconds, control.bank_seconds, control.increment_seconds, bot_time


def _prepare(
    config: TournamentConfig,
    *,
    executor: ExecutorName,
    scheduler: str | None,
    worker_store: str | None,
) -> PreparedExecutor:
    """Check the sandbox or the Dask cluster before anything is stored (one line if not)."""
    try:
        return prepare_executor(
            config,
            executor=executor,
            scheduler=scheduler,
            worker_store=worker_store,
            say=lambda line: console.print(Text(line)),
            # Dask logs its own tracebacks when the scheduler goes away or a run is
            # interrupted; the run reports that in one line with what to do (``kryt
            # --verbose`` shows Dask's logs).
            quiet=not logging.getLogger().isEnabledFor(logging.INFO),
        )
    except ClusterUnavailableError as exc:
        raise UserError(
            str(exc),
            code=ExitCode.UNAVAILABLE,
            hint="start the scheduler and at least one worker (see docs/scaling.md)",
        ) from None


NEVER_PLAYED_LINES = DETAIL_LINES
"""Lines of a bot's start-up failure (how its process stood, its last output) shown under
its "never played" line; ``kryt replay`` shows them all."""


def _marked_finished(tournament_id: int, db: Database) -> bool:
    """Whether the database holds the tournament as finished (False when it cannot say)."""
    try:
        return tournament_state(tournament_id, db).status == TournamentStatus.FINISHED.value
    except Exception:  # a stop's message must not fail on a database in trouble
        return False


def run_tournament(
    tournament_id: int,
    db: Database,
    *,
    prepared: PreparedExecutor,
    store: Path = DEFAULT_STORE,
    lease: RunLease | None = None,
    quiet: bool = False,
    verbose: bool = False,
    kept: _Kept | None = None,
) -> RunResult:
    """Play every unfinished series with a progress bar, printing results as they come: one
    line per game with ``verbose``, else one line per finished series with its score.
    ``lease``: the tournament's, already taken (else the run takes it). ``kept`` learns
    whether the run finished the tournament (see :func:`_stops_cleanly`).

    Ctrl-C or SIGTERM stops cleanly: every bot is stopped, the games in progress are not
    recorded, and the command exits 130 with the resume command.
    """
    # The run's stop: a lost lease sets it (Ctrl-C interrupts this thread), and it ends the
    # wait of a read below that rides out a lost connection. Until service_run reports the
    # resumed run's lease itself, its loss sets the stop directly.
    stop = threading.Event()
    if lease is not None:
        lease.on_lost = lambda _reason: stop.set()
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
    signals: list[int] = []
    try:
        with _sigterm_stops_like_ctrl_c(signals), bar_columns:
            # In the try: an outage longer than the retries is reported as one mid-run is.
            config = db.retrying_call(
                lambda: tournament_config(tournament_id, db),
                what=f"reading the settings of tournament {tournament_id}",
                cancel=stop,
            )
            lines = LiveLines(tournament_id, db, verbose=verbose, console=console, cancel=stop)
            done, planned = db.retrying_call(
                lambda: progress(tournament_id, db),
                what=f"reading the progress of tournament {tournament_id}",
                cancel=stop,
            )
            bar = bar_columns.add_task(escape(config.name), total=planned, completed=done, rate=0.0)
            played = 0

            def on_game(series_id: int, number: int, record: GameRecord) -> None:
                nonlocal played
                played += 1
                rate = played / max(1e-9, time.monotonic() - started)
                bar_columns.update(bar, advance=1, rate=rate)
                if not quiet:
                    lines.game(series_id, number, record)

            def on_series(outcome: SeriesOutcome) -> None:
                nonlocal last_refit
                if not quiet:
                    lines.series(outcome)
                if time.monotonic() - last_refit >= REFIT_SECONDS:
                    last_refit = time.monotonic()
                    try:
                        refit_and_store(db, tournament_id=tournament_id)
                    except DatabaseUnavailableError as exc:
                        # Ratings only, fitted again as the run ends: not worth waiting for
                        # the database, nor retried (a retried snapshot may be stored twice).
                        if not lost_connection(exc):
                            raise

            result = service_run(
                tournament_id,
                db,
                prepared=prepared,
                store=store,
                lease=lease,
                stop=stop,
                on_game=on_game,
                on_series=on_series,
                say=lambda line: console.print(Text(line)),
            )
    except TournamentBusyError as exc:
        raise UserError(str(exc), code=ExitCode.UNAVAILABLE) from None
    except DatabaseUnavailableError as exc:
        raise _database_lost(exc, tournament_id) from None
    except KeyboardInterrupt:
        by = f" by {signal.Signals(signals[0]).name}" if signals else ""
        if _marked_finished(tournament_id, db):
            # The stop came as the run let go of a finished tournament (its bots were being
            # stopped): nothing is left to resume.
            said = f"tournament {tournament_id} is finished and every game is saved"
        else:
            said = (
                "the games played so far are saved; resume with: "
                f"kryt tournament resume {tournament_id}"
            )
        console.print(f"interrupted{by}: {said}", soft_wrap=True)
        raise Interrupted from None
    if kept is not None:
        kept.finished = result.finished
    try:
        refit_and_store(db, tournament_id=tournament_id)
        # And the board of every tournament: `kryt leaderboard` shows a stored fit whose
        # inputs are still those of the database instead of fitting again (and loading SciPy).
        refit_and_store(db)
    except DatabaseUnavailableError as exc:  # a full disk stops the series, then this
        raise _database_lost(exc, tournament_id) from None
    return result


def _database_lost(exc: DatabaseUnavailableError, tournament_id: int) -> UserError:
    """The error of a run whose database went away (a server restart, a full disk): what was
    recorded stays, and the run is resumed as after any other stop."""
    said = classify(exc) or UserError(str(exc), code=ExitCode.UNAVAILABLE)
    resume = (
        "the games recorded so far are saved; once the database is back: "
        f"kryt tournament resume {tournament_id}"
    )
    return UserError(
        str(said), code=said.code, hint=f"{said.hint}; {resume}" if said.hint else resume
    )


def _report(tournament_id: int, db: Database, result: RunResult) -> int:
    """Print the series and the leaderboard; the exit code matching the tournament's state."""
    print_series_table(tournament_id, db, stopped=True)  # the run is over
    for outcome in result.outcomes:
        # Why a series aborted, or why one stopped short when the run itself was not
        # stopped (a failure of ours, the lease lost): its message may quote a bot.
        if outcome.status in ("aborted", "interrupted") and outcome.message:
            console.print(
                Text.assemble(
                    (
                        f"series {outcome.series_id} {outcome.status}: ",
                        "red" if outcome.status == "aborted" else "yellow",
                    ),
                    printable(outcome.message),
                ),
                soft_wrap=True,
            )
    from kryt.commands.leaderboard import print_standings, standings_table

    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament_id)
        name = get_tournament(tournament_id, session=session).name
    title = f"Leaderboard: {name} (tournament {tournament_id})"
    print_standings(out, lambda width: standings_table(board, title=title, width=width))
    for problem in result.problems:
        console.print(f"[red]stopped early:[/red] {escape(problem)}", soft_wrap=True)
    with db.read_session() as session:
        idle = never_played(tournament_id, session=session)
        labels = submission_labels(session=session)
    for submission_id, detail in sorted(idle.items()):
        bot, version = labels.get(submission_id, (str(submission_id), "?"))
        # The reason on the line; how its process stood and its last output (the detail's
        # other lines) below it, indented, at most NEVER_PLAYED_LINES of them.
        first, below = detail_lines(detail, below=NEVER_PLAYED_LINES, more=": kryt replay GAME")
        console.print(
            Text(f"{bot} {version} never played: every game was its start-up failure"
                 f" ({first})", style="red"),
            soft_wrap=True,
        )  # fmt: skip
        for line in below:
            console.print(Text(line), soft_wrap=True)
    if result.finished:
        return ExitCode.FAILED if idle else ExitCode.OK
    if tournament_state(tournament_id, db).status == TournamentStatus.CANCELLED.value:
        console.print(f"tournament {tournament_id} was cancelled")
        return ExitCode.FAILED
    console.print(
        f"{result.unfinished} series not finished; resume with: "
        f"kryt tournament resume {tournament_id}",
        soft_wrap=True,
    )
    return ExitCode.FAILED


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
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", "-j", help="Series played at the same time (1-1024)."),
    ] = None,
    backend: Annotated[
        str | None, typer.Option(help="Sandbox: auto, docker, bwrap or process.")
    ] = None,
    sandbox_alias: BackendAliasOption = None,
    unsafe: Annotated[
        bool | None,
        typer.Option("--unsafe", help="Allow untrusted bots in the unisolated process backend."),
    ] = None,
    memory_mb: Annotated[int | None, typer.Option(help="Memory limit per bot (MiB).")] = None,
    pids: Annotated[int | None, typer.Option(help="Process/thread limit per bot.")] = None,
    grace_seconds: Annotated[
        float | None, typer.Option(help="Per-game transport allowance (seconds).")
    ] = None,
    clock: Annotated[
        str | None,
        typer.Option(help="What moves are charged: wall (default) or cpu (the bot's CPU time)."),
    ] = None,
    gauntlet: Annotated[
        str | None,
        typer.Option(
            "--gauntlet",
            help="A gauntlet: this bot (folder, archive or stored NAME\\[@VERSION]) plays every"
            " other bot, which never meet each other (at tables: every table includes it).",
        ),
    ] = None,
    increment_seconds: Annotated[
        float | None, typer.Option(help="Added to a bot's bank after each of its moves.")
    ] = None,
    time_specs: Annotated[
        list[str] | None,
        typer.Option(
            "--time",
            help="MOVE+BANK[+INCREMENT] in seconds (1+10+0.1) for every bot, or"
            " BOT=MOVE+BANK[+INCREMENT] for one bot (BOT: NAME or NAME@VERSION). Repeatable.",
            show_default=False,
        ),
    ] = None,
    book: Annotated[
        Path | None,
        typer.Option(
            "--book",
            help="A deal book (docs/games-format.md): its decks in order, each played twice"
            " with the hands swapped (duplicate format).",
            show_default=False,
        ),
    ] = None,
    executor: ExecutorOption = ExecutorName.local,
    scheduler: SchedulerOption = None,
    worker_store: WorkerStoreOption = None,
    verbose: VerboseOption = False,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Run a round robin, or with --gauntlet one bot against the field.

    In a round robin every pair of bots plays a series; in a gauntlet only the gauntlet bot's
    pairs do. Results go to the database and are printed as they come (each game with -v).
    """
    kept = _Kept("nothing was stored")
    with _stops_cleanly(kept):
        _check_executor_flags(executor, scheduler, worker_store)
        move_seconds, bank_seconds, increment_seconds, bot_time = _time_flags(
            time_specs or [],
            move_seconds=move_seconds,
            bank_seconds=bank_seconds,
            increment_seconds=increment_seconds,
        )
        try:
            config = load_config(
                config_file,
                bots=bots or None,
                gauntlet=gauntlet,
                name=name,
                games_per_pair=games,
                ruleset=ruleset,
                table_size=table_size,
                format=format.value if format else None,
                seed=seed,
                move_seconds=move_seconds,
                bank_seconds=bank_seconds,
                grace_seconds=grace_seconds,
                clock=clock,
                increment_seconds=increment_seconds,
                bot_time=bot_time or None,
                book=str(book) if book else None,
                turn_limit=turn_limit,
                concurrency=concurrency,
                backend=sandbox_alias if sandbox_alias is not None else backend,
                allow_unsafe=unsafe,
                memory_mb=memory_mb,
                pids=pids,
            )
            # Bots given as folders or archives are known without the database: a [bot_time]
            # naming none of them is refused before anything is opened or stored.
            check_bot_time_early(config)
        except ConfigError as exc:
            raise UserError(str(exc), hint="see docs/configuration.md") from None
        db = open_db(database)
        db.check_writable()  # a read-only file: one line before the sandbox is probed
        # Check the sandbox / the cluster before storing anything: a missing engine, an
        # unreachable scheduler or a cluster without workers leaves no tournament behind.
        with (
            _discarded_unless_stored(db, kept),
            _prepare(
                config, executor=executor, scheduler=scheduler, worker_store=worker_store
            ) as prepared,
        ):
            if config.time_control.clock == "cpu" and prepared.cpu_clock_problem:
                # Charged on the wall clock anyway: the stored config and every record say so.
                config = replace(config, time_control=replace(config.time_control, clock="wall"))
                console.print(
                    Text(
                        f"warning: clock cpu: {prepared.cpu_clock_problem}; this tournament"
                        " charges moves wall time (clock wall)"
                    ),
                    soft_wrap=True,
                )
            try:
                # A stop signal waits until the tournament is stored (or not): the line it
                # prints says which, and offers the resume command only for a stored one.
                with signals_held():
                    tournament_id = create_tournament(
                        config,
                        db=db,
                        store=store,
                        untrusted_problem=prepared.untrusted_problem,
                        runtime_problem=prepared.runtime_problem,
                    )
                    kept.tournament_id = tournament_id
            except TournamentError as exc:
                raise UserError(str(exc)) from None
            console.print(
                f"tournament [bold]{tournament_id}[/bold] created ({escape(config.name)})"
            )
            result = run_tournament(
                tournament_id, db, prepared=prepared, store=store, verbose=verbose, kept=kept
            )
        raise typer.Exit(_report(tournament_id, db, result))


@app.command()
def resume(
    tournament_id: Annotated[
        int, typer.Argument(min=1, max=MAX_ID, help="The tournament to finish.")
    ],
    executor: ExecutorOption = ExecutorName.local,
    scheduler: SchedulerOption = None,
    worker_store: WorkerStoreOption = None,
    take_over: TakeOverOption = False,
    verbose: VerboseOption = False,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Finish an interrupted tournament: plays exactly the games that are missing."""
    kept = _Kept("nothing was played", tournament_id)
    with _stops_cleanly(kept):
        _check_executor_flags(executor, scheduler, worker_store)
        db = open_db(database, create=False)
        state = tournament_state(tournament_id, db)
        if state.imported:
            raise ImportedTournamentError(tournament_id, ImportedTournamentError.NOTHING_TO_RESUME)
        if state.ladder:
            raise LadderTournamentError(tournament_id, LadderTournamentError.RESUME)
        if state.status == TournamentStatus.CANCELLED.value:
            raise UserError(f"tournament {tournament_id} was cancelled; it cannot be resumed")
        if state.status == TournamentStatus.FINISHED.value:
            console.print(f"tournament {tournament_id} is already finished")
            with db.read_session() as session:
                if not unfinished_series(tournament_id, session=session):
                    return  # nothing to play: no sandbox to probe, no empty progress bar
        if state.live_lease is not None and not take_over:
            # Refused before anything else is prepared (the lease itself decides again below).
            raise UserError(str(TournamentBusyError(state.live_lease)), code=ExitCode.UNAVAILABLE)
        _run_stored(
            tournament_id,
            db,
            executor=executor,
            scheduler=scheduler,
            worker_store=worker_store,
            take_over=take_over,
            verbose=verbose,
            store=store,
            kept=kept,
        )


def _run_stored(
    tournament_id: int,
    db: Database,
    *,
    executor: ExecutorName,
    scheduler: str | None,
    worker_store: str | None,
    take_over: bool,
    verbose: bool,
    store: Path,
    kept: _Kept,
) -> None:
    """Run what is left of a stored tournament, report, and exit with its state's code."""
    config = runnable_config(tournament_id, db)  # a bad stored setting: one line, exit 2
    db.check_writable()  # a read-only file: one line before the sandbox is probed
    # The lease before the sandbox: of two runs started at once, the one refused prints
    # nothing else (and builds nothing).
    lease = RunLease(db, tournament_id, take_over=take_over)
    taken = False
    try:
        with signals_held():  # a stop comes once the lease is taken, or not
            lease.acquire()
            taken = True
    except TournamentBusyError as exc:
        raise UserError(str(exc), code=ExitCode.UNAVAILABLE) from None
    except KeyboardInterrupt:
        if taken:  # given back at once, not left to expire
            lease.release()
        raise
    try:
        with _prepare(
            config, executor=executor, scheduler=scheduler, worker_store=worker_store
        ) as prepared:
            result = run_tournament(
                tournament_id,
                db,
                prepared=prepared,
                store=store,
                lease=lease,
                verbose=verbose,
                kept=kept,
            )
    finally:
        lease.release()
    raise typer.Exit(_report(tournament_id, db, result))


@app.command()
def extend(
    tournament_id: Annotated[
        int, typer.Argument(min=1, max=MAX_ID, help="The tournament to add games to.")
    ],
    games: Annotated[
        int,
        typer.Option(
            "--games",
            "-n",
            help="Games to add per pair (per seating at tables).",
            show_default=False,
        ),
    ],
    executor: ExecutorOption = ExecutorName.local,
    scheduler: SchedulerOption = None,
    worker_store: WorkerStoreOption = None,
    verbose: VerboseOption = False,
    database: DatabaseOption = None,
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Add N games per pair to a finished (or interrupted) tournament, then play them.

    The games are new series (one per pair, or per seating at tables) with a fresh secret
    seed whose commitment is printed; they are played like resume and the leaderboard covers
    every game.
    """
    kept = _Kept("nothing was added")
    with _stops_cleanly(kept):
        _check_executor_flags(executor, scheduler, worker_store)
        db = open_db(database, create=False)
        try:
            with signals_held():  # a stop says whether the extension was stored
                extension = extend_tournament(tournament_id, games, db)
                kept.tournament_id = tournament_id
        except TournamentBusyError as exc:
            raise UserError(str(exc), code=ExitCode.UNAVAILABLE) from None
        except NotFoundError as exc:
            raise UserError(str(exc), hint="see kryt tournament status") from None
        console.print(
            f"tournament {tournament_id}: extension {extension.round} adds"
            f" {extension.series_added} series ({extension.games_added} games); seed"
            f" commitment {extension.seed_commitment}",
            soft_wrap=True,
        )
        _run_stored(
            tournament_id,
            db,
            executor=executor,
            scheduler=scheduler,
            worker_store=worker_store,
            take_over=False,
            verbose=verbose,
            store=store,
            kept=kept,
        )


@app.command()
def status(
    tournament_id: Annotated[
        int | None, typer.Argument(min=1, max=MAX_ID, help="One tournament (default: all).")
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Tournaments with their progress and who runs them, or one tournament's series."""
    db = open_db(database, create=False)
    if tournament_id is not None:
        state = tournament_state(tournament_id, db)
        print_series_table(tournament_id, db, stopped=state.shown == "stopped")
        if state.imported:
            out.print(
                Text(
                    f"status: {state.shown}; imported from a game file: its games only,"
                    " nothing to resume"
                )
            )
            return
        if state.ladder:
            out.print(
                Text(
                    "status: ladder; the arena's ladder: `kryt arena serve` schedules and plays"
                    " its series (GET /api/ladder shows what runs), not `kryt tournament`"
                )
            )
            return
        line = f"status: {state.shown}; runner: {state.runner}"
        if state.shown == "stopped":
            # A run started it and none plays it now (interrupted, died, or its database
            # failed): the games recorded are kept, and resume plays the rest.
            line += f"; resume with: kryt tournament resume {tournament_id}"
        out.print(Text(line))
        return
    table = Table(title="Tournaments")
    for column in ("id", "name", "status", "runner", "games", "created"):
        table.add_column(column)
    with db.read_session() as session:
        tournaments = [(t.id, t.name, t.created_at) for t in list_tournaments(session=session)]
    states = tournament_states(db)
    for tid, name, created in tournaments:
        assert tid is not None
        done, planned = progress(tid, db)
        state = states[tid]
        table.add_row(
            str(tid),
            Text(name),
            f"{state.shown} (imported)" if state.imported else state.shown,
            Text("kryt arena serve" if state.ladder else state.runner),
            f"{done}/{planned}",
            f"{created:%Y-%m-%d %H:%M}",
        )
    out.print(table)


@app.command("cancel")
def cancel_command(
    tournament_id: Annotated[
        int, typer.Argument(min=1, max=MAX_ID, help="The tournament to cancel.")
    ],
    database: DatabaseOption = None,
) -> None:
    """Cancel a tournament that has not finished: nothing more is played or recorded (a run
    playing it stops within seconds); its recorded games stay."""
    db = open_db(database, create=False)
    stopped = cancel(tournament_id, db)
    console.print(f"tournament {tournament_id} cancelled ({stopped} series stopped)")


@app.command("set")
def set_command(
    tournament_id: Annotated[
        int, typer.Argument(min=1, max=MAX_ID, help="The tournament to change.")
    ],
    assignments: Annotated[
        list[str],
        typer.Argument(
            help="KEY=VALUE, e.g. sandbox.memory_mb=512 time_control.move_seconds=0.5 "
            'concurrency=4 name="spring cup"',
            show_default=False,
        ),
    ],
    database: DatabaseOption = None,
) -> None:
    """Change stored settings of a tournament that has not finished (checked like a new
    tournament's); bots, games per pair, format, seed, ruleset, table size, gauntlet and
    book cannot change."""
    db = open_db(database, create=False)
    try:
        config = change_settings(tournament_id, assignments, db)
    except ConfigError as exc:
        raise UserError(str(exc), hint="see docs/configuration.md") from None
    for text in assignments:
        console.print(f"tournament {tournament_id}: {escape(text.strip())}")
    console.print(
        f"resume with: kryt tournament resume {tournament_id} ({escape(config.name)})",
        soft_wrap=True,
    )
