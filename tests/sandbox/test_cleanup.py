"""Cleanup that no tree can break, and that reports every failure as ours."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from sandbox.backend import Backend, make_work_dir, stop_all, sweep_runtime
from sandbox.errors import CleanupError
from sandbox.hostfs import mount_tmpfs, mounts_under, remove_tree
from sandbox.runner import RunnerId, RunnerState, current_runner
from tests.sandbox.conftest import MakeBot, roomy

pytestmark = pytest.mark.timeout(120)


def deep_tree(top: Path, levels: int = 5000) -> None:
    """``top/d/d/…`` ``levels`` deep, a file at every level, the deepest dirs mode 0."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.symlink("/etc", "escape", dir_fd=fd)  # removed as a link, never followed
        os.chmod(fd, 0)
    finally:
        os.close(fd)


def test_remove_tree_deletes_5000_levels(tmp_path: Path) -> None:
    top = tmp_path / "tree"
    top.mkdir()
    deep_tree(top)
    remove_tree(top)
    assert not top.exists()
    assert Path("/etc/passwd").exists()


def test_remove_tree_of_a_missing_path_is_fine(tmp_path: Path) -> None:
    remove_tree(tmp_path / "never-existed")


def test_remove_tree_detaches_a_tmpfs_below_it(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    top = tmp_path / "work"
    (top / "sock").mkdir(parents=True)
    mount_tmpfs(top / "sock", size_bytes=65536, inodes=16, uid=0, gid=0)
    (top / "sock" / "file").write_bytes(b"x" * 1000)
    assert mounts_under(top) == [top / "sock"]
    remove_tree(top)
    assert not top.exists()
    assert mounts_under(tmp_path) == []


def _dead_runner_token() -> str:
    """The token of a runner that has certainly exited (a finished child process)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    me = current_runner()
    os.waitpid(pid, 0)
    token = RunnerId(pid=pid, start=1, boot=me.boot, pidns=me.pidns)
    assert token.state() is RunnerState.DEAD
    return token.token


def test_sweep_finishes_over_a_5000_level_tree(tmp_path: Path) -> None:
    from sandbox.backend import runtime_dir

    token = _dead_runner_token()
    dead = Path(tempfile.mkdtemp(prefix=f"t13-sweep-deep.{token}.", dir=runtime_dir()))
    deep_tree(dead)
    other = Path(tempfile.mkdtemp(prefix=f"t13-sweep-deep-2.{token}.", dir=runtime_dir()))
    live = make_work_dir("t13-sweep-deep-live")
    try:
        removed, errors = sweep_runtime("t13-sweep-deep")
        assert errors == []
        assert removed >= 2
        assert not dead.exists() and not other.exists()
        assert live.exists()  # this runner is alive: its directory stays
    finally:
        remove_tree(live)


def test_stop_removes_a_deep_tree_and_runs_every_step(
    bwrap_backend: Backend, make_bot: MakeBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_bot("healthy")
    bots = [bwrap_backend.start(folder, roomy(), f"t13-stop-{i}") for i in range(2)]
    deep_tree(bots[0].work_dir)

    def broken_close() -> None:
        raise OSError("channel close failed (simulated)")

    monkeypatch.setattr(bots[0], "_close_channel", broken_close)
    with pytest.raises(CleanupError, match="simulated") as caught:
        stop_all(bots)
    assert "t13-stop-0" in str(caught.value)
    for bot in bots:
        assert not bot.work_dir.exists()
        assert not bot.alive()
        cgroup = getattr(bot, "cgroup", None)
        assert cgroup is None or not any(path.exists() for _, path in cgroup.dirs)
    bots[0].stop()  # idempotent, and the failure is not raised twice


def test_a_failed_stop_is_infrastructure_not_the_bots_fault() -> None:
    from sandbox.errors import BotStartupError, SandboxInfrastructureError

    assert issubclass(CleanupError, SandboxInfrastructureError)
    assert not issubclass(CleanupError, BotStartupError)
