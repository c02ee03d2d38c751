"""The leaderboard benchmark's filler stores what it says, through the bulk API, so the
figures it prints are about the database it describes."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from arena.db import open_database
from arena.db.elo import elo_board
from leaderboard.standings import standings

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "leaderboard_scale.py"


def test_the_filler_stores_counted_games_with_their_live_elo(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("leaderboard_scale", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db = open_database(f"sqlite:///{tmp_path / 'bench.db'}")
    args = argparse.Namespace(games=600, bots=4, tournaments=2, format="duplicate", moves=5, seed=2)
    games, tournament_id = module.fill(db, args)
    assert games == 600
    with db.read_session() as session:
        board = standings(session=session)
        live = elo_board(session=session, tournament_id=None, ruleset="default", players=2)
        one = standings(session=session, tournament_id=tournament_id)
    assert sum(r.games for r in board.rows) == 2 * games
    assert live.games == games  # every counted game went through live Elo
    assert board.paired and sum(sum(p.counts) for p in board.pentanomials) == games // 2
    assert sum(r.games for r in one.rows) == 2 * (games // 2)
    assert sum(sum(r.forfeits.values()) for r in board.rows) > 0
    db.close()
