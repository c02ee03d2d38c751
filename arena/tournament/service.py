"""The tournament service: run a stored tournament to the end, report its progress.

The command line (and any other front end) only parses, calls these functions and prints:
the orchestration (sweeping what an earlier run left behind, the executor, the status of
the tournament afterwards) and every count of results live here and in :mod:`arena.db`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlmodel import Session

from arena.db import (
    ConflictError,
    Database,
    LeaseInfo,
    LeaseLostError,
    SeriesStatus,
    SeriesTally,
    TournamentStatus,
    all_leases,
    cancel_tournament,
    get_lease,
    get_submission,
    get_tournament,
    hold_lease,
    series_of_tournament,
    series_tallies,
    set_tournament_status,
    unfinished_series,
    update_tournament_config,
)
from arena.db.leases import LeaseBusyError
from arena.tournament.config import (
    MAX_GAMES_PER_PAIR,
    STORED_ONLY,
    ConfigError,
    TournamentConfig,
    is_imported,
    parse_assignment,
    with_changes,
)
from arena.tournament.executors import LocalExecutor, SeriesCallback
from arena.tournament.ladder import is_ladder
from arena.tournament.lease import RunLease, TournamentBusyError, holder_gone
from arena.tournament.runner import (
    GameCallback,
    SeriesOutcome,
    SeriesTask,
    TournamentError,
    create,
    label_prefix,
    refuse_unrunnable,
    resolve_bots,
    tasks_for,
)
from arena.tournament.seeds import draw_seed
from arena.tournament.store import DEFAULT_STORE
from sandbox import choose_backend, sweep_leftovers

log = logging.getLogger(__name__)

DASK_CONNECT_SECONDS = 15.0
"""How long a run waits for a Dask scheduler to answer before it gives up (creating nothing)."""


class ExecutorName(StrEnum):
    """Where series run."""

    local = "local"
    dask = "dask"


class ClusterUnavailableError(TournamentError):
    """The Dask cluster cannot run the tournament (no scheduler, no worker, no sandbox)."""


class StoredConfigError(TournamentError):
    """The stored configuration of a tournament is not valid (stored by an older release)."""


class ImportedTournamentError(TournamentError):
    """The tournament was created by ``kryt games import``: it holds games read from a file
    and no settings, so it cannot be run, resumed, extended or changed."""

    NOTHING_TO_RESUME = "it has nothing to resume"
    CANNOT_EXTEND = "it cannot be extended"
    NO_SETTINGS = "it has no settings"

    def __init__(self, tournament_id: int, consequence: str) -> None:
        super().__init__(f"tournament {tournament_id} was imported from a game file: {consequence}")
        self.tournament_id = tournament_id


class LadderTournamentError(TournamentError):
    """The tournament is the arena's ladder (:mod:`arena.tournament.ladder`): ``kryt arena
    serve`` creates it, schedules its series and plays them, so ``kryt tournament`` cannot
    run, resume, extend, change or cancel it."""

    RESUME = "resumed"
    EXTEND = "extended"
    SET = "changed"
    CANCEL = "cancelled"

    def __init__(self, tournament_id: int, what: str) -> None:
        super().__init__(
            f"tournament {tournament_id} is the arena's ladder: `kryt arena serve` schedules"
            f" and plays its series; it cannot be {what} with `kryt tournament`"
        )
        self.tournament_id = tournament_id


def _stored(tournament_id: int, db: Database) -> dict[str, Any]:
    with db.read_session() as session:
        return dict(get_tournament(tournament_id, session=session).config)


def tournament_ruleset(tournament_id: int, db: Database) -> str:
    """The ruleset a tournament's series play (``default`` for an imported tournament), read
    without checking the rest of its stored configuration."""
    ruleset = _stored(tournament_id, db).get("ruleset", "default")
    return ruleset if isinstance(ruleset, str) else "default"


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended: every series outcome, whether the tournament is finished, and why
    it stopped early (lease lost, scheduler lost, cancelled), if it did."""

    outcomes: list[SeriesOutcome]
    finished: bool
    unfinished: int = 0
    problems: list[str] = field(default_factory=list)


def tournament_config(tournament_id: int, db: Database) -> TournamentConfig:
    """The stored configuration of a tournament (StoredConfigError when it is not valid,
    ImportedTournamentError when it was imported: it has none)."""
    stored = _stored(tournament_id, db)
    if is_imported(stored):
        raise ImportedTournamentError(tournament_id, ImportedTournamentError.NO_SETTINGS)
    if is_ladder(stored):
        raise LadderTournamentError(tournament_id, LadderTournamentError.RESUME)
    try:
        return TournamentConfig.from_json(stored)
    except ConfigError as exc:
        raise StoredConfigError(
            f"tournament {tournament_id} has an invalid stored setting: {exc}; change it with "
            f"`kryt tournament set {tournament_id} KEY=VALUE`"
        ) from None


def entered_bots(tournament_id: int, db: Database) -> list[tuple[str, str]]:
    """``(name, version)`` of every bot entered in the tournament (those of its series), in
    submission order."""
    with db.read_session() as session:
        ids = sorted(
            {
                submission
                for series in series_of_tournament(tournament_id, session=session)
                for submission in series.seat_ids
            }
        )
        rows = [get_submission(submission, session=session) for submission in ids]
        return [(str(row.manifest.get("name", "")), row.version) for row in rows]


def runnable_config(tournament_id: int, db: Database) -> TournamentConfig:
    """The stored configuration, checked as a run needs it: valid on its own
    (:func:`tournament_config`) and with every ``[bot_time]`` entry naming an entered bot.
    StoredConfigError (with the ``set`` command that fixes it) otherwise: a release that did
    not check ``set`` stored entries that would silently leave a bot on the default."""
    config = tournament_config(tournament_id, db)
    if config.bot_time:
        try:
            config.check_bot_time(entered_bots(tournament_id, db))
        except ConfigError as exc:
            raise StoredConfigError(
                f"tournament {tournament_id} has an invalid stored setting: {exc}; change it"
                f" with `kryt tournament set {tournament_id} 'bot_time={{...}}'`"
            ) from None
    return config


def progress(tournament_id: int, db: Database) -> tuple[int, int]:
    """(games recorded, games planned) of a tournament."""
    with db.read_session() as session:
        tallies = series_tallies(tournament_id, session=session)
    return sum(t.played for t in tallies), sum(t.games_planned for t in tallies)


def tallies(tournament_id: int, db: Database) -> list[SeriesTally]:
    """Each series of the tournament with its counted results (see :func:`series_tallies`)."""
    with db.read_session() as session:
        return series_tallies(tournament_id, session=session)


# ---------------------------------------------------------------------------- creating


def create_tournament(
    config: TournamentConfig,
    *,
    db: Database,
    store: Path = DEFAULT_STORE,
    untrusted_problem: str | None = None,
    runtime_problem: Callable[[str], str | None] | None = None,
) -> int:
    """Store the bots and a new tournament (see :func:`arena.tournament.runner.create`);
    returns its id. When the bots cannot be entered because two references name the same
    bot version (``builtin:greedy greedy@1.0.0``), the TournamentError names them."""
    try:
        return create(
            config,
            db=db,
            store=store,
            untrusted_problem=untrusted_problem,
            runtime_problem=runtime_problem,
        )
    except TournamentError:
        twice = _entered_twice(config.bots, db=db, store=store)
        if twice:
            raise TournamentError(twice) from None
        raise


def _entered_twice(refs: Sequence[str], *, db: Database, store: Path) -> str:
    """Which references name a bot version another one names already ("" when none do, or
    when a reference cannot be resolved: the error at hand is another one). Resolving a
    reference again is idempotent; this runs only once creating has failed."""
    seen: dict[int, str] = {}
    for ref in refs:
        try:
            (submission,) = resolve_bots([ref], db=db, store=store, submitted_by="organiser")
        except Exception:  # its own error is the one to report
            return ""
        if submission in seen:
            with db.read_session() as session:
                row = get_submission(submission, session=session)
                bot = f"{row.manifest.get('name', '?')} {row.version}"
            return (
                f"{seen[submission]!r} and {ref!r} are the same bot version ({bot}):"
                " enter each bot version once"
            )
        seen[submission] = ref
    return ""


# ---------------------------------------------------------------------------- executors


class PreparedExecutor:
    """An executor whose machines were checked (sandbox available, cluster answering), so a
    run can fail before anything is stored. Close it when done (``with``)."""

    def __init__(
        self,
        name: ExecutorName,
        local: LocalExecutor | None,
        dask: Any,
        where: str,
        untrusted_problem: str | None = None,
        cpu_clock_problem: str | None = None,
        runtime_problem: Callable[[str], str | None] | None = None,
    ) -> None:
        self.name = name
        self._local = local
        self._dask = dask
        self.where = where
        self.untrusted_problem = untrusted_problem
        """Why this machine's sandbox refuses untrusted bots (local executor), or None."""
        self.cpu_clock_problem = cpu_clock_problem
        """Why this machine's sandbox cannot keep a CPU clock (local executor), or None."""
        self.runtime_problem = runtime_problem
        """Why this machine's sandbox cannot run a bot of a runtime (local executor:
        :meth:`~sandbox.backend.Backend.runtime_problem`), or None."""

    def sweep(self, prefix: str) -> int:
        """Remove sandboxes of dead runners with this label prefix (on every worker)."""
        if self._dask is not None:
            removed: int = self._dask.sweep_workers(prefix)
            return removed
        return sweep_leftovers(prefix)

    def run(
        self,
        tasks: Sequence[SeriesTask],
        *,
        stop: threading.Event,
        on_game: GameCallback | None,
        on_series: SeriesCallback | None,
    ) -> list[SeriesOutcome]:
        """Play the tasks (see :class:`~arena.tournament.executors.Executor`)."""
        if self._dask is not None:
            outcomes: list[SeriesOutcome] = self._dask.run(
                tasks, stop=stop, on_game=on_game, on_series=on_series
            )
            return outcomes
        assert self._local is not None
        return self._local.run(tasks, stop=stop, on_game=on_game, on_series=on_series)

    @property
    def scheduler_lost(self) -> bool:
        """True when a Dask run lost its scheduler."""
        return bool(self._dask is not None and self._dask.scheduler_lost)

    def close(self) -> None:
        """Disconnect from the cluster (if any)."""
        if self._dask is not None:
            self._dask.close()

    def __enter__(self) -> PreparedExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_executor(
    config: TournamentConfig,
    *,
    executor: ExecutorName = ExecutorName.local,
    scheduler: str | None = None,
    worker_store: str | None = None,
    say: Callable[[str], None] = lambda _line: None,
    connect_seconds: float = DASK_CONNECT_SECONDS,
    quiet: bool = False,
) -> PreparedExecutor:
    """Check where the series will run, before anything is stored: this machine's sandbox
    (local), or the scheduler, its workers and their sandboxes (Dask). Raises
    ClusterUnavailableError (one line) when the cluster cannot run the tournament.
    ``quiet``: distributed's own log messages are silenced (see
    :class:`~arena.tournament.dask_executor.DaskExecutor`)."""
    if executor is ExecutorName.local:
        backend = choose_backend(config.sandbox.backend, config.sandbox.allow_unsafe)
        say(f"sandbox: {backend.describe()}")
        return PreparedExecutor(
            executor,
            LocalExecutor(config.concurrency),
            None,
            "here",
            untrusted_problem=backend.untrusted_problem(),
            cpu_clock_problem=backend.cpu_clock_problem(),
            runtime_problem=backend.runtime_problem,
        )
    from arena.tournament.dask_executor import (
        DaskExecutor,
        DaskExecutorError,
        SchedulerUnavailableError,
    )

    try:
        dask_executor = DaskExecutor(
            scheduler,
            workers=config.concurrency,
            worker_store=worker_store,
            connect_timeout=connect_seconds,
            quiet=quiet,
        )
    except DaskExecutorError as exc:
        raise ClusterUnavailableError(str(exc)) from None
    try:
        sandboxes = dask_executor.worker_sandboxes(
            config.sandbox.backend, config.sandbox.allow_unsafe
        )
    except (DaskExecutorError, SchedulerUnavailableError, OSError, TimeoutError) as exc:
        dask_executor.close()
        raise ClusterUnavailableError(f"{exc}".splitlines()[0] or type(exc).__name__) from None
    except BaseException:
        dask_executor.close()
        raise
    for worker, description in sorted(sandboxes.items()):
        say(f"worker {worker}: sandbox {description}")
    return PreparedExecutor(executor, None, dask_executor, scheduler or "a local cluster")


# ---------------------------------------------------------------------------- running


def _mark(
    tournament_id: int,
    status: TournamentStatus,
    *,
    db: Database,
    runner_id: str,
    cancel: threading.Event | None = None,
) -> None:
    """Set the tournament's status, only while this run holds its lease (checked in the same
    transaction); retried across a lost connection (setting it twice is the same; setting
    ``cancel`` ends the wait and raises)."""

    def write(session: Session) -> None:
        hold_lease(tournament_id, runner_id, session=session)
        set_tournament_status(tournament_id, status, session=session)

    db.retrying(write, what=f"marking tournament {tournament_id} {status.value}", cancel=cancel)


def _charge_wall_clock(
    tournament_id: int, *, db: Database, runner_id: str, cancel: threading.Event | None = None
) -> bool:
    """Store ``time_control.clock = "wall"`` for a tournament about to be played where the
    sandbox measures no CPU time (while this run holds its lease); False when it is finished
    (nothing will be played). Retried across a lost connection as :func:`_mark` is (storing
    it twice is the same)."""

    def write(session: Session) -> bool:
        hold_lease(tournament_id, runner_id, session=session)
        tournament = get_tournament(tournament_id, session=session)
        if tournament.status == TournamentStatus.FINISHED.value:
            return False
        stored = dict(tournament.config)
        stored["time_control"] = dict(stored.get("time_control", {})) | {"clock": "wall"}
        update_tournament_config(tournament_id, stored, name=tournament.name, session=session)
        return True

    return db.retrying(
        write, what=f"storing clock wall for tournament {tournament_id}", cancel=cancel
    )


def _all_finished(
    tournament_id: int, db: Database, cancel: threading.Event | None = None
) -> tuple[bool, int]:
    """(every series finished, how many are not), read across a lost connection as the
    series' own reads and writes are (setting ``cancel`` ends the wait and raises)."""

    def read(session: Session) -> int:
        series = series_of_tournament(tournament_id, session=session)
        return sum(1 for s in series if s.status != SeriesStatus.FINISHED.value)

    left = db.retrying(
        read, what=f"reading the series of tournament {tournament_id}", read=True, cancel=cancel
    )
    return left == 0, left


def run_tournament(
    tournament_id: int,
    db: Database,
    *,
    executor: ExecutorName = ExecutorName.local,
    scheduler: str | None = None,
    worker_store: str | None = None,
    prepared: PreparedExecutor | None = None,
    store: Path = DEFAULT_STORE,
    take_over: bool = False,
    lease: RunLease | None = None,
    stop: threading.Event | None = None,
    on_game: GameCallback | None = None,
    on_series: SeriesCallback | None = None,
    say: Callable[[str], None] = lambda _line: None,
) -> RunResult:
    """Play every unfinished series of the tournament; marks it finished when none is left.

    Takes the tournament's lease first, before any executor is prepared (TournamentBusyError
    naming the holder when a live run has it; ``take_over`` takes it anyway), and holds it
    with a heartbeat until the end; ``lease`` is one the caller took already (and releases),
    so that a run which loses the race for it prepares nothing. If the lease is lost
    meanwhile (taken over, cancelled) the run stops and records nothing more. ``prepared``
    is an executor checked by :func:`prepare_executor` (else one is prepared from the stored
    settings and the executor arguments, and closed at the end).
    ``say`` receives one-line notes for the organiser. Setting ``stop`` ends the run cleanly
    (the games in progress are replayed on resume). The run's own database work (reading
    the tournament and its series, storing its status) is retried across a lost connection
    (:meth:`~arena.db.Database.retrying`); setting ``stop`` ends such a wait with the
    DatabaseUnavailableError. Afterwards the tournament is
    ``finished``, or ``pending`` (resumable; shown as ``stopped``, see
    :attr:`TournamentState.shown`) when series are left.
    """
    stop = stop or threading.Event()
    # What the run reads and stores here, before its series start and as it ends, rides out
    # a lost connection as the series' own reads and writes do (same window, same notes):
    # an outage then costs nothing. Each is safe to try again (a read, or a status written
    # under the lease). A stop (Ctrl-C, the lease lost) ends the wait and the error is
    # raised, as after an outage longer than the window: the command exits 3 with the
    # resume command.

    def read(session: Session) -> tuple[str, dict[str, Any]]:
        tournament = get_tournament(tournament_id, session=session)
        return tournament.status, dict(tournament.config)

    status, stored = db.retrying(
        read, what=f"reading tournament {tournament_id}", read=True, cancel=stop
    )
    if is_imported(stored):
        raise ImportedTournamentError(tournament_id, ImportedTournamentError.NOTHING_TO_RESUME)
    if is_ladder(stored):
        raise LadderTournamentError(tournament_id, LadderTournamentError.RESUME)
    if status == TournamentStatus.CANCELLED.value:
        raise TournamentError(f"tournament {tournament_id} was cancelled; it cannot be run")
    config = db.retrying_call(
        lambda: runnable_config(tournament_id, db),
        what=f"reading the settings of tournament {tournament_id}",
        cancel=stop,
    )
    problems: list[str] = []

    def lost(reason: str) -> None:
        if reason not in problems:  # the heartbeat and a caller's lease may both report it
            problems.append(reason)
        stop.set()

    with contextlib.ExitStack() as held:
        if lease is None:
            lease = held.enter_context(
                RunLease(db, tournament_id, take_over=take_over, on_lost=lost)
            )
        else:
            lease.on_lost = lost
            if lease.lost:  # before its reports had anywhere to go
                lost(lease.lost_reason)
        if prepared is None:
            prepared = prepare_executor(
                config, executor=executor, scheduler=scheduler, worker_store=worker_store,
                say=say,
            )  # fmt: skip
            held.callback(prepared.close)
        # As for a new tournament on this sandbox (``kryt tournament run``): moves are
        # charged on the wall clock anyway, so the stored config and every record say so.
        try:
            if (
                not lease.lost
                and config.time_control.clock == "cpu"
                and prepared.cpu_clock_problem
                and _charge_wall_clock(tournament_id, db=db, runner_id=lease.runner_id, cancel=stop)
            ):
                say(
                    f"warning: clock cpu: {prepared.cpu_clock_problem}; this tournament"
                    " charges moves wall time from now on (clock wall)"
                )
        except LeaseLostError as exc:  # taken over before its heartbeat noticed
            lost(str(exc))
        runner_id = lease.runner_id
        tasks = db.retrying_call(
            lambda: tasks_for(tournament_id, db=db, store=store, runner_id=runner_id),
            what=f"reading the series of tournament {tournament_id}",
            cancel=stop,
        )
        if prepared.runtime_problem is not None:
            # As for a new tournament: a bot this sandbox cannot start now (its runtime's
            # image was removed, another backend) is refused before the first game.
            seats = _unfinished_seats(tournament_id, db, stop)
            refuse_unrunnable(seats, prepared.runtime_problem, db=db, stored=True)
        swept = prepared.sweep(label_prefix(db.url, tournament_id))
        if swept:
            say(f"removed {swept} sandbox(es) left over by a dead run")
        finished, _ = _all_finished(tournament_id, db, stop)
        try:
            # A lease lost before the games (taken over while the executor started) stops
            # the run: nothing is marked or played, and the reason is reported once.
            if not finished and not lease.lost:
                try:
                    _mark(
                        tournament_id,
                        TournamentStatus.RUNNING,
                        db=db,
                        runner_id=runner_id,
                        cancel=stop,
                    )
                except LeaseLostError as exc:  # taken over before its heartbeat noticed
                    lost(str(exc))
            outcomes = prepared.run(tasks, stop=stop, on_game=on_game, on_series=on_series)
        finally:
            # Once the run is stopped (Ctrl-C, the lease lost, a series gave up on the
            # database) an outage here is not waited out: exit 3 with the resume command.
            finished, left = _all_finished(tournament_id, db, stop)
            if not lease.lost:
                try:
                    _mark(
                        tournament_id,
                        TournamentStatus.FINISHED if finished else TournamentStatus.PENDING,
                        db=db,
                        runner_id=runner_id,
                        cancel=stop,
                    )
                except LeaseLostError as exc:
                    problems.append(str(exc))
    if prepared.scheduler_lost:
        problems.append(f"lost the Dask scheduler at {prepared.where}")
    return RunResult(outcomes, finished, left, problems)


def _unfinished_seats(tournament_id: int, db: Database, stop: threading.Event) -> list[int]:
    """The submissions that play in the tournament's unfinished series, in id order."""

    def read(session: Session) -> list[int]:
        series = unfinished_series(tournament_id, session=session)
        return sorted({sid for s in series for sid in s.seat_ids})

    return db.retrying(
        read, what=f"reading the series of tournament {tournament_id}", read=True, cancel=stop
    )


# ---------------------------------------------------------------------------- managing


@dataclass(frozen=True, slots=True)
class TournamentState:
    """A tournament's stored status and who runs it, as ``status`` shows it."""

    tournament_id: int
    status: str
    lease: LeaseInfo | None
    imported: bool = False
    """Created by ``kryt games import``: its games only, nothing to run or resume."""
    ladder: bool = False
    """The arena's ladder: ``kryt arena serve`` plays it (with leases on its series, not on
    the tournament), nothing ``kryt tournament`` runs."""
    started: bool = False
    """A run has started it (its ``started_at`` is set)."""

    @property
    def live_lease(self) -> LeaseInfo | None:
        """The lease when a live run holds it (not expired, holder not known dead)."""
        if self.lease is None or self.lease.expired() or holder_gone(self.lease):
            return None
        return self.lease

    @property
    def shown(self) -> str:
        """The status as the organiser should read it: ``running`` only when a live run
        holds the lease; ``stopped`` when a run started it and none plays it now, however
        that run ended (it died, was interrupted, or its database failed: a run that stops
        early stores ``pending`` when it still can, and leaves ``running`` when it cannot);
        ``pending`` only for a tournament no run has started; the arena's ladder shows as
        ``ladder`` (whether a server plays it is not in the tournament's lease)."""
        if self.ladder:
            return "ladder"
        left = self.status in (TournamentStatus.RUNNING.value, TournamentStatus.PENDING.value)
        # An imported tournament's status is its game file's: nothing ran it here.
        stopped = self.status == TournamentStatus.RUNNING.value or (
            self.started and not self.imported
        )
        if left and stopped and self.live_lease is None:
            return "stopped"
        return self.status

    def series_shown(self, status: str) -> str:
        """A series' stored status as the organiser should read it (:func:`series_shown`)."""
        return series_shown(status, stopped=self.shown == "stopped")

    @property
    def runner(self) -> str:
        """Who runs it (``pid 12 on host h since 12:01``), or ``-``; for a run that is over,
        why: its process is known dead (``holder dead``), its lease expired, or both."""
        if self.lease is None:
            return "-"
        why = [
            reason
            for reason, holds in (
                ("holder dead", holder_gone(self.lease)),
                ("lease expired", self.lease.expired()),
            )
            if holds
        ]
        if why:
            return f"none (last: {self.lease.describe()}, {', '.join(why)})"
        return self.lease.describe()


def series_shown(status: str, *, stopped: bool) -> str:
    """A series' stored status as the organiser should read it: one stored as ``running``
    of a tournament that no run plays now (``stopped``) is ``stopped`` too (its games are
    kept and ``resume`` plays the rest)."""
    return "stopped" if stopped and status == SeriesStatus.RUNNING.value else status


def tournament_states(db: Database) -> dict[int, TournamentState]:
    """Every tournament's state, with its lease."""
    with db.read_session() as session:
        return states_in(session=session)


def states_in(*, session: Session) -> dict[int, TournamentState]:
    """Every tournament's state, with its lease, read in ``session``."""
    from arena.db import list_tournaments

    leases = all_leases(session=session)
    return {
        t.id: TournamentState(
            t.id,
            t.status,
            leases.get(t.id),
            is_imported(t.config),
            is_ladder(t.config),
            t.started_at is not None,
        )
        for t in list_tournaments(session=session)
        if t.id is not None
    }


def tournament_state(tournament_id: int, db: Database) -> TournamentState:
    """One tournament's state, with its lease."""
    with db.read_session() as session:
        tournament = get_tournament(tournament_id, session=session)
        return TournamentState(
            tournament_id,
            tournament.status,
            get_lease(tournament_id, session=session),
            is_imported(tournament.config),
            is_ladder(tournament.config),
            tournament.started_at is not None,
        )


def cancel(tournament_id: int, db: Database) -> int:
    """Cancel an unfinished tournament; returns how many series were stopped. A run that is
    playing it stops at its next heartbeat and records nothing more. LadderTournamentError
    for the arena's ladder (its servers would go on playing it)."""
    if tournament_state(tournament_id, db).ladder:
        raise LadderTournamentError(tournament_id, LadderTournamentError.CANCEL)
    try:
        with db.session() as session:
            return cancel_tournament(tournament_id, session=session)
    except LeaseBusyError:
        raise  # a run is in the middle of recording a game: try again (exit 3)
    except ConflictError as exc:
        raise TournamentError(str(exc)) from None


def change_settings(
    tournament_id: int, assignments: Sequence[str], db: Database
) -> TournamentConfig:
    """Change stored settings (``KEY=VALUE``) of a tournament that has not finished and that
    no live run holds; the result is checked as a whole, like a new tournament's: every
    setting, and every ``[bot_time]`` entry against the bots entered (ConfigError).
    TournamentBusyError while a live run holds it; ImportedTournamentError for an imported
    tournament (it has no settings)."""
    state = tournament_state(tournament_id, db)
    if state.imported:
        raise ImportedTournamentError(tournament_id, ImportedTournamentError.NO_SETTINGS)
    if state.ladder:
        raise LadderTournamentError(tournament_id, LadderTournamentError.SET)
    if not assignments:
        raise ConfigError("give at least one KEY=VALUE (e.g. sandbox.memory_mb=512)")
    changes = [parse_assignment(text) for text in assignments]
    if state.live_lease is not None:
        raise TournamentBusyError(
            state.live_lease, advice="change its settings after that run ends"
        )
    stored = _stored(tournament_id, db)
    records = {k: stored.pop(k) for k in STORED_ONLY if k in stored}  # not settings: kept
    config = with_changes(stored, changes)
    if config.bot_time:  # as `run` checks them: a misspelt bot would silently get the default
        config.check_bot_time(entered_bots(tournament_id, db))
    try:
        # Under the tournament's lease, as `extend` adds series: a run starting meanwhile is
        # refused (it would play the settings read before this change), and a database
        # session keeping the row locked is waited for a bounded time (LeaseBusyError).
        with RunLease(db, tournament_id) as lease, db.session() as session:
            hold_lease(tournament_id, lease.runner_id, session=session)
            update_tournament_config(
                tournament_id, config.to_json() | records, name=config.name, session=session
            )
    except TournamentBusyError as exc:
        raise TournamentBusyError(
            exc.lease, advice="change its settings after that run ends"
        ) from None
    except LeaseBusyError:  # a session keeps the row locked: exit 3, try again later
        raise
    except ConflictError as exc:
        raise TournamentError(str(exc)) from None
    return config


# ---------------------------------------------------------------------------- extending


@dataclass(frozen=True, slots=True)
class Extended:
    """What :func:`extend` added: the round's number (1 for the first extension), how many
    series, and the commitment to the round's secret seed (to publish)."""

    tournament_id: int
    round: int
    series_added: int
    games_added: int
    seed_commitment: str


def extend(tournament_id: int, games: int, db: Database) -> Extended:
    """Add ``games`` more games per pairing (per seating at a table) to a tournament that
    was not cancelled, as new series with seeds from a fresh secret seed (see
    :mod:`arena.tournament.extend`); the tournament is pending again, to be run like a
    resumed one.

    The series are added while this process holds the tournament's lease, so a live run
    of the tournament refuses the extension (TournamentBusyError naming it) and nothing can
    start it in between. TournamentError for a cancelled tournament or ``games`` outside
    [1, MAX_GAMES_PER_PAIR].
    """
    if isinstance(games, bool) or not 1 <= games <= MAX_GAMES_PER_PAIR:
        raise TournamentError(
            f"--games must be in [1, {MAX_GAMES_PER_PAIR}] (games per pair to add), got {games}"
        )
    with db.read_session() as session:
        tournament = get_tournament(tournament_id, session=session)
        status, stored = tournament.status, dict(tournament.config)
    if is_imported(stored):
        raise ImportedTournamentError(tournament_id, ImportedTournamentError.CANNOT_EXTEND)
    if is_ladder(stored):
        raise LadderTournamentError(tournament_id, LadderTournamentError.EXTEND)
    if status == TournamentStatus.CANCELLED.value:
        raise TournamentError(f"tournament {tournament_id} was cancelled; it cannot be extended")
    config = runnable_config(tournament_id, db)  # a bad stored setting: StoredConfigError
    if config.format.value == "duplicate" and games % 2:
        raise TournamentError(
            f"tournament {tournament_id} plays the duplicate format: add an even number of"
            f" games per pair, got {games}"
        )
    try:
        return _extend_under_lease(tournament_id, games, db)
    except TournamentBusyError as exc:
        raise TournamentBusyError(
            exc.lease, advice="extend it after that run ends, or stop that run first"
        ) from None


def _extend_under_lease(tournament_id: int, games: int, db: Database) -> Extended:
    from arena.db.tournaments import extend_tournament
    from arena.tournament.extend import (
        EXTENSIONS_KEY,
        extension_specs,
        extensions,
        new_extension,
    )

    with RunLease(db, tournament_id) as lease, db.session() as session:
        hold_lease(tournament_id, lease.runner_id, session=session)
        stored = dict(get_tournament(tournament_id, session=session).config)
        series = series_of_tournament(tournament_id, session=session)
        first = 1 + max((s.position for s in series), default=-1)
        round_ = new_extension(games, first, draw_seed())
        specs = extension_specs(series, games, round_.seed)
        if not specs:
            raise TournamentError(f"tournament {tournament_id} has no series to extend")
        stored[EXTENSIONS_KEY] = [e.to_json() for e in extensions(stored)] + [round_.to_json()]
        try:
            extend_tournament(tournament_id, specs, config=stored, session=session)
        except ConflictError as exc:
            raise TournamentError(str(exc)) from None
    return Extended(
        tournament_id,
        len(stored[EXTENSIONS_KEY]),
        len(specs),
        len(specs) * games,
        round_.seed_commitment,
    )
