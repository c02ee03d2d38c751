"""Hostile: serves, then on request makes four children each hold 100 MiB of touched memory.

Per-process limits let one bot hold gigabytes this way; per-bot limits must count the
whole tree. The report says how each child ended (exit status / signal).
"""

import os
import time

from _serve import serve  # type: ignore[import-not-found]

CHILD_BYTES = 100 << 20


def child() -> None:
    try:
        hoard = bytearray(CHILD_BYTES)
        for i in range(0, CHILD_BYTES, 4096):
            hoard[i] = 1
    except MemoryError:
        os._exit(3)
    time.sleep(8)
    os._exit(0)


def report() -> dict[str, object]:
    pids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            child()
        pids.append(pid)
    endings = []
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            endings.append(f"signal {os.WTERMSIG(status)}")
        else:
            endings.append(f"exit {os.WEXITSTATUS(status)}")
    return {"endings": endings}


serve(report)
