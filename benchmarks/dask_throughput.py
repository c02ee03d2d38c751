#!/usr/bin/env python3
"""Tournament throughput on Dask with 1 and 2 workers, and Dask's scheduling cost per series.

Measured in one run on this machine, against the same database:

* games/s of series between the two fast bundled bots (random vs greedy, process sandbox)
  with the local executor (1 and 2 threads) and the Dask executor (LocalCluster of 1 and 2
  single-threaded worker processes; cluster start-up and worker warm-up are not counted);
* the cost per series of the executor itself: tasks for series that are already finished
  (a worker reads the series and returns) through the local executor and through Dask; the
  difference is Dask's scheduling overhead per series.

The database is a fresh PostgreSQL database when ``KRYT_TEST_POSTGRES_URL`` (or ``--postgres``)
names a server the role may create databases on, else a temporary SQLite file.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import cast, create_engine, func, literal, text
from sqlalchemy.dialects.postgresql import REGCLASS
from sqlalchemy.engine import make_url
from sqlmodel import select

from arena.db import (
    Database,
    Game,
    SeriesFormat,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    create_tournament,
    open_database,
    set_series_status,
)
from arena.tournament.config import load_config
from arena.tournament.dask_executor import DaskExecutor
from arena.tournament.executors import Executor, LocalExecutor
from arena.tournament.runner import resolve_bots, series_seed, tasks_for

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "sdk" / "examples"


@contextmanager
def database(postgres: str | None, folder: Path) -> Iterator[Database]:
    """A fresh database for this run (dropped afterwards on PostgreSQL)."""
    if not postgres:
        db = open_database(f"sqlite:///{folder / 'bench.db'}")
        try:
            yield db
        finally:
            db.close()
        return
    name = f"kryt_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    db = open_database(make_url(postgres).set(database=name).render_as_string(False))
    try:
        yield db
    finally:
        db.close()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def tournament(db: Database, store: Path, *, series: int, games: int, seed: int) -> int:
    """``series`` series of random vs greedy (distinct seeds) with ``games`` games each."""
    config = load_config(
        None,
        bots=[str(EXAMPLES / "random"), str(EXAMPLES / "greedy")],
        games_per_pair=max(1, games),
        backend="process",
        seed=seed,
        name=f"bench-{seed}",
    )
    a, b = resolve_bots(config.bots, db=db, store=store, submitted_by="benchmark")
    specs = [
        SeriesSpec(a, b, games, series_seed(seed, a, b) + i, SeriesFormat.STANDARD)
        for i in range(series)
    ]
    with db.session() as session:
        row = create_tournament(
            TournamentSpec(name=config.name, seed=seed, config=config.to_json(), series=specs),
            session=session,
        )
        assert row.id is not None
        return row.id


def games_per_second(
    executor: Executor, db: Database, store: Path, *, series: int, games: int, seed: int
) -> tuple[float, float]:
    """(games/s, seconds) of a fresh tournament played by ``executor``."""
    tid = tournament(db, store, series=series, games=games, seed=seed)
    tasks = tasks_for(tid, db=db, store=store)
    start = time.perf_counter()
    outcomes = executor.run(tasks, stop=threading.Event())
    seconds = time.perf_counter() - start
    bad = [o for o in outcomes if o.status != "finished"]
    if bad or len(outcomes) != series:
        raise SystemExit(f"benchmark run failed: {bad or outcomes}")
    return series * games / seconds, seconds


def per_series_cost(executor: Executor, db: Database, store: Path, *, series: int) -> float:
    """Seconds per task for series that are already finished: the executor's own cost."""
    tid = tournament(db, store, series=series, games=1, seed=900_000 + series)
    template = tasks_for(tid, db=db, store=store)
    with db.session() as session:
        for task in template:
            set_series_status(task.series_id, SeriesStatus.FINISHED, session=session)
    start = time.perf_counter()
    outcomes = executor.run(template, stop=threading.Event())
    seconds = time.perf_counter() - start
    if {o.message for o in outcomes} != {"already finished"} or len(outcomes) != series:
        raise SystemExit(f"overhead run did not take the finished-series path: {outcomes[:3]}")
    return seconds / series


def bytes_per_game(db: Database) -> float | None:
    """Disk space of the ``games`` table (with its indexes and TOAST) per stored game, on
    PostgreSQL; None on SQLite, where the whole file is one number."""
    if db.backend != "postgresql":
        return None
    table = cast(literal(Game.__tablename__), REGCLASS)
    with db.read_session() as session:
        size = session.exec(select(func.pg_total_relation_size(table))).one()
        games = session.exec(select(func.count()).select_from(Game)).one()
    return float(size) / max(1, int(games))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=8, help="series per measurement")
    parser.add_argument("--games", type=int, default=25, help="games per series")
    parser.add_argument("--overhead-series", type=int, default=300)
    parser.add_argument("--postgres", default=os.environ.get("KRYT_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="kryt-bench-") as tmp,
        database(args.postgres, Path(tmp)) as db,
    ):
        store = Path(tmp) / "store"
        print(
            f"database: {db.backend}; {args.series} series x {args.games} games per run; "
            f"{os.cpu_count()} cores"
        )
        rows: list[tuple[str, float, float]] = []
        costs: dict[str, float] = {}
        seed = 1
        for threads in (1, 2):
            local = LocalExecutor(threads)
            rate, seconds = games_per_second(
                local, db, store, series=args.series, games=args.games, seed=seed
            )
            seed += 1
            rows.append((f"local executor, {threads} thread(s)", rate, seconds))
            costs[f"local, {threads} thread(s)"] = per_series_cost(
                local, db, store, series=args.overhead_series
            )
        for workers in (1, 2):
            started = time.perf_counter()
            with DaskExecutor(None, workers=workers) as dask:
                dask.client.wait_for_workers(workers)
                # Warm-up: the first task on a worker imports the referee and sandbox.
                games_per_second(dask, db, store, series=workers, games=1, seed=10_000 + seed)
                ready = time.perf_counter() - started
                rate, seconds = games_per_second(
                    dask, db, store, series=args.series, games=args.games, seed=seed
                )
                seed += 1
                rows.append((f"dask, {workers} worker(s)", rate, seconds))
                costs[f"dask, {workers} worker(s)"] = per_series_cost(
                    dask, db, store, series=args.overhead_series
                )
            print(f"  LocalCluster of {workers} worker(s) ready and warm in {ready:.1f} s")
        print("\nthroughput (random vs greedy, process sandbox, games committed one by one)")
        for label, rate, seconds in rows:
            print(f"  {label:30s} {rate:7.1f} games/s  ({seconds:6.2f} s)")
        print(f"\nexecutor cost per series ({args.overhead_series} already-finished series)")
        for label, cost in costs.items():
            print(f"  {label:30s} {cost * 1000:7.2f} ms/series")
        for n in (1, 2):
            local_cost = costs[f"local, {n} thread(s)"]
            dask_cost = costs[f"dask, {n} worker(s)"]
            print(
                f"  dask scheduling overhead at {n}: {(dask_cost - local_cost) * 1000:+.2f} ms "
                f"per series"
            )
        dask2 = dict((label, rate) for label, rate, _ in rows)["dask, 2 worker(s)"]
        series_seconds = args.games / (dask2 / 2)
        print(
            f"\none series of {args.games} games takes {series_seconds:.1f} s on a worker; "
            f"overhead share {costs['dask, 2 worker(s)'] / series_seconds:.3%}"
        )
        size = bytes_per_game(db)
        if size is not None:
            print(f"storage: {size / 1024:.1f} KiB per game (games table with indexes)")


if __name__ == "__main__":
    main()
