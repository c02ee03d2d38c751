"""The ladder on a Dask cluster: ``kryt arena serve`` with ``KRYT_ARENA_LADDER_EXECUTOR=dask``
and the scheduler of a LocalCluster started here; its series run as Dask tasks on the
worker, commit their games and logs to the database, and the server refits and releases."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.service.conftest import CHATTY_BOT, _serve, make_bot, submit

pytestmark = pytest.mark.slow

WAIT_S = 240.0


@pytest.mark.timeout(600)
def test_the_ladder_plays_on_a_dask_cluster(tmp_path: Path) -> None:
    # distributed is only partly annotated: used through an untyped handle, as in the code.
    from arena.tournament.dask_executor import dask as distributed

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        env = {
            "KRYT_ARENA_LADDER_EXECUTOR": "dask",
            "KRYT_ARENA_LADDER_SCHEDULER": cluster.scheduler_address,
        }
        for arena in _serve(tmp_path, f"sqlite:///{tmp_path / 'arena.db'}", env):
            for author, name, code in (("alice", "alpha", CHATTY_BOT), ("bob", "beta", None)):
                checked = submit(arena, author, make_bot(tmp_path / name, name, code=code))
                assert checked["status"] == "active", checked
            finished = (
                "select s.id, l.claimed_by from ladder_series l join series s on "
                "s.id = l.series_id where s.status = 'finished'"
            )
            deadline = time.monotonic() + WAIT_S
            while not arena.query(finished):
                assert time.monotonic() < deadline, "no ladder series finished on Dask"
                time.sleep(0.5)

            def prefixes(dask_scheduler: Any) -> list[str]:
                return list(dask_scheduler.task_prefixes)

            # The series ran as Dask tasks (keys ladder-series-ID-...) on the cluster's worker...
            assert "ladder-series" in client.run_on_scheduler(prefixes)
            series_id, _ = arena.query(finished)[0]
            games = arena.query(
                "select count(*) from games where series_id = :id and not voided", id=series_id
            )[0][0]
            assert games == 4
            # ...with the bots' output captured there...
            logs = arena.query(
                "select l.text from game_logs l join games g on g.id = l.game_id "
                "where g.series_id = :id",
                id=series_id,
            )
            assert any("chatty thinking" in text for (text,) in logs)

            # ...and the server, told of the end, released the lease.
            lease = "select claimed_by from ladder_series where series_id = :id"
            deadline = time.monotonic() + 60
            while arena.query(lease, id=series_id)[0][0] is not None:
                assert time.monotonic() < deadline, "the finished series kept its lease"
                time.sleep(0.5)
