"""A tournament around hostile bots in Docker finishes: each gets a verdict, the others play,
and no container is left behind. Needs a Docker engine (required under CI)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from arena.db import (
    games_of_series,
    open_database,
    series_of_tournament,
    submission_labels,
)
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create, label_prefix, tasks_for
from tests.services import require

BOTS = Path(__file__).parent / "bots"
EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"

pytestmark = pytest.mark.docker


def docker_backend_or_skip() -> None:
    """Skip (fail under CI) without an engine; build the bot base image if it is missing."""
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:  # any reason the engine is not usable
        require(False, "Docker engine", str(exc))
    from sandbox import base_image

    base_image.build()  # cached: rebuilds only the project layer when the sources changed


def containers_labelled(prefix: str) -> list[str]:
    """Ids of the containers with a label starting with ``prefix``.

    Sparse listing: no inspect per container, which would race with containers that other
    tests (in parallel) remove meanwhile."""
    import docker

    client = docker.from_env()
    return [
        str(c.id)
        for c in client.containers.list(all=True, sparse=True)
        if any(str(v).startswith(prefix) for v in (c.attrs.get("Labels") or {}).values())
    ]


def test_a_tournament_with_hostile_bots_finishes_with_verdicts(tmp_path: Path) -> None:
    docker_backend_or_skip()
    url = f"sqlite:///{tmp_path / 'k.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / "greedy"), str(BOTS / "memhog"), str(BOTS / "forkbomb")],
        games_per_pair=2,
        backend="docker",
        move_seconds=1.0,
        bank_seconds=1.0,
        # The fork bomb's spinning ends in a timeout at the 1+1 s above. At its memory limit
        # the kernel may thrash the hog's pages for many seconds before the OOM kill: a
        # roomy clock lets its verdict be the memory limit however busy the machine, and
        # greedy's moves beside two hostile bots are never the forfeit.
        bot_time={"memhog": "120+0", "greedy": "30+60"},
        memory_mb=128,
        pids=32,
        seed=3,
        startup_seconds=120.0,  # starting a container on a busy machine is not under test
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    outcomes = LocalExecutor(2).run(
        tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
    )
    assert {o.status for o in outcomes} == {"finished"}
    with db.read_session() as session:
        labels = submission_labels(session=session)
        verdicts: dict[str, set[str]] = {}
        lost: dict[str, int] = {}
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            games = games_of_series(series.id, session=session)
            assert len(games) == 2
            for game in games:
                if game.forfeit_seat is None:
                    continue
                seats = (game.seat0_submission_id, game.seat1_submission_id)
                offender = labels[seats[game.forfeit_seat]][0]
                verdicts.setdefault(offender, set()).add(game.end_reason)
                lost[offender] = lost.get(offender, 0) + 1
    assert "greedy" not in verdicts
    assert verdicts["memhog"] <= {"memory limit"}, verdicts
    assert verdicts["forkbomb"] <= {"crash", "timeout", "process limit"}, verdicts
    # Every game of a hostile bot is its forfeit (2 games against each of 2 opponents;
    # when both are hostile, the one that fails first forfeits).
    assert lost["memhog"] + lost["forkbomb"] == 6
    assert lost["memhog"] >= 2 and lost["forkbomb"] >= 2
    assert containers_labelled(label_prefix(url, tournament_id)) == []


def test_a_tournament_with_bots_that_never_start_finishes(tmp_path: Path) -> None:
    """The docker.sock symlink swapper and a bot crashing at start-up: each forfeits every
    game against a real bot, their own game ends in a double forfeit, and the run finishes."""
    docker_backend_or_skip()
    hostile = Path(__file__).resolve().parents[1] / "sandbox" / "hostile"
    bots = []
    for name in ("sockswap", "crasher"):
        dest = tmp_path / "bots" / name
        shutil.copytree(hostile / name, dest, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(hostile / "_serve.py", dest / "_serve.py")
        bots.append(str(dest))
    url = f"sqlite:///{tmp_path / 'k.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / "greedy"), *bots],
        games_per_pair=1,
        backend="docker",
        # Generous: the swapper is refused on sight and the crasher dies, whatever the
        # deadline; greedy must start however busy the machine.
        startup_seconds=120.0,
        seed=4,
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    outcomes = LocalExecutor(2).run(
        tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
    )
    assert {o.status for o in outcomes} == {"finished"}
    with db.read_session() as session:
        labels = submission_labels(session=session)
        results = {}
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            (game,) = games_of_series(series.id, session=session)
            pair = tuple(
                sorted(labels[s][0] for s in (series.submission_a_id, series.submission_b_id))
            )
            results[pair] = (game.result, game.end_reason, game.forfeit_seat)
    # greedy was entered first, so it sits in seat 0 of its series and wins them.
    assert results[("greedy", "sockswap")] == ("seat0", "startup failure", 1)
    assert results[("crasher", "greedy")] == ("seat0", "startup failure", 1)
    assert results[("crasher", "sockswap")] == ("draw", "double forfeit", None)
    assert containers_labelled(label_prefix(url, tournament_id)) == []
