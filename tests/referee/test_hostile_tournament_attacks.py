"""The attacks of issue 13 entered as real submissions in real tournaments, under Docker and
under bubblewrap: each run finishes, only the attacker loses its games (never its
opponents), the organiser's log shows no raw terminal escapes, and nothing stays behind
(containers, cgroups, mounts, runtime directories).

The attackers are the sandbox suite's hostile fixtures (tests/sandbox/hostile): they do not
speak the game protocol, so each forfeits at start-up, but every attack runs while it is up
(forking until EAGAIN, a tree of memory hogs, filling /dev/shm and the socket directory,
printing escape sequences), while the other bots of the tournament must start and play.
"""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import pytest

from arena.db import games_of_series, open_database, series_of_tournament, submission_labels
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create, label_prefix, tasks_for
from tests.referee.test_hostile_tournament import containers_labelled, docker_backend_or_skip
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
HOSTILE = ROOT / "tests" / "sandbox" / "hostile"
ATTACKERS = ("nprocfill", "memtree", "devfill", "sockfill", "escapes")

pytestmark = pytest.mark.timeout(900)


def _bwrap_or_skip() -> None:
    from sandbox.errors import BackendUnavailableError
    from sandbox.local import BwrapBackend

    try:
        backend = BwrapBackend()
    except BackendUnavailableError as exc:
        require(False, "bubblewrap", str(exc))
        return
    problem = backend.untrusted_problem()
    require(problem is None, "bubblewrap limits for untrusted bots", str(problem))


ATTACK_AT_START = ("devfill", "sockfill")
"""Fixtures that attack when probed: in a tournament nobody probes, so they attack at start
(filling /dev/shm; filling the socket directory with bytes, files and a 5,000-level tree)."""


def _attacker(name: str, into: Path) -> str:
    dest = into / name
    shutil.copytree(HOSTILE / name, dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(HOSTILE / "_serve.py", dest / "_serve.py")
    if name in ATTACK_AT_START:
        bot = dest / "bot.py"
        text = bot.read_text(encoding="utf-8")
        assert text.rstrip().endswith("serve(report)"), name
        bot.write_text(text.rstrip()[: -len("serve(report)")] + "report()\nserve(report)\n")
    return str(dest)


def _kryt_cgroups(prefix: str) -> set[str]:
    """The bot cgroups (cgroup v1 layout) whose names start with ``prefix``."""
    found = set()
    for controller in ("memory", "pids", "cpuacct"):
        base = Path("/sys/fs/cgroup") / controller / "kryt"
        if base.is_dir():
            found |= {
                f"{controller}/{p.name}"
                for p in base.iterdir()
                if p.is_dir() and p.name.startswith(prefix)
            }
    return found


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
def test_attackers_in_a_real_tournament_hurt_nobody_but_themselves(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if backend == "docker":
        docker_backend_or_skip()
    else:
        _bwrap_or_skip()
    attackers = [_attacker(name, tmp_path / "bots") for name in ATTACKERS]
    url = f"sqlite:///{tmp_path / 'k.db'}"
    db = open_database(url)
    config = load_config(
        None,
        bots=[str(EXAMPLES / "greedy"), str(EXAMPLES / "random"), *attackers],
        games_per_pair=1,
        backend=backend,
        memory_mb=128,
        pids=64,
        startup_seconds=20.0,
        concurrency=2,
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    with caplog.at_level(logging.WARNING):
        outcomes = LocalExecutor(2).run(
            tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
        )
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    with db.read_session() as session:
        labels = submission_labels(session=session)
        offenders: dict[str, set[str]] = {}
        played_between_good_bots = 0
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            names = {labels[series.submission_a_id][0], labels[series.submission_b_id][0]}
            (game,) = games_of_series(series.id, session=session)
            if names == {"greedy", "random"}:
                assert game.forfeit_seat is None and game.end_reason in {
                    "out",
                    "draw by final answer",
                    "turn limit",
                }
                played_between_good_bots += 1
                continue
            if game.forfeit_seat is not None:
                seats = (game.seat0_submission_id, game.seat1_submission_id)
                offenders.setdefault(labels[seats[game.forfeit_seat]][0], set()).add(
                    game.end_reason
                )
            else:  # two attackers: neither could play
                assert game.end_reason == "double forfeit" and names <= set(ATTACKERS)
    assert played_between_good_bots == 1
    # Only attackers ever lose by forfeit; the real bots started every time.
    assert set(offenders) <= set(ATTACKERS), offenders
    assert "greedy" not in offenders and "random" not in offenders
    # The organiser's log carries no raw escape sequence from a bot.
    assert "\x1b" not in caplog.text and "\x9b" not in caplog.text
    # Nothing stays behind.
    if backend == "docker":
        assert containers_labelled(label_prefix(url, tournament_id)) == []
    assert _kryt_cgroups(label_prefix(url, tournament_id)) == set()
