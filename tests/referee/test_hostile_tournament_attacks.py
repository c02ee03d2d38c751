"""The attacks of issue 13 entered as real submissions in real tournaments (a gauntlet: the
greedy example meets every other entrant, two series at a time), under Docker and under
bubblewrap: each run finishes, each attacker forfeits every game it plays at start-up
(never its opponents), the game between the two real bots is exactly the game they play
alone in-process on the same deal, the organiser's log shows no raw terminal escapes, and
the host is measured while the attackers run and after:

- bytes and files written outside the sandboxes: the store is byte-for-byte unchanged, no
  regular file of the tournament's work directories lands on the runtime directory's disk
  (socket directories and, under bwrap, the bot code are tmpfs), and no new file owned by
  a bot's uid appears in the host's /tmp, /var/tmp, /dev/shm or runtime directory;
- the resident memory peak of every bot, read from its cgroup (bwrap: the per-bot cgroup;
  Docker: the container's), stays within the memory limit, and the memory attacker's peak
  shows that the sampler saw the attack;
- processes and containers left after the run: none (every process seen in a bot's cgroup
  during the run is gone; no container, cgroup, mount or work directory of the tournament).

The attackers are the sandbox suite's hostile fixtures (tests/sandbox/hostile): they do not
speak the game protocol, so each forfeits at start-up, but every attack runs while it is up
(forking until EAGAIN, a tree of memory hogs, filling /dev/shm and the socket directory,
printing escape sequences), while the other bots of the tournament must start and play.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from arena.db import (
    games_of_series,
    open_database,
    series_of_tournament,
    stored_record,
    submission_labels,
)
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create, label_prefix, tasks_for
from sandbox.backend import runtime_dir, safe_label
from sandbox.cgroups import cgroup_layout
from sandbox.limits import MiB
from sdk.examples.greedy.bot import GreedyBot
from sdk.tools.local import play_local
from tests.referee.test_hostile_tournament import containers_labelled, docker_backend_or_skip
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
HOSTILE = ROOT / "tests" / "sandbox" / "hostile"
ATTACKERS = ("nprocfill", "memtree", "devfill", "sockfill", "escapes")
MEMORY_MB = 128

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


ATTACK_AT_START = ("devfill", "sockfill", "memtree")
"""Fixtures that attack when probed: in a tournament nobody probes, so they attack at start
(filling /dev/shm; filling the socket directory with bytes, files and a 5,000-level tree;
four children of 100 MiB each)."""


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


def _greedy_copy(into: Path) -> str:
    """A second, deterministic real bot (greedy under another name)."""
    dest = into / "greedy2"
    shutil.copytree(EXAMPLES / "greedy", dest, ignore=shutil.ignore_patterns("__pycache__"))
    toml = dest / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "greedy"', 'name = "greedy2"'))
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


# ------------------------------------------------------------------ host measurements


def _start(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _container_cgroups(container_id: str) -> list[Path]:
    """Where the cgroup of a container may be (v1 cgroupfs; v2 cgroupfs or systemd)."""
    base = Path("/sys/fs/cgroup")
    return [
        base / "memory" / "docker" / container_id,
        base / "pids" / "docker" / container_id,
        base / "docker" / container_id,
        base / "system.slice" / f"docker-{container_id}.scope",
    ]


@dataclass
class HostSampler:
    """Samples, while a tournament runs, what its bots hold on the host: the memory peak of
    each bot's cgroup, the processes in it, and regular files written to the runtime
    directory's disk inside the tournament's work directories."""

    backend: str
    prefix: str
    peaks: dict[str, int] = field(default_factory=dict)
    pids: dict[int, str] = field(default_factory=dict)
    disk_bytes: int = 0
    samples: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def _groups(self) -> dict[str, list[Path]]:
        """Cgroup directories of each running bot of the tournament, by bot."""
        if self.backend == "docker":
            return {c: _container_cgroups(c) for c in containers_labelled(self.prefix)}
        layout = cgroup_layout()
        assert not isinstance(layout, str), layout
        groups: dict[str, list[Path]] = {}
        for _, parent in layout.parents:
            for child in parent.iterdir():
                if child.name.startswith(safe_label(self.prefix)):
                    groups.setdefault(child.name, []).append(child)
        return groups

    def sample(self) -> None:
        for bot, dirs in self._groups().items():
            for path in dirs:
                for name in ("memory.max_usage_in_bytes", "memory.peak"):
                    value = _read_int(path / name)
                    if value is not None:
                        self.peaks[bot] = max(self.peaks.get(bot, 0), value)
                try:
                    procs = (path / "cgroup.procs").read_text().split()
                except OSError:
                    procs = []
                for pid in map(int, procs):
                    start = _start(pid)
                    if start is not None:
                        self.pids[pid] = start
        self.disk_bytes = max(self.disk_bytes, _bytes_on_runtime_disk(self.prefix))
        self.samples += 1

    def run(self) -> None:
        while not self.stop.wait(0.3):
            self.sample()


def _bytes_on_runtime_disk(prefix: str) -> int:
    """Bytes of regular files in the tournament's work directories that are on the runtime
    directory's own file system (mounted tmpfs below them are not descended into)."""
    base = runtime_dir()
    device = os.stat(base).st_dev
    total = 0
    for work in base.iterdir():
        if not work.name.startswith(safe_label(prefix)):
            continue
        for top, dirs, files in os.walk(work, onerror=lambda _: None):
            dirs[:] = [d for d in dirs if _on_device(Path(top) / d, device)]
            for name in files:
                try:
                    info = os.lstat(Path(top) / name)
                except OSError:
                    continue
                if info.st_dev == device and not os.path.islink(Path(top) / name):
                    total += info.st_size
    return total


def _on_device(path: Path, device: int) -> bool:
    try:
        return os.lstat(path).st_dev == device
    except OSError:
        return False


def _owned_files(uid: int, prefix: str) -> set[str]:
    """Files owned by ``uid`` on the host's shared scratch places (one file system each).

    Pytest's own temporary directories are left out: tests running beside this one (other
    xdist workers) build bots there under the same uid, which no bot of this tournament can
    reach. So are the work directories of other tournaments' and tests' bots in the runtime
    directory (their sockets, made by bots running beside this test under the same uid);
    this tournament's own work directories, and any file at the top of it, still count."""
    from sandbox.uids import default_pool

    pool = default_pool()
    base = runtime_dir()
    places = ["/tmp", "/var/tmp", "/dev/shm", str(base)]
    pytest_tmp = os.path.join(tempfile.gettempdir(), "pytest-of-")
    ours = safe_label(prefix)

    def beside(path: str) -> bool:
        parts = Path(path).relative_to(base).parts if path.startswith(f"{base}/") else ()
        return len(parts) >= 2 and not parts[0].startswith(ours)

    out = subprocess.run(
        # ``uid`` or any uid of the pool every bot now runs as one of (sandbox.uids).
        [
            "find",
            *[p for p in places if os.path.isdir(p)],
            "-xdev",
            *["(", "-uid", str(uid), "-o", "-uid", f"+{pool.first - 1}"],
            *["-uid", f"-{pool.last + 1}", ")"],
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # The read-only database tests (tests/db/test_read_only_sqlite.py, beside this one on
    # another xdist worker) run kryt as nobody, 65534, the Docker bots' uid too, in public
    # folders of their own: SQLite's -wal and -shm files there are theirs, not a bot's.
    read_only_tests = os.path.join(tempfile.gettempdir(), "kryt-ro-")
    return {
        path
        for path in out.stdout.splitlines()
        if not path.startswith((pytest_tmp, read_only_tests)) and not beside(path)
    }


def _store_bytes(store: Path) -> dict[str, int]:
    return {str(p.relative_to(store)): p.stat().st_size for p in store.rglob("*") if p.is_file()}


def _bot_uid(backend: str) -> int:
    if backend == "docker":
        return 65534
    from sandbox.local import BwrapBackend

    return BwrapBackend().uid


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
        bots=[str(EXAMPLES / "greedy"), _greedy_copy(tmp_path / "bots"), *attackers],
        # A gauntlet: greedy meets every other entrant, two series at a time, so attackers
        # still run beside each other and beside the real bots' game. A round robin added
        # ten attacker-against-attacker series, each tried three times (neither bot could
        # start, which may be the sandbox's fault), for ~2 minutes a backend; that double
        # forfeit is checked in tests/referee/test_hostile_tournament.py.
        gauntlet=str(EXAMPLES / "greedy"),
        games_per_pair=1,
        backend=backend,
        memory_mb=MEMORY_MB,
        pids=64,
        # Generous start-up and clocks: the real bots share a busy machine with the attacks,
        # and a late start or a forfeited move of theirs is not what is under test (the
        # attackers forfeit at their handshake whatever the deadlines).
        startup_seconds=120.0,
        move_seconds=10.0,
        bank_seconds=60.0,
        concurrency=2,
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    prefix = label_prefix(url, tournament_id)
    uid = _bot_uid(backend)
    files_before = _owned_files(uid, prefix)
    store_before = _store_bytes(store)
    sampler = HostSampler(backend, prefix)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    try:
        with caplog.at_level(logging.WARNING):
            outcomes = LocalExecutor(2).run(
                tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
            )
    finally:
        sampler.stop.set()
        thread.join(30)
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    real = {"greedy", "greedy2"}
    with db.read_session() as session:
        labels = submission_labels(session=session)
        offenders: dict[str, set[str]] = {}
        between_real_bots = []
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            names = {labels[series.submission_a_id][0], labels[series.submission_b_id][0]}
            (game,) = games_of_series(series.id, session=session)
            if names == real:
                between_real_bots.append((series.seed, stored_record(game)))
                continue
            seats = (game.seat0_submission_id, game.seat1_submission_id)
            # An attacker against greedy: the attacker forfeits, at start-up.
            assert "greedy" in names, names
            assert game.forfeit_seat is not None, (names, game.end_reason)
            offender = labels[seats[game.forfeit_seat]][0]
            assert offender in ATTACKERS, (names, offender, game.end_reason)
            offenders.setdefault(offender, set()).add(game.end_reason)
    # Every attacker lost its game against the real bot, and only at start-up.
    assert set(offenders) == set(ATTACKERS), offenders
    assert {r for reasons in offenders.values() for r in reasons} == {"startup failure"}
    # The real bots' game is the one they play alone, in-process, on the same deal.
    ((seed, record),) = between_real_bots
    assert record.forfeit is None and record.void_reason == ""
    alone = play_local(GreedyBot(), GreedyBot(), games=1, seed=seed).games[1]
    assert record.deck == alone.deck and record.dealer == alone.dealer
    assert [(m.seat, m.action) for m in record.moves] == [(m.seat, m.action) for m in alone.moves]
    assert (record.ending, record.winner) == (alone.ending, alone.winner)
    # The organiser's log carries no raw escape sequence from a bot.
    assert "\x1b" not in caplog.text and "\x9b" not in caplog.text
    # The host: the sampler saw the bots; memory within the limit, the attack seen.
    print(
        f"\n{backend}: {sampler.samples} samples, {len(sampler.pids)} bot processes, memory"
        f" peaks (MiB) {sorted(v // MiB for v in sampler.peaks.values())},"
        f" {sampler.disk_bytes} bytes on the runtime disk"
    )
    assert sampler.samples >= 3 and sampler.peaks, sampler
    limit = MEMORY_MB * MiB
    assert max(sampler.peaks.values()) <= limit, {k: v // MiB for k, v in sampler.peaks.items()}
    assert max(sampler.peaks.values()) >= limit // 2, "the memory attack was not seen"
    # Nothing written outside: the store unchanged, nothing on the runtime disk, no new
    # file of a bot's uid on the host's scratch places.
    assert _store_bytes(store) == store_before
    assert sampler.disk_bytes == 0
    assert _owned_files(uid, prefix) - files_before == set()
    # Nothing stays behind: no process seen in a bot's cgroup, no container, no cgroup, no
    # work directory or mount.
    assert sampler.pids, "no bot process was ever seen"
    assert [p for p, start in sampler.pids.items() if _start(p) == start] == []
    if backend == "docker":
        assert containers_labelled(prefix) == []
    assert _kryt_cgroups(prefix) == set()
    assert [p for p in runtime_dir().iterdir() if p.name.startswith(safe_label(prefix))] == []
