"""Host-side views of a bot's processes, to check that nothing is left behind."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.backend import RunningBot
from tests.procfs import process_stats


def _ppid_map() -> dict[int, int]:
    return {pid: int(fields[1]) for pid, fields in process_stats()}


def _start_time(pid: int) -> str | None:
    """Start time of a live process; None when it is gone or a zombie (holds nothing)."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def bot_processes(bot: RunningBot) -> dict[int, str | None]:
    """Host pids (with start times) of every process belonging to the bot."""
    container = getattr(bot, "container", None)
    if container is not None:
        found: dict[int, str | None] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if container.id in (entry / "cgroup").read_text():
                        found[int(entry.name)] = _start_time(int(entry.name))
                except OSError:
                    continue
        return found
    root = bot.pid  # type: ignore[attr-defined]
    parents = _ppid_map()
    tree = {root}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                changed = True
    return {pid: _start_time(pid) for pid in tree}


def survivors(before: dict[int, str | None]) -> list[int]:
    """The pids from ``before`` that still exist as the same process (same start time)."""
    return [pid for pid, start in before.items() if _start_time(pid) == start and start]


def container_gone(bot: RunningBot) -> bool:
    """True when the bot's container no longer exists (always True for local bots)."""
    container = getattr(bot, "container", None)
    if container is None:
        return True
    from docker.errors import NotFound

    try:
        container.reload()
    except NotFound:
        return True
    return False


def own_pid() -> int:
    """The referee's (this test process's) pid."""
    return os.getpid()
