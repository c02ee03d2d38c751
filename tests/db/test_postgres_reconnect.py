"""A tournament run on PostgreSQL rides out a short outage (connections terminated, the
database refusing connections for a few seconds): it finishes with every planned game
stored once. An outage longer than the retry window still ends the run with exit 3 and the
resume command, and the resume completes it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from arena.db import LeaseLostError, get_lease, hold_lease, open_database
from arena.db.engine import RETRY_SECONDS_ENV
from arena.tournament.lease import RunLease
from tests.db.helpers import build_world
from tests.db.postgres_admin import allow_connections as _allow
from tests.db.postgres_admin import terminate_connections as _terminate

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
KRYT = [sys.executable, "-m", "kryt"]
GAMES = 600
"""Games of the one series (random vs greedy: a few hundredths of a second each), so that
the outages below happen while the run is playing."""
DEADLINE_S = 600.0
"""Generous on a busy machine: the whole run normally takes under a minute."""


def _games(url: str) -> list[tuple[int, int, int, bool]] | None:
    """(series, number, attempt, voided) of every stored game; None while unreachable."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT series_id, number, attempt, voided FROM games"))
            return sorted((r[0], r[1], r[2], bool(r[3])) for r in rows)
    except SQLAlchemyError:
        return None
    finally:
        engine.dispose()


def _counted(url: str) -> int:
    found = _games(url)
    return 0 if found is None else sum(1 for g in found if not g[3])


def _wait_for_games(url: str, at_least: int, run: subprocess.Popen[bytes]) -> bool:
    """Wait until ``at_least`` counted games are stored; False if the run ended first."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if _counted(url) >= at_least:
            return True
        if run.poll() is not None:
            return False
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} games after {DEADLINE_S:g} s")


def _start(url: str, tmp_path: Path, retry_seconds: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), RETRY_SECONDS_ENV: retry_seconds}
    return subprocess.Popen(
        [*KRYT, "tournament", *args, "--database", url, "--store", str(tmp_path / "store")],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "stderr.txt").open("ab"),
        env=env,
    )


def _finish(run: subprocess.Popen[bytes], tmp_path: Path) -> tuple[int, str]:
    code = run.wait(timeout=DEADLINE_S)
    return code, (tmp_path / "stderr.txt").read_text(errors="replace")


def _assert_every_game_once(url: str) -> None:
    games = _games(url)
    assert games is not None
    counted = [(s, n) for s, n, _, voided in games if not voided]
    assert len(counted) == GAMES, f"{len(counted)} counted games stored, {GAMES} planned"
    assert sorted({n for _, n in counted}) == list(range(1, GAMES + 1)), "a game is missing"
    assert len(set(counted)) == len(counted), "a game is stored twice"


@contextlib.contextmanager
def _run_with_outages(
    url: str, admin: Engine, tmp_path: Path, retry_seconds: str
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A run of random against greedy and the name of its database, in which the block makes
    outages; afterwards the database accepts connections again and the run is gone."""
    name = make_url(url).database
    assert name is not None
    run = _start(
        url, tmp_path, retry_seconds,
        "run", "builtin:random", "builtin:greedy", "--games", str(GAMES), "--backend", "process",
    )  # fmt: skip
    try:
        yield run, name
    finally:
        _allow(admin, name, True)
        if run.poll() is None:
            run.kill()
            run.wait()


def test_a_run_rides_out_terminated_connections_and_a_short_outage(
    postgres_url: str, admin: Engine, tmp_path: Path
) -> None:
    with _run_with_outages(postgres_url, admin, tmp_path, "300") as (run, name):
        assert _wait_for_games(postgres_url, 20, run), "the run ended before any outage"
        _terminate(admin, name)  # a blip: every connection dropped at once
        assert _wait_for_games(postgres_url, _counted(postgres_url) + 20, run), "ended early"
        # An outage: the database refuses connections for a few seconds.
        _allow(admin, name, False)
        _terminate(admin, name)
        time.sleep(3)
        _allow(admin, name, True)
        if _wait_for_games(postgres_url, _counted(postgres_url) + 20, run):
            _terminate(admin, name)  # once more
        code, err = _finish(run, tmp_path)
    assert code == 0, err
    assert "lost while" in err and "is back after" in err, err
    _assert_every_game_once(postgres_url)


def test_an_outage_longer_than_the_retries_ends_the_run_and_resume_completes_it(
    postgres_url: str, admin: Engine, tmp_path: Path
) -> None:
    with _run_with_outages(postgres_url, admin, tmp_path, "1") as (run, name):
        assert _wait_for_games(postgres_url, 20, run), "the run ended before the outage"
        _allow(admin, name, False)
        _terminate(admin, name)
        code, err = _finish(run, tmp_path)
    assert code == 3, err
    assert "lost while" in err, err
    hints = [line for line in err.splitlines() if line.startswith("hint:")]
    assert hints and hints[-1].endswith("once the database is back: kryt tournament resume 1"), err
    assert "Traceback" not in err, err
    before = _counted(postgres_url)
    assert 20 <= before < GAMES

    (tmp_path / "stderr.txt").unlink()
    code, err = _finish(_start(postgres_url, tmp_path, "300", "resume", "1"), tmp_path)
    assert code == 0, err
    _assert_every_game_once(postgres_url)


def test_the_lease_rides_out_a_short_outage_and_lapses_in_a_long_one(
    postgres_url: str, admin: Engine
) -> None:
    """The heartbeat renews as soon as the database is back; a run that could not renew for
    the lease's lifetime is told it lost the lease (it stops), and its records are refused."""
    name = make_url(postgres_url).database
    assert name is not None
    ttl = 10.0
    db = open_database(postgres_url)
    lost: list[str] = []
    try:
        world = build_world(db)
        lease = RunLease(
            db,
            world.tournament_id,
            on_lost=lost.append,
            ttl=timedelta(seconds=ttl),
            heartbeat_seconds=0.5,
        )
        with lease:
            _allow(admin, name, False)
            _terminate(admin, name)
            time.sleep(2)
            _allow(admin, name, True)
            back = datetime.now(UTC)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with db.read_session() as session:
                    info = get_lease(world.tournament_id, session=session)
                assert info is not None
                if info.heartbeat_at > back:
                    break
                time.sleep(0.1)
            else:
                raise AssertionError("the lease was not renewed after the outage")
            assert not lease.lost and not lost

            _allow(admin, name, False)
            _terminate(admin, name)
            deadline = time.monotonic() + 120
            while not lost and time.monotonic() < deadline:
                time.sleep(0.1)
            _allow(admin, name, True)
            assert lost, "the run was not told that its lease lapsed"
            assert lease.lost
            assert "could not renew the lease" in lost[0], lost
            assert f"kryt tournament resume {world.tournament_id}" in lost[0], lost
            # The run stops no later than the stored lease expires; from then on (another
            # run could have taken the tournament) its records are refused.
            with db.read_session() as session:
                info = get_lease(world.tournament_id, session=session)
            assert info is not None and info.runner_id == lease.runner_id
            time.sleep(max(0.0, (info.expires_at - datetime.now(UTC)).total_seconds()) + 0.2)
            with pytest.raises(LeaseLostError, match="expired"), db.session() as session:
                hold_lease(world.tournament_id, lease.runner_id, session=session)
    finally:
        _allow(admin, name, True)
        db.close()
