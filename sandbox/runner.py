"""Who started a sandbox: an identity for the running referee process, and its liveness.

Everything a runner leaves on the host (containers, socket directories, cgroups) carries
its :class:`RunnerId` token, so a sweep at start-up removes exactly what *dead* runners
left and never touches the bots of another runner that is still alive.

A token is ``<pid>-<start>-<boot>-<pidns>``: the pid, its start time in clock ticks since
boot (pids are reused, start times on the same boot are not), a hash of the kernel's boot
id and a hash of the pid namespace. A runner is known dead when its boot is over or, on
this boot and in our pid namespace, its pid no longer runs with that start time. A token
from another pid namespace of the same boot (a runner in another container) is ``unknown``
and left alone.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["RunnerId", "RunnerState", "current_runner"]

_TOKEN = re.compile(r"(\d+)-(\d+)-([0-9a-f]{8})-([0-9a-f]{6})\Z")


class RunnerState(enum.Enum):
    """Whether the runner that owns a leftover is still running."""

    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"  # another pid namespace: not ours to judge


def _short_hash(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@lru_cache(maxsize=1)
def _boot_hash() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return _short_hash(handle.read().strip(), 8)
    except OSError:
        return _short_hash("no-boot-id", 8)


def _pidns_hash() -> str:
    try:
        return _short_hash(os.readlink("/proc/self/ns/pid"), 6)
    except OSError:
        return _short_hash("no-pidns", 6)


def _start_ticks(pid: int) -> int | None:
    """Start time of a live (non-zombie) ``pid`` in ticks since boot, else None."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in {"Z", "X"}:
        return None
    return int(fields[19])


@dataclass(frozen=True)
class RunnerId:
    """One referee process on one boot (see the module docstring)."""

    pid: int
    start: int
    boot: str
    pidns: str

    @property
    def token(self) -> str:
        """The form used in labels, directory and cgroup names (``[0-9a-f-]`` only)."""
        return f"{self.pid}-{self.start}-{self.boot}-{self.pidns}"

    @classmethod
    def parse(cls, token: str) -> RunnerId | None:
        """The identity in ``token``, or None when it is not a runner token."""
        match = _TOKEN.match(token)
        if match is None:
            return None
        pid, start, boot, pidns = match.groups()
        return cls(pid=int(pid), start=int(start), boot=boot, pidns=pidns)

    def state(self) -> RunnerState:
        """Whether this runner still runs (decided only where it can be decided)."""
        if self.boot != _boot_hash():
            return RunnerState.DEAD
        if self.pidns != _pidns_hash():
            return RunnerState.UNKNOWN
        return RunnerState.ALIVE if _start_ticks(self.pid) == self.start else RunnerState.DEAD


_cached: tuple[int, RunnerId] | None = None


def current_runner() -> RunnerId:
    """This process's identity (recomputed after a fork)."""
    global _cached
    pid = os.getpid()
    if _cached is None or _cached[0] != pid:
        start = _start_ticks(pid)
        if start is None:
            raise RuntimeError(f"cannot read /proc/{pid}/stat")
        _cached = (pid, RunnerId(pid=pid, start=start, boot=_boot_hash(), pidns=_pidns_hash()))
    return _cached[1]
