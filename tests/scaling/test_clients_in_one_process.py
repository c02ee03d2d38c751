"""A run's results are waited for on its own client's loop, whatever other Dask clients the
process opens and closes meanwhile (a watcher, a second executor, the arena server's checks).

``distributed.as_completed`` takes the loop of the process's *default* client, the one made
last: a run that waited there lost every result once that other client was closed (it spun
for ever; CI caught it when a test's watcher client closed during a resume).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pytest

from arena.db import Database, open_database
from arena.tournament.dask_executor import DaskExecutor
from arena.tournament.runner import SeriesOutcome, tasks_for
from referee.record import GameRecord
from tests.scaling.conftest import LoopbackCluster
from tests.scaling.helpers import all_games, check_complete, make_tournament, wait_no_processes_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

GAMES = 6
DEADLINE = 180.0


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    yield database
    database.close()


def test_a_run_ends_when_a_later_client_of_the_process_closes_during_it(
    db: Database, loopback_cluster: LoopbackCluster, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    tournament_id = make_tournament(db, store, bots=("random", "greedy", "mc"), games=GAMES)
    client_class: Any = distributed.Client  # distributed is not annotated
    default_client: Any = distributed.default_client
    outcomes: list[SeriesOutcome] = []
    errors: list[BaseException] = []
    seen: list[tuple[int, int]] = []
    closed_during_the_run = threading.Event()
    with DaskExecutor(loopback_cluster.address, poll_seconds=0.1) as executor:
        assert executor.client is not None  # connected first: the other client is later
        other = client_class(loopback_cluster.address, timeout=60)
        assert default_client() is other

        def close_the_other(series_id: int, number: int, record: GameRecord) -> None:
            seen.append((series_id, number))
            if not closed_during_the_run.is_set():
                closed_during_the_run.set()
                other.close()

        def run() -> None:
            try:
                outcomes.extend(
                    executor.run(
                        tasks_for(tournament_id, db=db, store=store),
                        stop=threading.Event(),
                        on_game=close_the_other,
                    )
                )
            except BaseException as exc:  # surfaced in the test thread
                errors.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(DEADLINE)
        try:
            assert not thread.is_alive(), f"the run did not end within {DEADLINE:g} s"
        finally:
            other.close()
    assert not errors, errors
    assert closed_during_the_run.is_set()
    assert sorted(o.status for o in outcomes) == ["finished"] * 3, outcomes
    assert check_complete(db, tournament_id) == 3 * GAMES
    assert sorted(seen) == all_games(db, tournament_id)
    assert wait_no_processes_in(store) == []
