"""A ratings refit computes without the write lock: writers never wait for the fit."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

import leaderboard.standings as standings_module
from arena.db import open_database, record_game
from leaderboard.standings import refit_and_store
from tests.db.helpers import build_world, game


def test_a_writer_is_not_blocked_while_a_refit_computes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    db = open_database(url)
    world = build_world(db, games=10)
    with db.session() as session:
        for number in range(1, 7):
            record, place = game(world, number, winner=number % 2)
            record_game(record, place, session=session)
    path = make_url(url).database
    assert path is not None
    writes: list[str] = []
    compute = standings_module.standings

    def standings_with_a_concurrent_writer(**kwargs: Any) -> Any:
        # Once the fit has read the games (its transaction is open), another connection
        # takes SQLite's write lock. It must get it at once (2 s is far beyond a free lock;
        # the old refit held the lock from its first read to its commit).
        board = compute(**kwargs)
        conn = sqlite3.connect(path, timeout=2.0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "UPDATE tournaments SET name = 'renamed' WHERE id = ?", (world.tournament_id,)
            )
            conn.execute("COMMIT")
            writes.append("done")
        except sqlite3.OperationalError as exc:
            writes.append(f"blocked: {exc}")
        finally:
            conn.close()
        return board

    monkeypatch.setattr(standings_module, "standings", standings_with_a_concurrent_writer)
    snapshot = refit_and_store(db, tournament_id=world.tournament_id)
    assert writes == ["done"]
    assert snapshot is not None and len(snapshot.entries) == 2
    assert sum(e.games for e in snapshot.entries) == 12
