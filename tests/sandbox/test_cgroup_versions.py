"""Which cgroup version the bwrap sandbox uses here, and the cgroup v2 path on a real kernel.

This CI machine is a hybrid host: memory, pids and cpuacct are cgroup v1 hierarchies and the
cgroup v2 hierarchy (``/sys/fs/cgroup/unified``) holds no memory or pids controller, so the
per-bot limits are the v1 ones. On a pure cgroup v2 host (``/sys/fs/cgroup/cgroup.controllers``
exists) every bwrap test runs the v2 path instead; the first test pins which one ran. A
delegated v2 directory without the memory and pids controllers is refused with the reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandbox.cgroups as cgroups
from sandbox.backend import Backend
from sandbox.errors import LimitsUnavailableError
from sandbox.limits import SandboxLimits
from tests.sandbox.conftest import MakeBot, roomy
from tests.sandbox.test_hostile_issue13 import stop_and_assert_gone

ROOT = Path("/sys/fs/cgroup")


def _host_version() -> int | None:
    """2 on a unified host, 1 where memory and pids are v1 hierarchies, else None."""
    if (ROOT / "cgroup.controllers").exists():
        return 2
    if (ROOT / "memory").is_dir() and (ROOT / "pids").is_dir():
        return 1
    return None


def test_bwrap_bots_get_the_hosts_cgroup_version(bwrap_backend: Backend, make_bot: MakeBot) -> None:
    version = _host_version()
    if version is None or os.geteuid() != 0:
        pytest.skip("no per-bot cgroups here (not root, or no memory/pids controller)")
    bot = bwrap_backend.start(make_bot("healthy"), roomy(), "cg-version")
    try:
        cgroup = getattr(bot, "cgroup", None)
        assert cgroup is not None, "an untrusted bwrap bot runs in its own cgroup"
        assert cgroup.layout.version == version
        dirs = dict(cgroup.dirs)
        if version == 2:
            (path,) = dirs.values()
            assert (path / "memory.max").read_text().strip() == str(256 << 20)
            assert (path / "pids.max").read_text().strip() == "64"
        else:
            memory = dirs["memory"] / "memory.limit_in_bytes"
            assert memory.read_text().strip() == str(256 << 20)
            assert (dirs["pids"] / "pids.max").read_text().strip() == "64"
        assert bot.pid in cgroup.pids(), "the bot's first process runs inside"  # type: ignore[attr-defined]
    finally:
        stop_and_assert_gone(bot)


@pytest.fixture
def v2_child_without_controllers() -> Iterator[Path]:
    """A real cgroup v2 directory that has no memory/pids controller (hybrid host)."""
    unified = ROOT / "unified"
    if os.geteuid() != 0 or not (unified / "cgroup.controllers").exists():
        pytest.skip("needs root and a hybrid host's /sys/fs/cgroup/unified")
    if {"memory", "pids"} <= set((unified / "cgroup.controllers").read_text().split()):
        pytest.skip("memory and pids are available in cgroup v2 here")
    path = unified / f"kryt-test-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        path.rmdir()


def test_a_delegated_v2_cgroup_without_memory_and_pids_is_refused(
    v2_child_without_controllers: Path,
    bwrap_backend: Backend,
    make_bot: MakeBot,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KRYT_SANDBOX_CGROUP", str(v2_child_without_controllers))
    monkeypatch.setattr(cgroups, "_layout_cache", None)
    try:
        layout = cgroups.cgroup_layout()
        assert isinstance(layout, str)
        assert layout == (
            f"controllers ['memory', 'pids'] are not delegated to {v2_child_without_controllers}"
        )
        problem = bwrap_backend.untrusted_problem()
        assert problem is not None and layout in problem
        with pytest.raises(LimitsUnavailableError, match="not delegated") as caught:
            bwrap_backend.start(make_bot("healthy"), SandboxLimits(), "cg-v2-refused")
        assert "\n" not in str(caught.value)
    finally:
        monkeypatch.setattr(cgroups, "_layout_cache", None)
