"""The tournament service: run a stored tournament to the end, report its progress.

The command line (and any other front end) only parses, calls these functions and prints:
the orchestration (sweeping what an earlier run left behind, the executor, the status of
the tournament afterwards) and every count of results live here and in :mod:`arena.db`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from arena.db import (
    Database,
    SeriesStatus,
    SeriesTally,
    TournamentStatus,
    get_tournament,
    series_of_tournament,
    series_tallies,
)
from arena.tournament.config import TournamentConfig
from arena.tournament.executors import LocalExecutor, SeriesCallback
from arena.tournament.runner import (
    GameCallback,
    SeriesOutcome,
    label_prefix,
    mark_tournament,
    tasks_for,
)
from arena.tournament.store import DEFAULT_STORE
from sandbox import choose_backend, sweep_leftovers


class ExecutorName(StrEnum):
    """Where series run."""

    local = "local"
    dask = "dask"


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a run ended: every series outcome, and whether the tournament is finished."""

    outcomes: list[SeriesOutcome]
    finished: bool


def tournament_config(tournament_id: int, db: Database) -> TournamentConfig:
    """The stored configuration of a tournament."""
    with db.read_session() as session:
        return TournamentConfig.from_json(
            dict(get_tournament(tournament_id, session=session).config)
        )


def progress(tournament_id: int, db: Database) -> tuple[int, int]:
    """(games recorded, games planned) of a tournament."""
    with db.read_session() as session:
        tallies = series_tallies(tournament_id, session=session)
    return sum(t.played for t in tallies), sum(t.games_planned for t in tallies)


def tallies(tournament_id: int, db: Database) -> list[SeriesTally]:
    """Each series of the tournament with its counted results (see :func:`series_tallies`)."""
    with db.read_session() as session:
        return series_tallies(tournament_id, session=session)


def run_tournament(
    tournament_id: int,
    db: Database,
    *,
    executor: ExecutorName = ExecutorName.local,
    scheduler: str | None = None,
    worker_store: str | None = None,
    store: Path = DEFAULT_STORE,
    stop: threading.Event | None = None,
    on_game: GameCallback | None = None,
    on_series: SeriesCallback | None = None,
    say: Callable[[str], None] = lambda _line: None,
) -> RunResult:
    """Play every unfinished series of the tournament; marks it finished when none is left.

    ``say`` receives one-line notes for the organiser (the sandbox chosen, leftovers swept).
    Setting ``stop`` ends the run cleanly (the games in progress are replayed on resume).
    """
    config = tournament_config(tournament_id, db)
    tasks = tasks_for(tournament_id, db=db, store=store)
    prefix = label_prefix(db.url, tournament_id)
    stop = stop or threading.Event()
    if executor is ExecutorName.dask:
        from arena.tournament.dask_executor import DaskExecutor

        dask_executor = DaskExecutor(
            scheduler, workers=config.concurrency, worker_store=worker_store
        )
        sandboxes = dask_executor.worker_sandboxes(
            config.sandbox.backend, config.sandbox.allow_unsafe
        )
        for worker, description in sorted(sandboxes.items()):
            say(f"worker {worker}: sandbox {description}")
        swept = dask_executor.sweep_workers(prefix)
    else:
        backend = choose_backend(config.sandbox.backend, config.sandbox.allow_unsafe)
        say(f"sandbox: {backend.describe()}")
        swept = sweep_leftovers(prefix)
    if swept:
        say(f"removed {swept} sandbox(es) left over by an earlier run")
    mark_tournament(tournament_id, TournamentStatus.RUNNING, db=db)
    if executor is ExecutorName.dask:
        with dask_executor:
            outcomes = dask_executor.run(tasks, stop=stop, on_game=on_game, on_series=on_series)
    else:
        outcomes = LocalExecutor(config.concurrency).run(
            tasks, stop=stop, on_game=on_game, on_series=on_series
        )
    with db.read_session() as session:
        finished = all(
            s.status == SeriesStatus.FINISHED.value
            for s in series_of_tournament(tournament_id, session=session)
        )
    if finished:
        mark_tournament(tournament_id, TournamentStatus.FINISHED, db=db)
    return RunResult(outcomes, finished)
