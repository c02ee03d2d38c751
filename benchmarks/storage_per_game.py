#!/usr/bin/env python3
"""Bytes stored per game (target: <= 1 KiB on SQLite and on PostgreSQL).

Plays ``--games`` uniformly random games through the rules core (``legal_actions()`` and a
random pick, as the SDK's random bot does), gives each move a wall time (and, with
``--cpu``, a CPU time) drawn around what the referee measures for a bot that answers at once
(rounded to the microsecond, as the referee rounds), and records them through the project's
own API (``arena.db.record_game``) in one series, as a tournament would. Then it prints:

- SQLite: the database file's size after ``VACUUM`` divided by the games (and the same
  without the empty database's size, and per table and index where SQLite's ``dbstat`` is
  compiled in);
- PostgreSQL (``--postgres URL`` of a role that may create databases; default
  ``KRYT_TEST_POSTGRES_URL``): ``pg_total_relation_size('games')`` (heap, indexes, TOAST)
  after ``VACUUM FULL`` divided by the games, and per index. A scratch database is created
  and dropped.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from arena.db import (
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import GameRecord, Move
from referee.rules import Game

BATCH = 200
"""Games per transaction (a tournament commits one a game; this only saves time)."""


def random_games(count: int, seed: int, *, cpu: bool) -> Iterator[GameRecord]:
    """``count`` random games as the referee would record them."""
    rng = random.Random(seed)
    start = 1_780_000_000.0
    for number in range(count):
        game = Game.new(seed=seed * 1_000_003 + number, dealer=number % 2)
        moves = []
        while not game.over:
            seat = game.to_move
            assert seat is not None
            action = rng.choice(game.legal_actions())
            game.play(action)
            # An instant bot over a local socket: ~0.3-1 ms of wall time, less of CPU.
            wall = round(rng.lognormvariate(-7.5, 0.35), 6)
            spent = round(rng.lognormvariate(-8.3, 0.35), 6) if cpu else None
            moves.append(Move(seat, str(action), wall, spent))
        assert game.reason is not None
        final = str(game.final_cover) if game.final_cover else None
        finished = start + sum(m.seconds for m in moves) + 0.01
        yield GameRecord(
            deck=tuple(str(c) for c in game.deck or ()),
            dealer=game.dealer,
            turn_limit=game.turn_limit,
            moves=tuple(moves),
            ending=GameEndReason.from_rules(game.reason),
            winner=game.outcome,
            final_cover=final,
            started=start,
            finished=finished,
            time_controls=(TimeControl(), TimeControl()),  # every referee record has them
        )
        start = finished + 0.002


def fill(url: str, games: int, seed: int, *, cpu: bool) -> float:
    """Record the random games into the database at ``url``; the mean moves per game."""
    db = open_database(url)
    try:
        with db.session() as s:
            ids: list[int] = []
            for name in ("alpha", "bravo"):
                new = NewSubmission(name, "1", f"{len(ids) + 1:064x}", "benchmark")
                submission = submit(new, session=s).submission
                assert submission.id is not None
                ids.append(submission.id)
            spec = SeriesSpec(ids[0], ids[1], games, seed)
            tournament = create_tournament(
                TournamentSpec("storage", seed, series=[spec]), session=s
            )
            assert tournament.id is not None
            (series,) = series_of_tournament(tournament.id, session=s)
            assert series.id is not None
            series_id = series.id
        moves = 0
        records = random_games(games, seed, cpu=cpu)
        for first in range(0, games, BATCH):
            with db.session() as s:
                for number in range(first, min(games, first + BATCH)):
                    record = next(records)
                    moves += len(record.moves)
                    seats = (ids[0], ids[1]) if number % 2 == 0 else (ids[1], ids[0])
                    record_game(record, GamePlace(series_id, number, 1, seats), session=s)
        return moves / games
    finally:
        db.close()


def sqlite_size(path: Path) -> int:
    """The file's size after ``VACUUM`` (write-ahead log checkpointed and gone)."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
    connection.close()
    return path.stat().st_size


def sqlite_breakdown(path: Path) -> list[tuple[str, int]]:
    """Bytes per table and index of the games table, where ``dbstat`` is available."""
    with sqlite3.connect(path) as connection:
        try:
            rows = connection.execute(
                "SELECT d.name, sum(d.pgsize) FROM dbstat AS d JOIN sqlite_master AS m "
                "ON m.name = d.name WHERE m.tbl_name = 'games' GROUP BY d.name ORDER BY 2 DESC"
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []
    connection.close()
    return [(str(name), int(size)) for name, size in rows]


def measure_sqlite(games: int, seed: int, *, cpu: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.db"
        open_database(str(empty)).close()
        base = sqlite_size(empty)
        path = Path(tmp) / "kryt.db"
        started = time.perf_counter()
        moves = fill(str(path), games, seed, cpu=cpu)
        spent = time.perf_counter() - started
        size = sqlite_size(path)
        print(
            f"SQLite      {games} games, {moves:.1f} moves a game ({spent:.0f} s to record):"
            f" {size / games:7.0f} B/game (file / games);"
            f" {(size - base) / games:7.0f} B/game without the empty database ({base} B)"
        )
        for name, bytes_ in sqlite_breakdown(path):
            print(f"    {name:40s} {bytes_ / games:7.1f} B/game")


def measure_postgres(admin_url: str, games: int, seed: int, *, cpu: bool) -> None:
    name = f"kryt_storage_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        moves = fill(url, games, seed, cpu=cpu)
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(text("VACUUM FULL ANALYZE games"))
                total = connection.execute(
                    text("SELECT pg_total_relation_size('games')")
                ).scalar_one()
                parts = connection.execute(
                    text(
                        "SELECT 'games (heap and TOAST)', pg_table_size('games') UNION ALL "
                        "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) "
                        "FROM pg_index WHERE indrelid = 'games'::regclass ORDER BY 2 DESC"
                    )
                ).all()
        finally:
            engine.dispose()
        print(
            f"PostgreSQL  {games} games, {moves:.1f} moves a game:"
            f" {total / games:7.0f} B/game (pg_total_relation_size('games') / games)"
        )
        for part, bytes_ in parts:
            print(f"    {part:40s} {bytes_ / games:7.1f} B/game")
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="record a CPU time for every move")
    parser.add_argument("--postgres", default=os.environ.get("KRYT_TEST_POSTGRES_URL"))
    parser.add_argument("--no-sqlite", action="store_true")
    args = parser.parse_args()
    if not args.no_sqlite:
        measure_sqlite(args.games, args.seed, cpu=args.cpu)
    if args.postgres:
        measure_postgres(args.postgres, args.games, args.seed, cpu=args.cpu)
    else:
        print("PostgreSQL  skipped: pass --postgres URL (or set KRYT_TEST_POSTGRES_URL)")


if __name__ == "__main__":
    main()
