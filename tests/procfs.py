"""The process table as /proc shows it, for tests that check what is left running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def process_stats() -> Iterator[tuple[int, list[str]]]:
    """Each process's pid and the fields of its ``/proc/PID/stat`` after the command name
    (state, ppid, pgrp, session, ...): the name may hold spaces and parentheses, so the
    line is split after its last ')'. Processes that end while being read are skipped."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        yield int(entry.name), stat.rpartition(")")[2].split()
