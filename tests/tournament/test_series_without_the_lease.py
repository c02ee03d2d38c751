"""A series task of a run that does not hold the tournament's lease records nothing, at a
table as for a pair: one owner per tournament. Table series recorded their games without
checking the lease (a run that had lost it kept recording until its heartbeat noticed)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from arena.db import LeaseHolder, acquire_lease, open_database, series_of_tournament
from arena.db import games_of_series as stored_games
from arena.tournament.config import SandboxSettings, TournamentConfig
from arena.tournament.lease import this_host
from arena.tournament.runner import create, play_series_task, tasks_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_a_run_without_the_lease_plays_but_records_nothing(ruleset: str, tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    config = TournamentConfig(
        bots=(str(EXAMPLES / "greedy"), str(EXAMPLES / "random")),
        games_per_pair=3,
        ruleset=ruleset,
        table_size=2,
        sandbox=SandboxSettings(backend="process"),
    )
    tid = create(config, db=db, store=tmp_path / "store")
    with db.session() as session:  # another run holds the tournament
        holder = LeaseHolder("other0run", this_host(), os.getpid(), None)
        acquire_lease(tid, holder, ttl=timedelta(minutes=10), session=session)
    [task] = tasks_for(tid, db=db, store=tmp_path / "store", runner_id="stale0run")
    outcome = play_series_task(task)
    assert outcome.status == "interrupted", outcome
    assert outcome.games_played == 0
    assert "stale0run no longer holds tournament" in outcome.message, outcome.message
    with db.read_session() as session:
        [series] = series_of_tournament(tid, session=session)
        series_id = series.id
        assert series_id is not None
        assert [g for g in stored_games(series_id, session=session) if not g.voided] == []
        assert series.status == "pending"  # not even marked running by the stale run
    # The holder itself plays and records every game (the check is not a refusal of all).
    [own] = tasks_for(tid, db=db, store=tmp_path / "store", runner_id="other0run")
    assert play_series_task(own).status == "finished"
    with db.read_session() as session:
        assert len(stored_games(series_id, session=session)) == 3
