"""Several writers at once: no 'database is locked', no lost and no duplicated games."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import replace

import pytest

from arena.db import (
    Database,
    SeriesSpec,
    add_series,
    completed_game_numbers,
    pair_counts,
)
from tests.db.helpers import World
from tests.db.writers import record_games, record_with

GAMES = 40


def _more_worlds(db: Database, world: World, n: int) -> list[World]:
    worlds = []
    with db.session() as s:
        for i in range(n):
            spec = SeriesSpec(world.sub_a, world.sub_b, GAMES, 1000 + i)
            series = add_series(world.tournament_id, spec, session=s)
            assert series.id is not None
            worlds.append(replace(world, series_id=series.id))
    return worlds


def _check(db: Database, all_worlds: list[World]) -> None:
    with db.read_session() as s:
        for w in all_worlds:
            assert completed_game_numbers(w.series_id, session=s) == set(range(GAMES))
        (counts,) = pair_counts(session=s)
    assert counts.games == GAMES * len(all_worlds)


@pytest.mark.timeout(120)
def test_two_processes_record_at_once(db: Database, world: World) -> None:
    own = _more_worlds(db, world, 2)
    shared = world  # both processes record the same games here: idempotency under a race
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        futures = [
            pool.submit(record_games, db.url, [own[i], shared], list(range(GAMES)))
            for i in range(2)
        ]
        created = [f.result() for f in futures]
    # Each process created all of its own series' games; the shared ones exactly once overall.
    assert sum(created) == 3 * GAMES
    assert all(c >= GAMES for c in created)
    _check(db, [*own, shared])


@pytest.mark.timeout(120)
def test_threads_share_one_database(db: Database, world: World) -> None:
    worlds = _more_worlds(db, world, 3)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(record_with, db, [w, world], list(range(GAMES))) for w in worlds]
        created = [f.result() for f in futures]
    assert sum(created) == 4 * GAMES
    _check(db, [*worlds, world])
