"""Tournaments end to end on SQLite with the bundled bots: a full run, resume after kill -9
(no game lost, none duplicated), and replay verification of every stored game."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from arena.db import (
    GameResult,
    games_of_series,
    get_tournament,
    open_database,
    series_of_tournament,
    stored_record,
)
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create, label_prefix, tasks_for
from leaderboard.standings import standings
from referee.replay import verify
from referee.series import SeriesConfig, SeriesFormat, deal_number, game_deck
from sandbox import sweep_leftovers
from tests.scaling.helpers import processes_in, wait_no_processes_in

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def check_complete(db_url: str, tournament_id: int) -> int:
    """Every series has exactly its planned games, numbered 1..N, dealt from its seed."""
    db = open_database(db_url, create=False)
    total = 0
    with db.read_session() as session:
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            games = games_of_series(series.id, session=session)
            numbers = [g.number for g in games]
            assert numbers == list(range(1, series.games_planned + 1)), numbers
            config = SeriesConfig(
                games=series.games_planned, seed=series.seed, format=SeriesFormat(series.format)
            )
            for game in games:
                deal = deal_number(config, game.number)
                assert game.deck == [str(c) for c in game_deck(series.seed, deal)]
            all_attempts = games_of_series(series.id, session=session, include_voided=True)
            assert len([g for g in all_attempts if not g.voided]) == series.games_planned
            total += len(games)
    return total


def verify_all(db_url: str, tournament_id: int) -> None:
    db = open_database(db_url, create=False)
    with db.read_session() as session:
        turn_limit = get_tournament(tournament_id, session=session).config["turn_limit"]
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            for game in games_of_series(series.id, session=session):
                assert game.turn_limit == turn_limit
                check = verify(stored_record(game))
                assert check.ok, (game.id, check.problems)


def test_a_round_robin_runs_to_completion_and_every_game_verifies(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / "random"), str(EXAMPLES / "greedy")],
        games_per_pair=6,
        format="duplicate",
        backend="process",
        seed=5,
    )
    tournament_id = create(config, db=db, store=tmp_path / "store")
    seen: list[tuple[int, int]] = []
    outcomes = LocalExecutor(2).run(
        tasks_for(tournament_id, db=db, store=tmp_path / "store"),
        stop=threading.Event(),
        on_game=lambda series, number, record: seen.append((series, number)),
    )
    assert [o.status for o in outcomes] == ["finished"]
    assert sorted(seen) == [(outcomes[0].series_id, n) for n in range(1, 7)]
    assert check_complete(url, tournament_id) == 6
    verify_all(url, tournament_id)
    with db.read_session() as session:
        board = standings(session=session, tournament_id=tournament_id)
    assert {row.bot for row in board.rows} == {"random", "greedy"}
    assert sum(row.games for row in board.rows) == 12
    assert all(row.wins + row.draws + row.losses == row.games for row in board.rows)


RUNNER = textwrap.dedent(
    """
    import sys, threading
    from arena.db import open_database
    from arena.tournament.executors import LocalExecutor
    from arena.tournament.runner import tasks_for
    url, tid, store = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    db = open_database(url)
    from pathlib import Path
    LocalExecutor(2).run(tasks_for(tid, db=db, store=Path(store)), stop=threading.Event())
    """
)


def counted_games(db_url: str, tournament_id: int) -> list[str | None]:
    """Results of the counted games of a tournament."""
    db = open_database(db_url, create=False)
    results = []
    with db.read_session() as session:
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            results += [g.result for g in games_of_series(series.id, session=session)]
    return results


def test_resume_after_kill_9_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    store = tmp_path / "store"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / name) for name in ("random", "greedy")] + [str(EXAMPLES / "mc")],
        games_per_pair=8,
        backend="process",
        seed=11,
        move_seconds=0.05,
    )
    tournament_id = create(config, db=db, store=store)
    process = subprocess.Popen(
        [sys.executable, "-c", RUNNER, url, str(tournament_id), str(store)],
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            recorded = len(counted_games(url, tournament_id))
            if recorded >= 5 and processes_in(store):
                break
            assert process.poll() is None, "the tournament ended before it could be killed"
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(30)
    assert 5 <= recorded < 24
    # The killed referee's bots die with it (no orphan keeps playing).
    assert wait_no_processes_in(store) == []
    # What the killed run left (socket folders) is swept before resuming, as the CLI does.
    assert sweep_leftovers(label_prefix(url, tournament_id)) >= 1
    outcomes = LocalExecutor(2).run(
        tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
    )
    assert {o.status for o in outcomes} == {"finished"}
    assert check_complete(url, tournament_id) == 24
    verify_all(url, tournament_id)
    assert set(counted_games(url, tournament_id)) <= {r.value for r in GameResult}
