"""Tournaments (round robin or gauntlet): create from a config, run every series through an
executor, resume, extend.

Games are committed one by one as they finish, so a run stopped at any point (Ctrl-C, a crash,
``kill -9``) loses at most the games in progress; ``resume`` plays exactly what is missing.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlmodel import Session

from arena.db import (
    Database,
    DatabaseError,
    DatabaseUnavailableError,
    GamePlace,
    LeaseLostError,
    NotFoundError,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    games_of_series,
    get_lease,
    get_series,
    get_submission,
    get_tournament,
    hold_lease,
    latest_submission,
    list_submissions,
    next_attempt,
    open_database,
    record_game,
    set_series_status,
    set_tournament_status,
    stored_record,
    unfinished_series,
)
from arena.db import SeriesFormat as DbSeriesFormat
from arena.db.engine import lost_connection, outage_notes, retry_lost_connection, retry_seconds
from arena.db.url import mask_url
from arena.tournament.config import TournamentConfig
from arena.tournament.gauntlet import gauntlet_pairs, gauntlet_seatings
from arena.tournament.seats import SandboxSlot
from arena.tournament.seeds import commitment, draw_seed
from arena.tournament.store import DEFAULT_STORE, bundled_hashes, materialize, register
from arena.tournament.tracebacks import with_traceback
from referee.protocol.messages import TimeControl
from referee.record import GameRecord
from referee.series import (
    SeriesAborted,
    SeriesConfig,
    SeriesFormat,
    SeriesInterrupted,
    run_series_async,
)
from sandbox import Submission, choose_backend, load_submission
from sandbox.backend import Backend
from sandbox.errors import CleanupError
from sandbox.submission import SubmissionError
from sdk.examples import resolve_bot_ref

log = logging.getLogger(__name__)

T = TypeVar("T")

GameCallback = Callable[[int, int, GameRecord], None]
"""``on_game(series_id, number, record)``, called after each game is committed."""


class TournamentError(ValueError):
    """The tournament cannot be created or run as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class SeriesTask:
    """Everything a worker needs to play one series; plain data, so it can travel."""

    database_url: str
    tournament_id: int
    series_id: int
    config: dict[str, object]
    store: str
    runner_id: str = ""
    """The run holding the tournament's lease; each game is recorded only while it still
    does (empty: no lease, for direct use of the runner by tests and tools)."""


@dataclass(frozen=True, slots=True)
class SeriesOutcome:
    """How a task ended: ``finished``, ``interrupted`` (resumable) or ``aborted``."""

    series_id: int
    status: str
    games_played: int
    message: str = ""


# ---------------------------------------------------------------------------- creating


def label_prefix(database_url: str, tournament_id: int) -> str:
    """The sandbox label prefix of a tournament's bots: unique per database and tournament.

    A sweep with it removes only sandboxes whose runner process is dead (the sandbox's own
    runner token, see :mod:`sandbox.runner`); never live bots of another run."""
    digest = hashlib.sha256(database_url.encode()).hexdigest()[:8]
    return f"kryt-{digest}-t{tournament_id}-"


def series_label(task: SeriesTask, seat: int) -> str:
    """The sandbox label of a seat's bot: the tournament's prefix, the run's id (the lease
    holder), the series and the seat; every sandbox names the run that started it."""
    run = f"r{task.runner_id}-" if task.runner_id else ""
    return (
        f"{label_prefix(task.database_url, task.tournament_id)}{run}s{task.series_id}-{'ab'[seat]}"
    )


LEASE_CHECK_SECONDS = 5.0
"""How often a series (on a Dask worker too) reads whether its run still holds the lease,
between games; every game's record checks it anyway."""


def series_seed(tournament_seed: int, first: int, second: int) -> int:
    """The seed of the series between submissions ``first`` and ``second``."""
    digest = hashlib.sha256(f"kryt:{tournament_seed}:{first}:{second}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


def resolve_bots(refs: Iterable[str], *, db: Database, store: Path, submitted_by: str) -> list[int]:
    """Submission ids for bot references: a folder or archive path is validated and stored
    (idempotently); ``name`` or ``name@version`` names a stored submission."""
    ids = []
    for ref in refs:
        path = Path(resolve_bot_ref(ref))  # builtin:NAME names a bundled example bot
        if path.exists():
            try:
                registered = register(path, db=db, submitted_by=submitted_by, store=store)
            except SubmissionError as exc:
                raise exc.located(ref) from None  # which of the bots given is refused
            ids.append(registered.submission_id)
            continue
        name, _, version = ref.partition("@")
        with db.read_session() as session:
            if version:
                found = [
                    s
                    for s in list_submissions(session=session, bot_name=name)
                    if s.version == version
                ]
                if not found:
                    raise TournamentError(f"no stored submission {name}@{version}")
                row = found[-1]
            else:
                try:
                    row = latest_submission(name, session=session)
                except NotFoundError:
                    raise TournamentError(
                        f"{ref!r} is neither a bot folder/archive nor a stored bot name"
                    ) from None
            assert row.id is not None
            ids.append(row.id)
    if len(set(ids)) != len(ids):
        raise TournamentError("the same bot version is entered twice")
    return ids


def entered_bots(refs: Iterable[str], *, db: Database | None) -> list[tuple[str, str]] | None:
    """``(name, version)`` of each bot reference, read without storing anything: a folder's or
    archive's ``bot.toml`` (an archive unpacked into a temporary folder), a stored name from
    ``db``. None when that cannot be told here: a reference that is no valid bot (storing it
    reports why), or a stored name with no ``db`` given."""
    entered = []
    for ref in refs:
        path = Path(resolve_bot_ref(ref))
        if path.exists():
            try:
                with tempfile.TemporaryDirectory(prefix="kryt-manifest-") as tmp:
                    unpack = None if path.is_dir() else Path(tmp) / "unpacked"
                    manifest = load_submission(path, unpack_dir=unpack).manifest
            except SubmissionError:
                return None
            entered.append((manifest.name, manifest.version))
            continue
        if db is None:
            return None
        name, _, version = ref.partition("@")
        if version:
            entered.append((name, version))
            continue
        with db.read_session() as session:
            try:
                entered.append((name, latest_submission(name, session=session).version))
            except NotFoundError:
                return None
    return entered


def check_bot_time_early(config: TournamentConfig, *, db: Database | None = None) -> None:
    """ConfigError when ``config``'s ``[bot_time]`` names no entered bot (or one twice), told
    before anything is stored (and, with ``db`` None, before the database is opened) where
    the entered bots can be read; :func:`create` checks again with what it stored."""
    if not config.bot_time:
        return
    entered = entered_bots(config.bots, db=db)
    if entered is not None:
        config.check_bot_time(entered)


def create(
    config: TournamentConfig,
    *,
    db: Database,
    store: Path = DEFAULT_STORE,
    submitted_by: str = "organiser",
    untrusted_problem: str | None = None,
    runtime_problem: Callable[[str], str | None] | None = None,
) -> int:
    """Store the bots and a tournament with one series per pair; returns its id.

    ``untrusted_problem`` (why the sandbox that will run it refuses untrusted bots) refuses,
    with TournamentError, a tournament with a bot that is not bundled with the arena, before
    the tournament is stored (its bots are stored: they are kept for another run).
    ``runtime_problem`` (that sandbox's :meth:`~sandbox.backend.Backend.runtime_problem`)
    refuses one with a bot whose runtime the sandbox cannot run, the same way."""
    check_bot_time_early(config, db=db)
    ids = resolve_bots(config.bots, db=db, store=store, submitted_by=submitted_by)
    if runtime_problem is not None:
        refuse_unrunnable(ids, runtime_problem, db=db)
    if untrusted_problem is not None:
        refuse_untrusted(ids, untrusted_problem, db=db)
    if config.bot_time:
        with db.read_session() as session:
            rows = [get_submission(sid, session=session) for sid in ids]
            config.check_bot_time([(str(r.manifest.get("name", "")), r.version) for r in rows])
    seed = draw_seed() if config.seed is None else config.seed
    stored = config.to_json() | {"seed_commitment": commitment(seed)}
    specs = series_specs(config, ids, seed)
    with db.session() as session:
        tournament = create_tournament(
            TournamentSpec(name=config.name, seed=seed, config=stored, series=specs),
            session=session,
        )
        assert tournament.id is not None
        return tournament.id


def refuse_untrusted(ids: Iterable[int], problem: str, *, db: Database) -> None:
    """TournamentError naming the submissions of ``ids`` that are not bundled examples (the
    sandbox refuses them for ``problem``), or nothing."""
    bundled = bundled_hashes()
    untrusted = []
    with db.read_session() as session:
        for sid in ids:
            row = get_submission(sid, session=session)
            if row.sha256 not in bundled:
                untrusted.append(f"{row.manifest.get('name', '?')}@{row.version}")
    if untrusted:
        raise TournamentError(
            f"refusing untrusted bot(s) {', '.join(map(repr, untrusted))}: {problem}; "
            "nothing was played and no tournament was created"
        )


def refuse_unrunnable(
    ids: Iterable[int],
    runtime_problem: Callable[[str], str | None],
    *,
    db: Database,
    stored: bool = False,
) -> None:
    """TournamentError naming the first submission of ``ids`` whose runtime the sandbox
    cannot run (``runtime_problem`` says why), or nothing: every game of its would fail to
    start. ``stored``: the tournament exists (a resume), else it is about to be created."""
    with db.read_session() as session:
        for sid in ids:
            row = get_submission(sid, session=session)
            runtime = str(row.manifest.get("runtime") or "python")
            problem = runtime_problem(runtime)
            if problem is not None:
                raise TournamentError(
                    f"refusing bot {row.manifest.get('name', '?')}@{row.version}: {problem};"
                    + (
                        " nothing was played"
                        if stored
                        else " nothing was played and no tournament was created"
                    )
                )


def series_specs(config: TournamentConfig, ids: list[int], seed: int) -> list[SeriesSpec]:
    """The series of a new tournament between submissions ``ids`` (in ``config.bots``
    order): a round robin of pairs or of tables, or a gauntlet (``config.gauntlet``); series
    seeds derive from ``seed``."""
    gauntlet = None if config.gauntlet is None else ids[config.bots.index(config.gauntlet)]
    if config.ruleset != "default":  # tables (arena.tournament.seatings / gauntlet)
        from arena.tournament.table_runner import table_specs

        if gauntlet is None:
            return table_specs(config, ids, seed)
        return table_specs(
            config, ids, seed, seatings=gauntlet_seatings(ids, gauntlet, config.table_size)
        )
    pairs = (
        [(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]]
        if gauntlet is None
        else gauntlet_pairs(ids, gauntlet)
    )
    return [
        SeriesSpec(
            submission_a_id=a,
            submission_b_id=b,
            games_planned=config.games_per_pair,
            seed=series_seed(seed, a, b),
            format=DbSeriesFormat(config.format.value),
        )
        for a, b in pairs
    ]


# ---------------------------------------------------------------------------- one series

_databases: dict[str, Database] = {}
_backends: dict[tuple[str, bool], Backend] = {}
_cache_lock = threading.Lock()
# Apart from _cache_lock: opening a database may wait out an outage, and the sandbox
# backends must not wait with it.
_database_lock = threading.Lock()


def _database(url: str, cancel: threading.Event | None = None) -> Database:
    """This process's open database at ``url`` (opened once). Opening it is the first read
    of a series in a fresh referee process or on a Dask worker, so a lost connection then
    is ridden out as the series' other reads are (``KRYT_DATABASE_RETRY_SECONDS``; setting
    ``cancel`` ends the wait and raises the error)."""
    with _database_lock:
        if url not in _databases:
            _databases[url] = retry_lost_connection(
                lambda: open_database(url),
                what="opening it",
                window=retry_seconds(),
                notes=outage_notes(mask_url(url)),
                cancel=cancel,
            )
        return _databases[url]


def close_databases() -> None:
    """Close the connections of every database this process opened for its series."""
    with _database_lock:
        for database in _databases.values():
            database.engine.dispose()


def _backend(preference: str, allow_unsafe: bool) -> Backend:
    with _cache_lock:
        key = (preference, allow_unsafe)
        if key not in _backends:
            _backends[key] = choose_backend(preference, allow_unsafe)
        return _backends[key]


class ActiveSlots:
    """The sandboxes running right now, so that Ctrl-C can kill every bot at once."""

    def __init__(self) -> None:
        self._slots: set[SandboxSlot] = set()
        self._lock = threading.Lock()

    def add(self, slot: SandboxSlot) -> None:
        with self._lock:
            self._slots.add(slot)

    def discard(self, slot: SandboxSlot) -> None:
        with self._lock:
            self._slots.discard(slot)

    def close_all(self) -> None:
        """Stop every running bot (used after the stop flag is set)."""
        with self._lock:
            slots = list(self._slots)
        for slot in slots:
            try:
                slot.close()
            except Exception:  # keep killing the others
                log.exception("could not stop %s", slot.name)


ACTIVE = ActiveSlots()


NOT_STARTED = "not started (the run stopped)"
"""The message of a series the run stopped before its first game."""


def stopped_reading(stop: threading.Event | None) -> bool:
    """Whether a series' start-up read that failed was cut short by the run stopping
    (Ctrl-C, the lease lost): the series is then interrupted, as a game write cut short by
    a stop is, not failed by an outage."""
    return stop is not None and stop.is_set()


def materialize_retrying(
    submission_id: int,
    *,
    db: Database,
    store: Path,
    series_id: int,
    cancel: threading.Event | None = None,
) -> Submission:
    """:func:`~arena.tournament.store.materialize` (a series' bot, read from the database
    when this machine does not have it yet), read across a lost connection like the
    series' games are written (setting ``cancel`` ends the wait)."""
    return db.retrying_call(
        lambda: materialize(submission_id, db=db, store=store),
        what=f"reading submission {submission_id} of series {series_id}",
        cancel=cancel,
    )


class LeaseWatch:
    """Whether a series' run still holds the tournament's lease, read at most every
    ``every`` seconds (between games), and set for good once it was lost."""

    def __init__(self, db: Database, task: SeriesTask, every: float = LEASE_CHECK_SECONDS):
        self.db = db
        self.task = task
        self.every = every
        self.lost = threading.Event()
        self.reason = ""
        self._next = time.monotonic() + every

    def lose(self, reason: str) -> None:
        """Mark the lease lost (a record was refused, or a check found it gone)."""
        self.reason = self.reason or reason
        self.lost.set()

    def gone(self) -> bool:
        """True once the run no longer holds the lease (checks the database when due)."""
        if self.lost.is_set() or not self.task.runner_id:
            return self.lost.is_set()
        if time.monotonic() < self._next:
            return False
        self._next = time.monotonic() + self.every
        try:
            with self.db.read_session() as session:
                lease = get_lease(self.task.tournament_id, session=session)
                status = get_tournament(self.task.tournament_id, session=session).status
        except DatabaseError:
            return False  # a database hiccup: the record's own check decides
        if status == "cancelled":
            self.lose(f"tournament {self.task.tournament_id} was cancelled")
        elif lease is None or lease.runner_id != self.task.runner_id:
            holder = "nobody" if lease is None else lease.describe()
            self.lose(f"the run lost the tournament's lease (now held by {holder})")
        return self.lost.is_set()


def play_series_task(
    task: SeriesTask,
    *,
    stop: threading.Event | None = None,
    on_game: GameCallback | None = None,
) -> SeriesOutcome:
    """:func:`play_series_task_async` on an event loop of its own (a Dask worker, a thread)."""
    return asyncio.run(play_series_task_async(task, stop=stop, on_game=on_game))


async def play_series_tasks(
    tasks: Iterable[SeriesTask],
    *,
    concurrency: int,
    stop: threading.Event,
    on_game: GameCallback | None = None,
    on_series: Callable[[SeriesOutcome], None] | None = None,
) -> list[SeriesOutcome]:
    """Play ``tasks``, ``concurrency`` series at a time as tasks of the running event loop
    (one referee process plays many series: its CPU goes to the games, not to threads).

    Once ``stop`` is set, no further series starts; those come back ``interrupted``."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)

    async def one(task: SeriesTask) -> SeriesOutcome:
        async with gate:
            if stop.is_set():
                outcome = SeriesOutcome(task.series_id, "interrupted", 0, NOT_STARTED)
            else:
                outcome = await play_series_task_async(task, stop=stop, on_game=on_game)
        if on_series is not None:
            on_series(outcome)
        return outcome

    return list(await asyncio.gather(*(one(task) for task in tasks)))


async def play_series_task_async(
    task: SeriesTask,
    *,
    stop: threading.Event | None = None,
    on_game: GameCallback | None = None,
) -> SeriesOutcome:
    """Play what is missing of one series and commit each game as it ends.

    Runs anywhere with access to the database: it fetches both submissions, starts them in
    the best sandbox available (as configured), and never raises for a bot's misbehaviour.
    Other series may play on the same event loop meanwhile: the sandbox's blocking work
    runs in worker threads, the games' I/O on the loop.

    A failure of ours (a bug, anything unexpected) ends only this series, ``interrupted``
    with what failed (logged with its traceback): its recorded games are kept, the game in
    progress is not recorded (resume plays it again), and the other series play on. A lost
    database still ends the run (the command says how to resume).
    """
    played = 0

    def counted(series_id: int, number: int, record: GameRecord) -> None:
        nonlocal played
        played += 1
        if on_game is not None:
            on_game(series_id, number, record)

    try:
        return await _play_series(task, stop, counted)
    except DatabaseUnavailableError:
        raise
    except Exception as exc:
        if stop is not None and stop.is_set():  # the run is stopping: its loop winds down
            log.debug("series %s ended while the run stopped: %r", task.series_id, exc)
            return SeriesOutcome(task.series_id, "interrupted", played, "the run stopped")
        log.exception("series %s failed on our side", task.series_id)
        # A store error names its own remedy (a tampered folder to remove): until it is
        # applied, a resume fails the same way.
        then = " once that is done" if isinstance(exc, SubmissionError) else ""
        return SeriesOutcome(
            task.series_id,
            "interrupted",
            played,
            f"failed on our side ({type(exc).__name__}: {exc}); the games recorded are kept"
            f" and resume plays the rest{then}",
        )


async def _play_series(
    task: SeriesTask, stop: threading.Event | None, on_game: GameCallback
) -> SeriesOutcome:
    config = TournamentConfig.from_json(dict(task.config))
    if config.ruleset != "default":  # a table of 2-4 seats
        from arena.tournament.table_runner import play_table_series_task

        # A table plays through blocking slots: in a worker thread, beside the loop.
        status, games, message = await asyncio.to_thread(
            play_table_series_task,
            database_url=task.database_url,
            tournament_id=task.tournament_id,
            series_id=task.series_id,
            config=config,
            store=Path(task.store),
            database=_database,
            active_add=ACTIVE.add,
            active_discard=ACTIVE.discard,
            backend_of=_backend,
            label_prefix=label_prefix(task.database_url, task.tournament_id),
            stop=stop,
            on_game=on_game,
            task=task,
        )
        return SeriesOutcome(task.series_id, status, games, message)
    # The series' own thread for its database work: its start-up reads, game writes and
    # statuses. One riding out a database outage waits there (up to db.retry_seconds),
    # neither on the event loop, where the other series' bots' clocks run, nor in the
    # loop's default threads, which start and check bots.
    db_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"kryt-s{task.series_id}-db")
    try:
        return await _play_pair_series(task, config, stop, on_game, db_thread)
    finally:
        db_thread.shutdown(wait=False)  # idle: every call was awaited


@dataclass(frozen=True, slots=True)
class _PairStart:
    """What a two-player series reads before its first game."""

    finished: bool
    seats: tuple[int, int]
    names: tuple[str, str]
    config: SeriesConfig
    done: dict[int, GameRecord]
    """Counted games already stored, in the referee's form (for resumption)."""


def seat_names_and_controls(
    seats: Iterable[int], config: TournamentConfig, session: Session
) -> tuple[list[str], list[TimeControl]]:
    """Each seat's bot as ``name@version`` and its time control (its own, or the
    tournament's), read with ``session``: what a series of pairs or tables names and plays
    its seats by."""
    names = []
    controls = []
    for sid in seats:
        row = get_submission(sid, session=session)
        names.append(f"{row.manifest.get('name', sid)}@{row.version}")
        controls.append(config.control_of(str(row.manifest.get("name", sid)), row.version))
    return names, controls


def _read_pair_start(task: SeriesTask, config: TournamentConfig, session: Session) -> _PairStart:
    series = get_series(task.series_id, session=session)
    seats = (series.submission_a_id, series.submission_b_id)
    names, controls = seat_names_and_controls(seats, config, session)
    return _PairStart(
        finished=series.status == SeriesStatus.FINISHED.value,
        seats=seats,
        names=(names[0], names[1]),
        config=SeriesConfig(
            games=series.games_planned,
            seed=series.seed,
            format=SeriesFormat(series.format),
            time_control=config.time_control,
            turn_limit=config.turn_limit,
            seat_controls=tuple(controls),
            book=config.book,
        ),
        done={
            game.number: stored_record(game)
            for game in games_of_series(task.series_id, session=session)
        },
    )


async def _play_pair_series(
    task: SeriesTask,
    config: TournamentConfig,
    stop: threading.Event | None,
    on_game: GameCallback | None,
    db_thread: ThreadPoolExecutor,
) -> SeriesOutcome:
    """The two-player part of :func:`play_series_task_async`; ``db_thread`` is the series'
    own thread for its database work."""
    loop = asyncio.get_running_loop()

    async def in_db_thread(call: Callable[[], T]) -> T:
        return await loop.run_in_executor(db_thread, call)

    # Every read before the games (opening the database in a fresh process, the series, its
    # bots, the games stored already) rides out a lost connection as the writes do; a
    # stopped run ends the wait, and an outage longer than the retries raises (the run
    # ends with the resume command).
    store = Path(task.store)
    try:
        db = await in_db_thread(functools.partial(_database, task.database_url, stop))
        start = await in_db_thread(
            lambda: db.retrying(
                functools.partial(_read_pair_start, task, config),
                what=f"reading series {task.series_id}",
                read=True,
                cancel=stop,
            )
        )
        if start.finished:
            return SeriesOutcome(task.series_id, "finished", 0, "already finished")
        submissions = [
            await in_db_thread(
                functools.partial(
                    materialize_retrying,
                    sid,
                    db=db,
                    store=store,
                    series_id=task.series_id,
                    cancel=stop,
                )
            )
            for sid in start.seats
        ]
    except DatabaseUnavailableError:
        if stopped_reading(stop):
            return SeriesOutcome(task.series_id, "interrupted", 0, NOT_STARTED)
        raise
    a_id, b_id = start.seats
    backend = _backend(config.sandbox.backend, config.sandbox.allow_unsafe)
    trusted = bundled_hashes()
    slots = []
    for seat, submission in enumerate(submissions):
        slots.append(
            SandboxSlot(
                backend,
                submission,
                name=start.names[seat],
                limits=config.sandbox.limits(submission.manifest.runtime),
                label=series_label(task, seat),
                trusted=submission.sha256 in trusted,
            )
        )
    played = 0
    watch = LeaseWatch(db, task)
    outage = Outage()

    async def recorder(number: int, _attempt: int, record: GameRecord) -> None:
        nonlocal played
        # A crash in the bot's own code: keep its traceback (from the sandbox's output).
        record = with_traceback(
            record,
            lambda seat: slots[seat].logs(),
            death_of=lambda seat: slots[seat].death_description(),
        )
        write = GameWrite(db, task.series_id, number, (a_id, b_id), record, task)
        await in_db_thread(
            functools.partial(commit_game, write, stop=stop, watch=watch, outage=outage)
        )
        if not record.voided:
            played += 1
            if on_game is not None:
                on_game(task.series_id, number, record)

    def stopping() -> bool:
        return (stop is not None and stop.is_set()) or watch.gone() or outage.lost is not None

    for slot in slots:
        ACTIVE.add(slot)
    try:
        await in_db_thread(functools.partial(_set_status, db, task, SeriesStatus.RUNNING))
        await run_series_async(
            start.config,
            (slots[0].aio, slots[1].aio),
            recorder=recorder,
            done=start.done,
            should_stop=stopping,
            keep_records=False,  # each game is in the database: keep only winners
        )
    except LeaseLostError as exc:
        return SeriesOutcome(task.series_id, "interrupted", played, str(exc))
    except SeriesInterrupted as exc:
        if outage.lost is not None:
            # The database stayed away longer than the retries: the run ends as it always
            # did on a lost database (the command says how to resume).
            raise outage.lost from outage.lost.__cause__  # keeps the driver error
        message = f"{exc}; {watch.reason}" if watch.lost.is_set() else str(exc)
        return SeriesOutcome(task.series_id, "interrupted", played, message)
    except SeriesAborted as exc:
        if outage.lost is not None:
            raise outage.lost from outage.lost.__cause__  # keeps the driver error
        if watch.lost.is_set():  # records refused because the lease is gone: not a failure
            return SeriesOutcome(task.series_id, "interrupted", played, watch.reason)
        log.error("series %s aborted: %s", task.series_id, exc)
        return SeriesOutcome(task.series_id, "aborted", played, str(exc))
    finally:
        for slot in slots:
            ACTIVE.discard(slot)
            try:
                await slot.aclose()
            except CleanupError as exc:  # ours: logged, the reaper / next sweep retries
                log.error("cleanup after series %s: %s", task.series_id, exc)
    try:
        await in_db_thread(functools.partial(_set_status, db, task, SeriesStatus.FINISHED))
    except LeaseLostError as exc:
        return SeriesOutcome(task.series_id, "interrupted", played, str(exc))
    return SeriesOutcome(task.series_id, "finished", played)


def _set_status(db: Database, task: SeriesTask, status: SeriesStatus) -> None:
    """Set a series' status while the run holds the lease (checked in the same transaction);
    retried across a lost database connection (setting it twice is the same)."""

    def write(session: Session) -> None:
        if task.runner_id:
            hold_lease(task.tournament_id, task.runner_id, session=session)
        set_series_status(task.series_id, status, session=session)

    db.retrying(write, what=f"marking series {task.series_id} {status.value}")


def commit_game(
    write: GameWrite,
    *,
    stop: threading.Event | None,
    watch: LeaseWatch | None,
    outage: Outage,
) -> None:
    """Write a game under the run's lease, noting an outage: :meth:`GameWrite.commit`
    (retried across a lost connection until the window ends or ``stop`` is set). A record
    refused because the run lost the lease marks ``watch`` lost, and a database that stayed
    away longer than the retries is noted in ``outage``: the series stops on either. The
    error is raised again in both cases. Blocking: call it off the event loop."""
    try:
        # Stopping the run (Ctrl-C) ends the retries: the game is stored or not, and
        # resume sees which.
        write.commit(stop)
    except LeaseLostError as exc:
        if watch is not None:
            watch.lose(str(exc))
        raise
    except DatabaseUnavailableError as exc:
        if stop is None or not stop.is_set():  # not a write cut short by a stop
            outage.note(exc)
        raise


class Outage:
    """Whether a series' database went away for longer than its writes are retried: the
    series stops then (nothing it plays could be stored) and the run ends with the error."""

    def __init__(self) -> None:
        self.lost: DatabaseUnavailableError | None = None

    def note(self, exc: DatabaseUnavailableError) -> None:
        """Keep ``exc`` when it is a lost connection (not a damaged or read-only file)."""
        if self.lost is None and lost_connection(exc):
            self.lost = exc


class GameWrite:
    """Recording one finished game: :meth:`commit` stores it exactly once, even when it is
    retried across a lost database connection (see :meth:`Database.retrying`)."""

    def __init__(
        self,
        db: Database,
        series_id: int,
        number: int,
        seats: tuple[int, ...],
        record: GameRecord,
        task: SeriesTask | None = None,
    ) -> None:
        self.db = db
        self.series_id = series_id
        self.number = number
        self.seats = seats
        self.record = record
        self.tournament_id = 0 if task is None else task.tournament_id
        self.runner_id = "" if task is None else task.runner_id
        self.attempt: int | None = None
        """The attempt number, chosen by the first try that got that far and kept by the
        others: a try whose commit went through but whose answer was lost stored the game
        under it, so the next try finds the same game there (record_game: created=False)
        instead of storing it again as a new attempt."""

    def commit(self, cancel: threading.Event | None = None) -> None:
        """Store the game (retried while the database connection is lost, until the retry
        window ends or ``cancel`` is set)."""
        self.db.retrying(
            self._write,
            what=f"recording game {self.number} of series {self.series_id}",
            cancel=cancel,
        )

    def _write(self, session: Session) -> None:
        if self.runner_id:
            # In the game's own transaction, every try: a run that lost the lease records
            # nothing, and nobody takes the lease while this record commits.
            hold_lease(self.tournament_id, self.runner_id, session=session)
        if self.attempt is None:
            self.attempt = next_attempt(self.series_id, self.number, session=session)
        record_game(
            self.record,
            GamePlace(self.series_id, self.number, self.attempt, self.seats),
            session=session,
        )


# ---------------------------------------------------------------------------- a tournament


def tasks_for(
    tournament_id: int, *, db: Database, store: Path = DEFAULT_STORE, runner_id: str = ""
) -> list[SeriesTask]:
    """One task per series still to play (pending or running), in position order, for the
    run ``runner_id`` (the lease holder; empty: no lease check)."""
    with db.read_session() as session:
        tournament = get_tournament(tournament_id, session=session)
        config = dict(tournament.config)
        return [
            SeriesTask(
                database_url=db.url,
                tournament_id=tournament_id,
                series_id=s.id,
                config=config,
                store=str(store.resolve()),
                runner_id=runner_id,
            )
            for s in unfinished_series(tournament_id, session=session)
            if s.id is not None
        ]


def mark_tournament(tournament_id: int, status: TournamentStatus, *, db: Database) -> None:
    """Set the tournament's status (running, finished, ...)."""
    with db.session() as session:
        set_tournament_status(tournament_id, status, session=session)
