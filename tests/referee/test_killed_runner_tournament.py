"""Issue 13.7 at tournament level: ``kryt tournament run`` killed with SIGKILL mid-game while
its bots sleep in ``act``, under Docker and under bubblewrap.

Only the runner process is killed (not its process group), as an out-of-memory kill or a
crashed machine agent would do. Then:

1. the runner's reaper removes its bots (containers; bwrap processes, cgroups, socket tmpfs
   and work directories) within a bound, with nobody else starting anything;
2. ``kryt tournament resume`` is killed in turn, this time together with its reaper, so its
   bots stay behind; they are still there a while later (nothing else removes them);
3. a second ``kryt tournament resume`` sweeps them at its start and finishes the tournament:
   every game of every series is recorded exactly once (numbers 1..N, no duplicate), no
   bot is scored as forfeiting, and nothing of the tournament is left on the host.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.db import games_of_series, open_database, series_of_tournament
from arena.tournament.runner import label_prefix
from sandbox.backend import runtime_dir, safe_label
from sandbox.cgroups import cgroup_layout
from sandbox.hostfs import mounts_under
from tests.referee.test_hostile_tournament import containers_labelled, docker_backend_or_skip
from tests.referee.test_hostile_tournament_attacks import _bwrap_or_skip

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
GAMES = 4
#: The reaper reads EOF as soon as the kernel closes the dead runner's pipe; removing two
#: containers takes seconds. Generous for a loaded two-core machine.
REAP_BOUND = 90.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

NAPPER = '''"""Sleeps in every act: a runner killed mid-game finds it asleep."""

import time

from sdk import Bot, serve


class Napper(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        time.sleep(0.3)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Napper())
'''


def _napper(into: Path) -> str:
    folder = into / "napper"
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(NAPPER)
    (folder / "bot.toml").write_text(
        'name = "napper"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
    )
    return str(folder)


def _env() -> dict[str, str]:
    # The bot base image of these sources (docker_backend_or_skip built it if missing).
    from sandbox.base_image import bot_base_tag

    return dict(os.environ, PYTHONPATH=str(ROOT), KRYT_SANDBOX_BASE_IMAGE=bot_base_tag())


def _games(url: str, tournament_id: int) -> list[tuple[int, int]]:
    """(series id, game number) of every counted game of the tournament."""
    db = open_database(url, create=False)
    try:
        with db.read_session() as session:
            return [
                (s.id or 0, g.number)
                for s in series_of_tournament(tournament_id, session=session)
                for g in games_of_series(s.id or 0, session=session)
            ]
    finally:
        db.close()


def _forfeits(url: str, tournament_id: int) -> list[str]:
    db = open_database(url, create=False)
    try:
        with db.read_session() as session:
            return [
                g.end_reason
                for s in series_of_tournament(tournament_id, session=session)
                for g in games_of_series(s.id or 0, session=session)
                if g.forfeit_seat is not None
            ]
    finally:
        db.close()


def _bwrap_leftovers(prefix: str) -> list[str]:
    """Work directories, mounts and bot cgroups of the tournament still on the host."""
    name = safe_label(prefix)
    found = []
    for child in runtime_dir().iterdir():
        if child.name.startswith(name):
            found.append(str(child))
            found += [str(m) for m in mounts_under(child)]
    layout = cgroup_layout()
    if not isinstance(layout, str):
        for _, parent in layout.parents:
            found += [str(c) for c in parent.iterdir() if c.name.startswith(name)]
    return found


def _bot_pids(prefix: str) -> dict[int, str]:
    """Host pids (with start times) of every process in the tournament's bot cgroups."""
    layout = cgroup_layout()
    assert not isinstance(layout, str), layout
    pids: dict[int, str] = {}
    for _, parent in layout.parents:
        for group in parent.iterdir():
            if group.name.startswith(safe_label(prefix)):
                for line in (group / "cgroup.procs").read_text().split():
                    start = _start(int(line))
                    if start is not None:
                        pids[int(line)] = start
    return pids


def _start(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def _leftovers(backend: str, prefix: str, pids: dict[int, str]) -> list[str]:
    if backend == "docker":
        return [f"container {c}" for c in containers_labelled(prefix)]
    alive = [f"pid {p}" for p, start in pids.items() if _start(p) == start]
    return alive + _bwrap_leftovers(prefix)


def _reaper_of(runner_pid: int) -> int | None:
    """The pid of ``python -m sandbox.reaper <token of runner_pid>``, if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sandbox.reaper" in argv and any(a.startswith(b"%d-" % runner_pid) for a in argv):
            return int(entry.name)
    return None


class Run:
    """One ``kryt tournament run``/``resume`` in its own session, output to a log file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kryt", *args],
                cwd=log.parent,
                env=_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until(self, what: str, ready: object, seconds: float = 300) -> None:
        deadline = time.monotonic() + seconds
        while not callable(ready) or not ready():
            assert self.process.poll() is None, f"ended before {what}:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {what} within {seconds} s:\n{self.text()}"
            time.sleep(0.2)

    def kill_9(self) -> None:
        """SIGKILL the runner process only; its bots and reaper are left to themselves."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
def test_killed_runner_leaves_no_bot_and_the_resumed_tournament_loses_no_game(
    backend: str, tmp_path: Path
) -> None:
    if backend == "docker":
        docker_backend_or_skip()
    else:
        _bwrap_or_skip()
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    store = ["--database", url, "--store", str(tmp_path / "store")]
    bots = [_napper(tmp_path / "bots"), str(EXAMPLES / "greedy")]
    # Far more time per move than the nap: a game is never lost on time on a busy machine.
    first = Run(
        [
            "tournament", "run", *bots, "-n", str(GAMES), "-j", "1", "--backend", backend,
            "--move-seconds", "5", "--bank-seconds", "30", "--name", "killed", *store,
        ],
        tmp_path / "run.log",
    )  # fmt: skip
    found: list[int] = []

    def created() -> bool:
        match = re.search(r"tournament (\d+) created", first.text())
        if match:
            found.append(int(match.group(1)))
        return bool(match)

    first.wait_until("a created tournament", created)
    tournament_id = found[0]
    prefix = label_prefix(url, tournament_id)
    assert prefix.startswith(f"kryt-{hashlib.sha256(url.encode()).hexdigest()[:8]}-")
    # Kill mid-game: one game recorded, the next one under way with both bots up.
    first.wait_until(
        "one game and two running bots",
        lambda: len(_games(url, tournament_id)) >= 1 and len(_leftovers(backend, prefix, {})) >= 2,
    )
    pids = _bot_pids(prefix) if backend == "bwrap" else {}
    assert backend == "docker" or len(pids) >= 2, pids
    first.kill_9()
    recorded = len(_games(url, tournament_id))
    assert 1 <= recorded < GAMES, "the first run was not killed mid-series"
    # 1. The reaper removes the dead runner's bots by itself, within the bound.
    deadline = time.monotonic() + REAP_BOUND
    while _leftovers(backend, prefix, pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _leftovers(backend, prefix, pids) == [], f"still there after {REAP_BOUND} s"

    # 2. A resume killed together with its reaper leaves its bots behind ...
    second = Run(["tournament", "resume", str(tournament_id), *store], tmp_path / "resume1.log")
    second.wait_until(
        "a further game and two running bots",
        lambda: (
            len(_games(url, tournament_id)) > recorded and len(_leftovers(backend, prefix, {})) >= 2
        ),
    )
    reaper = _reaper_of(second.process.pid)
    assert reaper is not None, "the resumed runner has no reaper"
    os.kill(reaper, signal.SIGKILL)
    second.kill_9()
    pids = _bot_pids(prefix) if backend == "bwrap" else {}
    time.sleep(3.0)
    # bwrap bots die with their runner (parent-death signal), but their cgroups, socket
    # tmpfs and work directories stay; Docker containers keep running.
    left = _leftovers(backend, prefix, pids)
    if backend == "bwrap":
        # The processes die asynchronously, later on a busy machine: wait for that.
        deadline = time.monotonic() + 60
        while [item for item in left if item.startswith("pid ")]:
            assert time.monotonic() < deadline, left
            time.sleep(0.2)
            left = _leftovers(backend, prefix, pids)
    assert left != [], "nothing was left to sweep: the test proves nothing"

    # 3. ... which the next start sweeps; the tournament then finishes, no game lost or
    # played twice.
    third = Run(["tournament", "resume", str(tournament_id), *store], tmp_path / "resume2.log")
    code = third.process.wait(600)
    assert code == 0, third.text()
    assert "Traceback" not in third.text()
    games = _games(url, tournament_id)
    assert len(games) == len(set(games)), games
    series = {s for s, _ in games}
    for one in series:
        assert sorted(n for s, n in games if s == one) == list(range(1, GAMES + 1)), games
    assert len(games) == GAMES * len(series)
    assert _forfeits(url, tournament_id) == []
    assert _leftovers(backend, prefix, pids) == []
