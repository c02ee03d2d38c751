"""One memory + pids cgroup per bwrap bot: limits that hold for the bot's whole process tree.

Rlimits are per process (``RLIMIT_AS``) or per uid (``RLIMIT_NPROC``, shared by every bot of
the sandbox uid), so a bot could hold gigabytes across children or use up the uid's process
count so that the next bot cannot even start. A cgroup per bot bounds the tree as a whole:

- cgroup v2 (unified): ``memory.max``, ``memory.swap.max = 0``, ``memory.oom.group = 1``,
  ``pids.max``, ``cpu.max`` (the bot's CPUs) when the cpu controller is delegated; CPU time
  from ``cpu.stat``. The parent is ``KRYT_SANDBOX_CGROUP`` (a
  delegated directory, e.g. from a systemd unit with ``Delegate=yes``) or, as root,
  ``/sys/fs/cgroup/kryt`` with the controllers enabled in ``cgroup.subtree_control``.
- cgroup v1 (as root): ``<memory>/kryt/<bot>`` with ``memory.limit_in_bytes`` =
  ``memory.memsw.limit_in_bytes`` (no swap) and ``<pids>/kryt/<bot>`` with ``pids.max``;
  CPU time from ``<cpuacct>/kryt/<bot>`` and the CPU quota in ``<cpu>/kryt/<bot>``
  (``cpu.cfs_quota_us``) when those controllers are mounted.

The bot's first process is moved into its cgroup by the runner *before* it may execute
anything (see ``sandbox.local``), so every descendant is born inside. Directories are named
like the bot's work directory (label, runner token, random part) so a sweep can remove what
dead runners left (:func:`sweep_cgroups`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import CleanupError, SandboxInfrastructureError
from sandbox.runner import RunnerId, RunnerState

__all__ = ["BotCgroup", "CgroupLayout", "cgroup_layout", "sweep_cgroups"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT_NAME = "kryt"


@dataclass(frozen=True)
class CgroupLayout:
    """Where bot cgroups are created: one parent per hierarchy (one for v2)."""

    version: int
    #: controller name -> parent directory (v2: {"unified": parent}).
    parents: tuple[tuple[str, Path], ...]

    def parent(self, controller: str) -> Path | None:
        """The parent directory for ``controller``'s hierarchy, if there is one."""
        for name, path in self.parents:
            if name == controller:
                return path
        return None


def _read(path: Path) -> str:
    return path.read_text().strip()


def _swap_total() -> int:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("SwapTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _v1_mounts() -> dict[str, Path]:
    """Controller -> mount point of every cgroup v1 hierarchy."""
    found: dict[str, Path] = {}
    try:
        with open("/proc/self/mounts") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 4 and fields[2] == "cgroup":
                    for option in fields[3].split(","):
                        found.setdefault(option, Path(fields[1]))
    except OSError:
        pass
    return found


def _setup_v2(parent: Path, *, create: bool) -> str | None:
    """Prepare a v2 parent; return why it cannot hold bot cgroups, or None."""
    try:
        if create:
            top = parent.parent
            available = _read(top / "cgroup.controllers").split()
            missing = {"memory", "pids"} - set(available)
            if missing:
                return f"controllers {sorted(missing)} are not available in {top}"
            enabled = _read(top / "cgroup.subtree_control").split()
            for name in ("memory", "pids"):
                if name not in enabled:
                    (top / "cgroup.subtree_control").write_text(f"+{name}")
            parent.mkdir(exist_ok=True)
        controllers = _read(parent / "cgroup.controllers").split()
        missing = {"memory", "pids"} - set(controllers)
        if missing:
            return f"controllers {sorted(missing)} are not delegated to {parent}"
        enabled = _read(parent / "cgroup.subtree_control").split()
        for name in ("memory", "pids", "cpu"):
            if name not in enabled and name in controllers:
                try:
                    (parent / "cgroup.subtree_control").write_text(f"+{name}")
                except OSError:
                    if name != "cpu":  # CPU accounting is a bonus, the limits are not
                        raise
        if not os.access(parent, os.W_OK):
            return f"{parent} is not writable"
    except OSError as exc:
        return f"cannot prepare cgroup v2 parent {parent}: {exc}"
    if _swap_total() and not (parent / "memory.swap.max").exists():
        return "swap is on but memory.swap.max is missing (swap accounting disabled)"
    return None


def _layout() -> CgroupLayout | str:
    configured = os.environ.get("KRYT_SANDBOX_CGROUP")
    if configured:
        parent = Path(configured)
        problem = _setup_v2(parent, create=False)
        return problem or CgroupLayout(2, (("unified", parent),))
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        if os.geteuid() != 0:
            return (
                "not root and no delegated cgroup: set KRYT_SANDBOX_CGROUP to a cgroup v2 "
                "directory delegated to this user"
            )
        parent = CGROUP_ROOT / PARENT_NAME
        problem = _setup_v2(parent, create=True)
        return problem or CgroupLayout(2, (("unified", parent),))
    mounts = _v1_mounts()
    missing = [name for name in ("memory", "pids") if name not in mounts]
    if missing:
        return f"no cgroup v2 and no cgroup v1 {' or '.join(missing)} controller mounted"
    if os.geteuid() != 0:
        return "cgroup v1 needs root (or switch to cgroup v2 with KRYT_SANDBOX_CGROUP)"
    parents: list[tuple[str, Path]] = []
    for name in ("memory", "pids", "cpuacct", "cpu"):
        if name not in mounts:
            continue
        parent = mounts[name] / PARENT_NAME
        if any(parent == taken for _, taken in parents):
            continue  # cpu and cpuacct co-mounted ("cpu,cpuacct"): one directory serves both
        try:
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            if name in ("cpuacct", "cpu"):  # accounting and the CPU quota are optional
                continue
            return f"cannot create {parent}: {exc}"
        parents.append((name, parent))
    memory = dict(parents)["memory"]
    if _swap_total() and not (memory / "memory.memsw.limit_in_bytes").exists():
        return "swap is on but memory.memsw.* is missing (boot with swapaccount=1)"
    return CgroupLayout(1, tuple(parents))


CPU_PERIOD_US = 100_000
"""The CFS period of a bot's CPU quota (the kernel's default, as Docker's ``nano_cpus``)."""


def _quota(cpus: float) -> int:
    """Microseconds of CPU per :data:`CPU_PERIOD_US` for ``cpus`` CPUs (at least 1 ms)."""
    return max(1000, round(cpus * CPU_PERIOD_US))


_layout_cache: CgroupLayout | str | None = None


def cgroup_layout() -> CgroupLayout | str:
    """The cgroup layout bots get here, or a one-line reason why there is none (cached)."""
    global _layout_cache
    if _layout_cache is None:
        _layout_cache = _layout()
    return _layout_cache


class BotCgroup:
    """The cgroup(s) of one bot: create with limits, join, measure, kill, remove."""

    def __init__(self, layout: CgroupLayout, name: str) -> None:
        self.layout = layout
        self.name = name
        self.dirs = tuple((ctrl, parent / name) for ctrl, parent in layout.parents)

    @classmethod
    def create(
        cls,
        layout: CgroupLayout,
        name: str,
        *,
        memory_bytes: int,
        pids: int,
        cpus: float | None = None,
    ) -> BotCgroup:
        """Create the directories and write the limits (removed again on failure). ``cpus``
        caps the whole tree's CPU (CFS quota: ``cpu.max``, v1 ``cpu.cfs_quota_us``) where
        the cpu controller is there; None leaves CPU unlimited."""
        group = cls(layout, name)
        try:
            for _, directory in group.dirs:
                directory.mkdir()
            if layout.version == 2:
                path = group._dir("unified")
                (path / "memory.max").write_text(str(memory_bytes))
                if (path / "memory.swap.max").exists():
                    (path / "memory.swap.max").write_text("0")
                if (path / "memory.oom.group").exists():
                    (path / "memory.oom.group").write_text("1")
                (path / "pids.max").write_text(str(pids))
                if cpus is not None and (path / "cpu.max").exists():
                    (path / "cpu.max").write_text(f"{_quota(cpus)} {CPU_PERIOD_US}")
            else:
                memory = group._dir("memory")
                (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                if (memory / "memory.memsw.limit_in_bytes").exists():
                    (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                (group._dir("pids") / "pids.max").write_text(str(pids))
                cpu = group._cpu_dir()
                if cpus is not None and cpu is not None:
                    (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                    (cpu / "cpu.cfs_quota_us").write_text(str(_quota(cpus)))
        except OSError as exc:
            with contextlib.suppress(CleanupError):
                group.remove()
            raise SandboxInfrastructureError(f"cannot create cgroup {name!r}: {exc}") from exc
        return group

    def _dir(self, controller: str) -> Path:
        for ctrl, path in self.dirs:
            if ctrl == controller:
                return path
        raise KeyError(controller)

    def _cpu_dir(self) -> Path | None:
        """v1: the directory with the CFS quota (the cpu hierarchy, or cpuacct's when the two
        are mounted together), None without a cpu controller."""
        for controller in ("cpu", "cpuacct"):
            if self._has(controller):
                path = self._dir(controller)
                if (path / "cpu.cfs_quota_us").exists():
                    return path
        return None

    def cpu_quota(self) -> float | None:
        """The CPUs the cgroup may use (its CFS quota over its period), None when unlimited
        or without a cpu controller."""
        try:
            if self.layout.version == 2:
                quota, period = (self._dir("unified") / "cpu.max").read_text().split()
            else:
                cpu = self._cpu_dir()
                if cpu is None:
                    return None
                quota = (cpu / "cpu.cfs_quota_us").read_text().strip()
                period = (cpu / "cpu.cfs_period_us").read_text().strip()
        except (OSError, ValueError):
            return None
        if quota in ("max", "-1"):
            return None
        return int(quota) / int(period)

    def _has(self, controller: str) -> bool:
        return any(ctrl == controller for ctrl, _ in self.dirs)

    def join(self, pid: int) -> None:
        """Move ``pid`` into every hierarchy of this cgroup (before it runs bot code)."""
        try:
            for _, path in self.dirs:
                (path / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            raise SandboxInfrastructureError(
                f"cannot move pid {pid} into cgroup {self.name!r}: {exc}"
            ) from exc

    def _main(self) -> Path:
        return self._dir("unified" if self.layout.version == 2 else "pids")

    def pids(self) -> set[int]:
        """Every process (thread group) in the cgroup right now."""
        try:
            text = (self._main() / "cgroup.procs").read_text()
        except FileNotFoundError:
            return set()
        return {int(line) for line in text.split()}

    def _stat(self, controller: str, file: str) -> Iterator[tuple[str, int]]:
        try:
            text = (self._dir(controller) / file).read_text()
        except (OSError, KeyError):
            return
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                yield key, int(value)

    def oom_kills(self) -> int:
        """How many processes the OOM killer killed in this cgroup."""
        if self.layout.version == 2:
            return dict(self._stat("unified", "memory.events")).get("oom_kill", 0)
        return dict(self._stat("memory", "memory.oom_control")).get("oom_kill", 0)

    def memory_limit_hits(self) -> int:
        """How many times the bot's memory charge reached its limit (v2 ``memory.events``
        ``max``, v1 ``memory.failcnt`` and ``memory.memsw.failcnt``): the kernel's word that
        its memory ran out, even when it ended without an OOM kill (an allocation refused, a
        ``MemoryError``)."""
        if self.layout.version == 2:
            return dict(self._stat("unified", "memory.events")).get("max", 0)
        hits = 0
        for name in ("memory.failcnt", "memory.memsw.failcnt"):  # RAM, RAM + swap (= RAM)
            with contextlib.suppress(OSError, ValueError, KeyError):
                hits += int((self._dir("memory") / name).read_text())
        return hits

    def process_refusals(self) -> int:
        """How many times the process limit (``pids.max``) refused this cgroup a new process
        or thread (``pids.events``: ``max``)."""
        name = "unified" if self.layout.version == 2 else "pids"
        return dict(self._stat(name, "pids.events")).get("max", 0)

    def memory_peak(self) -> int | None:
        """Highest memory charge of the bot so far (bytes), when the kernel reports it."""
        name = "unified" if self.layout.version == 2 else "memory"
        file = "memory.peak" if self.layout.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self._dir(name) / file).read_text())
        except (OSError, ValueError):
            return None

    def cpu_seconds(self) -> float | None:
        """CPU time used by the whole tree (user + system), when accounted."""
        if self.layout.version == 2:
            usec = dict(self._stat("unified", "cpu.stat")).get("usage_usec")
            return None if usec is None else usec / 1e6
        if not self._has("cpuacct"):
            return None
        try:
            return int((self._dir("cpuacct") / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, including ones forked meanwhile."""
        if self.layout.version == 2:
            kill_file = self._dir("unified") / "cgroup.kill"
            if kill_file.exists():
                with contextlib.suppress(FileNotFoundError):
                    kill_file.write_text("1")
                return
        # pids.max bounds how many processes can appear between two rounds.
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    def remove(self, timeout: float = 10.0) -> None:
        """Kill what is left, wait until the cgroup is empty and delete its directories."""
        deadline = time.monotonic() + timeout
        self.kill()
        while self.pids():
            if time.monotonic() > deadline:
                raise CleanupError(f"processes of cgroup {self.name!r} survived SIGKILL")
            self.kill()
            time.sleep(0.01)
        failures: list[str] = []
        for _, path in self.dirs:
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    # A killed process leaves the cgroup a moment after it is reaped.
                    if exc.errno == errno.EBUSY and time.monotonic() < deadline:
                        time.sleep(0.01)
                        continue
                    failures.append(f"{path}: {exc.strerror}")
                    break
        if failures:
            raise CleanupError(f"could not remove cgroup {self.name!r}: {'; '.join(failures)}")


def sweep_cgroups(label_prefix: str = "") -> tuple[int, list[str]]:
    """Remove bot cgroups whose runner is dead and whose label starts with ``label_prefix``
    (already made safe, as the work directories' names); return (count, errors). Never
    raises."""
    layout = cgroup_layout()
    if isinstance(layout, str):
        return 0, []
    names: set[str] = set()
    for _, parent in layout.parents:
        with contextlib.suppress(OSError):
            names.update(child.name for child in parent.iterdir() if child.is_dir())
    removed, errors = 0, []
    for name in sorted(names):
        if not name.startswith(label_prefix):
            continue
        parts = name.rsplit(".", 2)
        runner = RunnerId.parse(parts[1]) if len(parts) == 3 else None
        if runner is None or runner.state() is not RunnerState.DEAD:
            continue
        try:
            BotCgroup(layout, name).remove()
            removed += 1
        except CleanupError as exc:
            errors.append(str(exc))
    return removed, errors
