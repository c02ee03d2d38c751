"""A runner killed with ``kill -9`` leaves nothing running: its reaper removes its bots'
containers, socket tmpfs, work directories and cgroups at once, and when the reaper is
killed too, the next start's sweep removes them, never touching a live runner's bots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend
from sandbox.hostfs import mounts_under
from tests.sandbox.conftest import STARTUP_SECONDS, MakeBot, roomy
from tests.sandbox.procs import container_gone

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]

RUNNER = textwrap.dedent(
    """
    import json, sys, time
    from sandbox.reaper import reaper_pid
    kind, folder, label, image = sys.argv[1:5]
    if kind == "docker":
        from sandbox.docker_backend import DockerBackend
        backend = DockerBackend(base_image=image)
    else:
        from sandbox.local import BwrapBackend
        backend = BwrapBackend()
    from sandbox.limits import SandboxLimits
    bot = backend.start(folder, SandboxLimits(startup_timeout=float(sys.argv[5])), label=label)
    cgroup = getattr(bot, "cgroup", None)
    container = getattr(bot, "container", None)
    print(json.dumps({
        "container": container.id if container is not None else None,
        "work_dir": str(bot.work_dir),
        "cgroups": [str(p) for _, p in cgroup.dirs] if cgroup is not None else [],
        "reaper": reaper_pid(),
    }), flush=True)
    time.sleep(600)
    """
)


def start_runner(backend: Backend, folder: Path, label: str) -> tuple[int, dict[str, Any]]:
    """A separate runner process with one started bot; returns its pid and what it made."""
    image = str(getattr(backend, "base_image", ""))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUNNER,
            backend.name,
            str(folder),
            label,
            image,
            str(STARTUP_SECONDS),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"the runner failed to start its bot (exit {process.poll()})"
    made: dict[str, Any] = json.loads(line)
    assert made["reaper"] is not None
    return process.pid, made


def kill_9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    # The runner is our child: reap it so its pid really is dead, not a zombie.
    with pytest.raises(ChildProcessError):
        while True:
            os.waitpid(pid, 0)


def kill_reaper(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)  # not our child (it was started through a shell)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def container_exists(backend: Backend, container_id: str | None) -> bool:
    if container_id is None:
        return False
    from docker.errors import NotFound

    try:
        backend.client.containers.get(container_id)  # type: ignore[attr-defined]
    except NotFound:
        return False
    return True


def leftovers(backend: Backend, made: dict[str, Any]) -> list[str]:
    """What of the dead runner's bot is still on the host."""
    found = []
    if container_exists(backend, made["container"]):
        found.append(f"container {made['container']}")
    work_dir = Path(made["work_dir"])
    if work_dir.exists():
        found.append(str(work_dir))
    found += [str(m) for m in mounts_under(work_dir)]
    found += [path for path in made["cgroups"] if Path(path).exists()]
    return found


def wait_clean(backend: Backend, made: dict[str, Any], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while leftovers(backend, made) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(backend, made) == []


def test_reaper_removes_a_killed_runners_bot(sandbox_backend: Backend, make_bot: MakeBot) -> None:
    pid, made = start_runner(sandbox_backend, make_bot("healthy"), "t13-reaped")
    assert leftovers(sandbox_backend, made) != []
    kill_9(pid)
    wait_clean(sandbox_backend, made, 60)


def test_sweep_removes_a_dead_runners_bot_and_spares_a_live_one(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    folder = make_bot("healthy")
    # The backend in every label: this test runs once per backend, maybe at the same time
    # (pytest-xdist), and each run's sweep must find only its own leftovers.
    prefix = f"t13-swept-{sandbox_backend.name}-"
    pid, made = start_runner(sandbox_backend, folder, prefix + "dead")
    kill_reaper(made["reaper"])
    kill_9(pid)
    time.sleep(1.0)
    if sandbox_backend.name == "docker":
        # Nothing removed it (no reaper, and containers do not die with their runner).
        assert container_exists(sandbox_backend, made["container"])
    assert Path(made["work_dir"]).exists()
    live = sandbox_backend.start(folder, roomy(), prefix + "live")
    try:
        assert sandbox_backend.sweep_leftovers(prefix) >= 1
        assert leftovers(sandbox_backend, made) == []
        assert live.alive()
        if sandbox_backend.name == "docker":
            assert not container_gone(live)
        assert live.work_dir.exists() and live.sock_dir.exists()
    finally:
        live.stop()
