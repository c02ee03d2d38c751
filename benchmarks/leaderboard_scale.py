#!/usr/bin/env python3
"""`kryt leaderboard` and a refit on a database of 10^6 games (targets: <= 2 s and <= 1 s).

    python benchmarks/leaderboard_scale.py [--games 1000000] [--bots 20] [--tournaments 1]
        [--format standard|duplicate] [--moves 30] [--database URL] [--keep]

Fills a database (a new SQLite file by default; ``--database`` for PostgreSQL, which must be
empty) through the project's own API: submissions with ``arena.db.submit``, tournaments with
``create_tournament``, games with ``arena.db.record_games`` (the bulk form of
``record_game``: same validation, same rows, live Elo applied in the same transaction).
Games are synthetic: a round robin of ``--bots`` bots with hidden strengths and a first-mover
edge; about 8 % draws, 3 % forfeits (timeouts) and 0.2 % voided games replayed as a second
attempt; each with a shuffled deal and ``--moves`` moves of plausible text.

``--no-fill`` skips the filling and measures a database filled before (``--database``).

Then it times, best of three (the machine may be shared):
* ``standings()`` in process (what ``kryt leaderboard`` computes), of all tournaments, with a
  new fit (``reuse=False``);
* ``kryt leaderboard`` as a subprocess (interpreter start-up included; wall and CPU time)
  while the stored ratings are stale (it fits), and its start-up alone (``kryt --help``);
* ``refit_and_store`` of the first tournament (what the runner does during a run);
* ``kryt leaderboard`` again, now that the stored ratings are fresh (the board reuses them:
  no fit, no SciPy);
* recording one more game with ``record_game`` (its live Elo update included).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlmodel import func, select  # noqa: E402

from arena.db import (  # noqa: E402
    Database,
    GamePlace,
    NewSubmission,
    SeriesFormat,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    list_tournaments,
    open_database,
    record_game,
    record_games,
    series_of_tournament,
    submit,
)
from arena.db import Game as StoredGame  # noqa: E402
from leaderboard.standings import refit_and_store, standings  # noqa: E402
from referee.protocol.messages import GameEndReason  # noqa: E402
from referee.record import Forfeit, GameRecord, Move  # noqa: E402

CARDS = [r + s for s in "CDHS" for r in "6789TJQKA"]
ACTIONS = ["take", "done", "lead 6C", "lead TH", "cover 7S", "pass 9D", "throw QC"]
CHUNK = 20_000
T0 = 1_780_000_000.0


def synthetic_games(
    rng: random.Random,
    series_id: int,
    seats: tuple[int, int],
    strength: dict[int, float],
    count: int,
    duplicate: bool,
    moves: int,
    decks: list[tuple[str, ...]],
    clock: Iterator[float],
) -> Iterator[tuple[GameRecord, GamePlace]]:
    """``count`` counted games of one series (plus voided attempts now and then)."""
    a, b = seats
    # The moves' text does not matter to the leaderboard: two fixed lists (by first mover).
    plays = [
        tuple(Move((first + k) % 2, ACTIONS[k % len(ACTIONS)], 0.003) for k in range(moves))
        for first in (0, 1)
    ]
    deck = decks[0]
    for number in range(1, count + 1):
        if not duplicate or number % 2 == 1:
            deck = rng.choice(decks)
        dealer = (number % 2) if duplicate else rng.randrange(2)
        first_seat = 1 - dealer  # the dealer's left moves first
        sub = (a, b)
        edge = strength[sub[first_seat]] - strength[sub[1 - first_seat]] + 30.0
        p_first = 1.0 / (1.0 + 10.0 ** (-edge / 400.0))
        attempts = 2 if rng.random() < 0.002 else 1
        for attempt in range(1, attempts + 1):
            start = next(clock)
            roll = rng.random()
            forfeit = None
            final_cover = None
            if attempt < attempts:
                ending, winner = GameEndReason.VOID, None
            elif roll < 0.08:
                ending, winner = GameEndReason.TURN_LIMIT, None
            elif roll < 0.11:
                loser = rng.randrange(2)
                ending, winner = GameEndReason.TIMEOUT, 1 - loser
                forfeit = Forfeit(loser, ending, "", "no reply in time")
            else:
                ending = GameEndReason.OUT
                won_first = rng.random() < p_first
                winner = first_seat if won_first else 1 - first_seat
            record = GameRecord(
                deck=deck,
                dealer=dealer,
                turn_limit=500,
                moves=plays[first_seat],
                ending=ending,
                winner=winner,
                forfeit=forfeit,
                final_cover=final_cover,
                void_reason="referee error (synthetic)" if ending is GameEndReason.VOID else "",
                referee_version="benchmark",
                started=start,
                finished=start + 1.5,
            )
            yield record, GamePlace(series_id, number, attempt, seats)


def fill(db: Database, args: argparse.Namespace) -> tuple[int, int]:
    """Fill the database; returns (counted games, id of the largest tournament)."""
    rng = random.Random(args.seed)
    decks = []
    for _ in range(64):
        cards = CARDS[:]
        rng.shuffle(cards)
        decks.append(tuple(cards))
    with db.session() as session:
        ids = []
        for k in range(args.bots):
            sub = NewSubmission(
                bot_name=f"bench{k:03d}",
                version="1",
                sha256=f"{args.seed:032x}{k:032x}",
                submitted_by="benchmark",
            )
            row = submit(sub, session=session).submission
            assert row.id is not None
            ids.append(row.id)
    strength = {sid: rng.gauss(0.0, 150.0) for sid in ids}
    pairs = list(itertools.combinations(ids, 2))
    per_tournament = args.games // args.tournaments
    per_series = math.ceil(per_tournament / len(pairs))
    per_series += per_series % 2 if args.format == "duplicate" else 0
    fmt = SeriesFormat(args.format)
    total = 0
    first_tournament = 0
    clock = itertools.count(T0, 0.01)
    batch: list[tuple[GameRecord, GamePlace]] = []

    def flush() -> None:
        with db.session() as session:
            record_games(batch, session=session)
        batch.clear()

    for t in range(args.tournaments):
        with db.session() as session:
            tournament = create_tournament(
                TournamentSpec(
                    name=f"bench {t}",
                    seed=t,
                    config={"games": per_series},
                    series=[
                        SeriesSpec(a, b, per_series, k, format=fmt)
                        for k, (a, b) in enumerate(pairs)
                    ],
                ),
                session=session,
            )
            assert tournament.id is not None
            first_tournament = first_tournament or tournament.id
            series = [
                (s.id, s.submission_a_id, s.submission_b_id)
                for s in series_of_tournament(tournament.id, session=session)
            ]
        left = per_tournament
        for series_id, a, b in series:
            assert series_id is not None
            count = min(per_series, left)
            left -= count
            for item in synthetic_games(
                rng,
                series_id,
                (a, b),
                strength,
                count,
                args.format == "duplicate",
                args.moves,
                decks,
                clock,
            ):
                batch.append(item)
                if len(batch) >= CHUNK:
                    flush()
            total += count
            if left <= 0:
                break
        print(f"  tournament {t + 1}/{args.tournaments} filled ({total} games so far)", flush=True)
    if batch:
        flush()
    return total, first_tournament


def best_of(runs: int, work: Callable[[], object]) -> tuple[float, float]:
    """(best, first) wall-clock seconds of ``runs`` calls."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times), times[0]


def best_subprocess(runs: int, command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(best wall, best CPU) seconds of ``runs`` runs of ``command`` (CPU: user + system of
    the child, which a loaded machine inflates less than the wall clock)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=True, timeout=600)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL, else None."""
    prefix = "sqlite:///"
    return url[len(prefix) :] if url.startswith(prefix) else None


def existing(db: Database) -> tuple[int, int]:
    """(counted games, first tournament id) of a database filled before."""
    with db.read_session() as session:
        rows = standings(session=session).rows
        tournament = min(t.id for t in list_tournaments(session=session) if t.id is not None)
    return sum(r.games for r in rows) // 2, tournament


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--bots", type=int, default=20)
    parser.add_argument("--tournaments", type=int, default=1)
    parser.add_argument("--format", choices=["standard", "duplicate"], default="standard")
    parser.add_argument("--moves", type=int, default=30, help="moves stored per game")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--database", help="database URL (default: a new SQLite file)")
    parser.add_argument("--keep", action="store_true", help="keep the SQLite file")
    parser.add_argument(
        "--no-fill", action="store_true", help="measure the database filled before (--database)"
    )
    args = parser.parse_args()
    if args.no_fill and not args.database:
        parser.error("--no-fill needs --database (the database filled before)")
    folder = tempfile.mkdtemp(prefix="kryt-bench-")
    url = args.database or f"sqlite:///{folder}/bench.db"
    db = open_database(url)
    if args.no_fill:
        games, tournament_id = existing(db)
        print(f"measuring {url.split('@')[-1]}: {games} counted games", flush=True)
    else:
        start = time.perf_counter()
        print(f"filling {url.split('@')[-1]} with {args.games} games ...", flush=True)
        games, tournament_id = fill(db, args)
        fill_seconds = time.perf_counter() - start
        print(
            f"filled {games} counted games in {fill_seconds:.0f} s "
            f"({1e6 * fill_seconds / games:.0f} µs/game)"
        )
    path = sqlite_path(url)
    if path is not None:
        # Recent writes may still sit in the write-ahead log beside the file.
        size = sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))
        print(f"database size {size / 2**20:.0f} MiB ({size / games:.0f} bytes/game)")

    def board() -> None:
        with db.read_session() as session:
            rows = standings(session=session, reuse=False).rows
        assert sum(r.games for r in rows) == 2 * games

    best, first = best_of(args.runs, board)
    print(f"standings(), all tournaments: best {best:.2f} s, first {first:.2f} s (target <= 2 s)")
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "kryt", "leaderboard", "--database", url]
    wall, cpu = best_subprocess(args.runs, command, env)
    startup, _ = best_subprocess(args.runs, [sys.executable, "-m", "kryt", "--help"], env)
    print(
        f"kryt leaderboard (subprocess), ratings stale (it fits): best {wall:.2f} s wall, "
        f"{cpu:.2f} s CPU (target <= 2 s; kryt --help alone {startup:.2f} s)"
    )
    best, first = best_of(args.runs, lambda: refit_and_store(db, tournament_id=tournament_id))
    print(
        f"refit_and_store, tournament {tournament_id}: best {best:.2f} s, "
        f"first {first:.2f} s (target <= 1 s)"
    )
    wall, cpu = best_subprocess(args.runs, command, env)
    print(
        f"kryt leaderboard (subprocess), stored ratings fresh: best {wall:.2f} s wall, "
        f"{cpu:.2f} s CPU (target <= 2 s)"
    )
    with db.read_session() as session:
        (series, *_) = series_of_tournament(tournament_id, session=session)
        assert series.id is not None
        seats = (series.submission_a_id, series.submission_b_id)
        series_id = series.id
        # Past the last recorded number (a --no-fill run may follow one that added some).
        last = session.exec(
            select(func.max(StoredGame.number)).where(StoredGame.series_id == series_id)
        ).one()
        planned = max(series.games_planned, int(last or 0))
    extra = synthetic_games(
        random.Random(0),
        series_id,
        seats,
        {s: 0.0 for s in seats},
        planned + args.runs,
        False,
        args.moves,
        [tuple(CARDS)],
        itertools.count(T0 + 1e7, 1.0),
    )
    records = [item for item in extra if item[1].number > planned]
    it = iter(records)

    def one() -> None:
        record, place = next(it)
        with db.session() as session:
            record_game(record, place, session=session)

    best, first = best_of(len(records), one)
    print(
        f"record_game at this size (live Elo included): best {1000 * best:.1f} ms, "
        f"first {1000 * first:.1f} ms"
    )
    if not args.keep and not args.database:
        db.close()
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)
    elif not args.database:
        print(f"kept {url}")


if __name__ == "__main__":
    main()
