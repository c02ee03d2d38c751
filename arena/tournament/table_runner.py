"""Table tournaments (the classic ruleset): the series of a round robin of tables, and one
series task played at a table of 2-4 sandboxed bots.

The same service as :mod:`arena.tournament.runner` (tasks, executors, resume, Dask): a
task's series lists its seats, each seat gets its own sandbox, and every game is committed
as it ends, so a run killed at any point resumes with exactly the missing games.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from arena.db import (
    Database,
    DatabaseUnavailableError,
    LeaseLostError,
    SeriesSpec,
    SeriesStatus,
    games_of_series,
    get_series,
    hold_lease,
    series_of_tournament,
    set_series_status,
    stored_record,
)
from arena.tournament.config import TournamentConfig
from arena.tournament.runner import (
    NOT_STARTED,
    GameWrite,
    LeaseWatch,
    Outage,
    SeriesTask,
    commit_game,
    materialize_retrying,
    seat_names_and_controls,
    stopped_reading,
)
from arena.tournament.seatings import seating_key, table_seatings
from arena.tournament.seats import SandboxSlot
from arena.tournament.store import bundled_hashes
from arena.tournament.tracebacks import with_traceback
from referee.record import GameRecord, seat_outcome
from referee.series import SeriesAborted, SeriesConfig, SeriesInterrupted
from referee.table import run_table_series
from sandbox.backend import Backend

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _TableStart:
    """What a table series reads before its first game."""

    finished: bool
    seats: tuple[int, ...]
    names: tuple[str, ...]
    config: SeriesConfig
    done: dict[int, GameRecord]


def table_series_seed(tournament_seed: int, seats: Sequence[int]) -> int:
    """The seed of the series of one seating (submissions in seat order)."""
    text = f"kryt:{tournament_seed}:table:{seating_key(seats)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 2


def table_specs(
    config: TournamentConfig,
    ids: Sequence[int],
    seed: int,
    *,
    seatings: Sequence[tuple[int, ...]] | None = None,
) -> list[SeriesSpec]:
    """One series per seating: by default every set of ``table_size`` entrants in every
    clockwise order (a gauntlet passes its own); series seeds derive from ``seed``."""
    return [
        SeriesSpec(
            submission_a_id=seats[0],
            submission_b_id=seats[1],
            games_planned=config.games_per_pair,
            seed=table_series_seed(seed, seats),
            ruleset=config.ruleset,
            seats=seats,
        )
        for seats in (table_seatings(ids, config.table_size) if seatings is None else seatings)
    ]


def play_table_series_task(
    *,
    database_url: str,
    tournament_id: int,
    series_id: int,
    config: TournamentConfig,
    store: Path,
    database: Callable[[str, threading.Event | None], Database],
    active_add: Callable[[SandboxSlot], None],
    active_discard: Callable[[SandboxSlot], None],
    backend_of: Callable[[str, bool], Backend],
    label_prefix: str,
    stop: threading.Event | None = None,
    on_game: Callable[[int, int, GameRecord], None] | None = None,
    task: SeriesTask | None = None,
) -> tuple[str, int, str]:
    """Play what is missing of one table series; returns (status, games played, message).

    ``status`` is ``finished``, ``interrupted`` (resumable) or ``aborted``. ``task``: the
    run's task for the series; a run that holds the tournament's lease (its ``runner_id``)
    records each game and status in a transaction that checks the lease, and stops between
    games once the lease is gone, as two-player series do (one owner per tournament).
    ``database(url, stop)`` opens the database (riding out an outage until ``stop`` is set).

    What the series reads before its games (opening the database, the series, its bots,
    the games stored already) is retried across a lost connection as its writes are.
    """

    def read_start(session: Session) -> _TableStart:
        series = get_series(series_id, session=session)
        already_finished = series.status == SeriesStatus.FINISHED.value
        seats = series.seat_ids
        names, controls = seat_names_and_controls(seats, config, session)
        series_config = SeriesConfig(
            games=series.games_planned,
            seed=series.seed,
            time_control=config.time_control,
            seat_controls=tuple(controls),
            turn_limit=config.turn_limit,
            ruleset=series.ruleset,
            players=len(seats),
        )
        done = {
            g.number: stored_record(g, tuple(names))
            for g in games_of_series(series_id, session=session)
        }
        return _TableStart(already_finished, seats, tuple(names), series_config, done)

    # In this series' thread: waiting out an outage holds up no other series.
    try:
        db = database(database_url, stop)
        start = db.retrying(read_start, what=f"reading series {series_id}", read=True, cancel=stop)
        if start.finished:
            return "finished", 0, "already finished"
        submissions = [
            materialize_retrying(sid, db=db, store=store, series_id=series_id, cancel=stop)
            for sid in start.seats
        ]
    except DatabaseUnavailableError:
        if stopped_reading(stop):  # cut short by the run stopping: not an outage
            return "interrupted", 0, NOT_STARTED
        raise
    seats, names = start.seats, start.names
    backend = backend_of(config.sandbox.backend, config.sandbox.allow_unsafe)
    trusted = bundled_hashes()
    slots = []
    for seat, submission in enumerate(submissions):
        slots.append(
            SandboxSlot(
                backend,
                submission,
                name=names[seat],
                limits=config.sandbox.limits(submission.manifest.runtime),
                label=f"{label_prefix}s{series_id}-{seat}",
                trusted=submission.sha256 in trusted,
            )
        )
    played = 0
    outage = Outage()
    watch = None if task is None else LeaseWatch(db, task)

    def recorder(number: int, _attempt: int, record: GameRecord) -> None:
        nonlocal played
        record = with_traceback(
            record,
            lambda seat: slots[seat].logs(),
            death_of=lambda seat: slots[seat].death_description(),
        )  # a bot's crash
        # Retried across a lost database connection, without storing the game twice
        # (this runs in a thread of its own: waiting holds up no other series).
        write = GameWrite(db, series_id, number, seats, record, task)
        commit_game(write, stop=stop, watch=watch, outage=outage)
        if not record.voided:
            played += 1
            if on_game is not None:
                on_game(series_id, number, record)

    def stopping() -> bool:
        lease_gone = watch is not None and watch.gone()
        return (stop is not None and stop.is_set()) or outage.lost is not None or lease_gone

    def set_status(status: SeriesStatus) -> None:
        def write(session: Session) -> None:
            if task is not None and task.runner_id:
                hold_lease(task.tournament_id, task.runner_id, session=session)
            set_series_status(series_id, status, session=session)

        db.retrying(write, what=f"marking series {series_id} {status.value}")

    for slot in slots:
        active_add(slot)
    try:
        set_status(SeriesStatus.RUNNING)
        run_table_series(
            start.config,
            slots,
            recorder=recorder,
            done=start.done,
            should_stop=stopping,
        )
    except LeaseLostError as exc:
        return "interrupted", played, str(exc)
    except (SeriesInterrupted, SeriesAborted) as exc:
        if watch is not None and watch.lost.is_set():  # records refused: not a failure
            return "interrupted", played, f"{exc}; {watch.reason}"
        if outage.lost is not None:
            # The database stayed away longer than the retries: the run ends with it.
            raise outage.lost from outage.lost.__cause__  # keeps the driver error
        if isinstance(exc, SeriesInterrupted):
            return "interrupted", played, str(exc)
        log.error("table series %s aborted: %s", series_id, exc)
        return "aborted", played, str(exc)
    finally:
        for slot in slots:
            active_discard(slot)
            slot.close()
    try:
        set_status(SeriesStatus.FINISHED)
    except LeaseLostError as exc:
        return "interrupted", played, str(exc)
    return "finished", played, ""


@dataclass(frozen=True, slots=True)
class TableTally:
    """One table series of a tournament with its counted games."""

    series_id: int
    position: int
    seats: tuple[int, ...]
    games_planned: int
    status: str
    played: int
    losses: tuple[int, ...]
    """Per seat: games it lost (as the last holder or by forfeit)."""
    draws: int
    forfeits: int


def table_tallies(tournament_id: int, db: Database) -> list[TableTally]:
    """Every series of a table tournament in position order, with its counted results."""
    found = []
    with db.read_session() as session:
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            seats = series.seat_ids
            games = games_of_series(series.id, session=session)
            found.append(
                TableTally(
                    series.id,
                    series.position,
                    seats,
                    series.games_planned,
                    series.status,
                    len(games),
                    tuple(
                        # The loser, and every seat that lost a pair: at the turn limit (no
                        # loser) and where several bots could not start (only the first of
                        # them is the game's loser).
                        sum(
                            1
                            for g in games
                            if g.loser_seat == s or seat_outcome(g.pairwise or (), s) == "loss"
                        )
                        for s in range(len(seats))
                    ),
                    sum(1 for g in games if not g.pairwise),
                    sum(1 for g in games if g.forfeit_seat is not None),
                )
            )
    return found
