"""Hostile: tries to signal and ptrace the referee and every other process it can see.

The test plants the referee's host pid in ``referee_pid.txt`` (a real attacker would guess).
"""

import ctypes
import os
import signal

from _serve import serve  # type: ignore[import-not-found]

PTRACE_ATTACH, PTRACE_DETACH = 16, 17
libc = ctypes.CDLL(None, use_errno=True)


def attack() -> dict[str, list[str]]:
    with open("referee_pid.txt") as handle:
        referee = int(handle.read())
    me = os.getpid()
    targets = {referee, 1}
    targets.update(int(p) for p in os.listdir("/proc") if p.isdigit())
    targets.discard(me)
    signalled, traced = [], []
    for pid in sorted(targets):
        try:
            os.kill(pid, signal.SIGCONT)  # harmless but proves delivery rights
            signalled.append(str(pid))
        except OSError:
            pass
        if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
            traced.append(str(pid))
            libc.ptrace(PTRACE_DETACH, pid, None, None)
    try:
        os.kill(referee, signal.SIGKILL)
        signalled.append(f"KILLED {referee}")
    except OSError:
        pass
    return {"signalled": signalled, "traced": traced, "referee": [str(referee)]}


RESULT = attack()
serve(lambda: RESULT)
