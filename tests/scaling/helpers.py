"""Shared checks for the scaling tests: tournaments of the bundled bots and their games."""

from __future__ import annotations

import os
import time
from pathlib import Path

from arena.db import Database, SeriesStatus, games_of_series, series_of_tournament
from arena.tournament.config import load_config
from arena.tournament.runner import create
from referee.series import SeriesConfig, SeriesFormat, deal_number, game_deck

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def make_tournament(db: Database, store: Path, *, bots: tuple[str, ...], games: int) -> int:
    """A round robin of bundled bots (trusted: the process backend runs them) with short
    move limits, so a test plays dozens of games in seconds."""
    config = load_config(
        None,
        bots=[str(EXAMPLES / name) for name in bots],
        games_per_pair=games,
        backend="process",
        seed=7,
        move_seconds=0.05,
        bank_seconds=1.0,
        turn_limit=400,
    )
    return create(config, db=db, store=store)


def all_games(db: Database, tournament_id: int) -> list[tuple[int, int]]:
    """``(series_id, number)`` of every game the tournament should have when finished."""
    with db.read_session() as session:
        return sorted(
            (s.id, n)
            for s in series_of_tournament(tournament_id, session=session)
            if s.id is not None
            for n in range(1, s.games_planned + 1)
        )


def game_ids(db: Database, series_id: int) -> dict[int, int]:
    """``number -> row id`` of the series' counted games (to show a game was not replayed)."""
    with db.read_session() as session:
        return {g.number: g.id for g in games_of_series(series_id, session=session) if g.id}


def check_complete(db: Database, tournament_id: int) -> int:
    """Every series finished with exactly its planned games, numbered 1..N, each dealt from
    the series seed (one counted game per number: none lost or duplicated); returns the count."""
    total = 0
    with db.read_session() as session:
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            assert series.status == SeriesStatus.FINISHED.value, (series.id, series.status)
            games = games_of_series(series.id, session=session)
            assert [g.number for g in games] == list(range(1, series.games_planned + 1))
            config = SeriesConfig(
                games=series.games_planned, seed=series.seed, format=SeriesFormat(series.format)
            )
            for game in games:
                deck = game_deck(series.seed, deal_number(config, game.number))
                assert game.deck == [str(card) for card in deck], (series.id, game.number)
            # Voided attempts (our infrastructure failed) may exist; each says why.
            attempts = games_of_series(series.id, session=session, include_voided=True)
            for attempt in attempts:
                assert not attempt.voided or attempt.void_reason, (series.id, attempt.number)
            total += len(games)
    return total


def processes_in(folder: Path) -> list[int]:
    """Pids of live processes whose working directory is inside ``folder`` (bots)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(folder)):
            found.append(int(entry.name))
    return found


def wait_no_processes_in(folder: Path, seconds: float = 60.0) -> list[int]:
    """Wait for the bots under ``folder`` to be gone; returns those still alive. Generous:
    on a busy machine dying processes may take a while to exit."""
    deadline = time.monotonic() + seconds
    while processes_in(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    return processes_in(folder)
