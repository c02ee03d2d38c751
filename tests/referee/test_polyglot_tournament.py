"""A round robin of example bots in Python, JavaScript, Java, C++ and Go under Docker: every
game is played out under the rules (no forfeit, no void) and verifies by replay."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from arena.db import games_of_series, open_database, series_of_tournament, stored_record
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create, label_prefix, tasks_for
from referee.replay import verify
from tests.referee.test_hostile_tournament import containers_labelled, docker_backend_or_skip

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / "sdk" / "examples"
STARTERS = ROOT / "sdk" / "tools" / "starters"

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]


def test_a_round_robin_of_five_languages_under_docker(tmp_path: Path) -> None:
    docker_backend_or_skip()
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image
    from tests.services import require

    for runtime in ("node", "java", "cpp", "go"):  # cached: CI provisioning built them
        try:
            build_image(runtime)
        except BaseImageError as exc:
            require(False, f"the {runtime} runtime image", str(exc))
    url = f"sqlite:///{tmp_path / 'k.db'}"
    db = open_database(url)
    bots = [
        PYTHON / "greedy",
        PYTHON / "random",
        *(STARTERS / lang for lang in ("js", "java", "cpp", "go")),
    ]
    config = load_config(
        None,
        bots=[str(b) for b in bots],
        games_per_pair=2,
        backend="docker",
        startup_seconds=120.0,  # a compiled bot's first start includes its build
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    outcomes = LocalExecutor(2).run(
        tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
    )
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    with db.read_session() as session:
        series = series_of_tournament(tournament_id, session=session)
        assert len(series) == 15
        for one in series:
            assert one.id is not None
            games = games_of_series(one.id, session=session)
            assert len(games) == 2
            for game in games:
                assert game.forfeit_seat is None, (game.end_reason, game.forfeit_detail)
                check = verify(stored_record(game))
                assert check.ok, check.problems
    assert containers_labelled(label_prefix(url, tournament_id)) == []
