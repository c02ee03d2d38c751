"""Hostile (round 10): two bots of one author at one table, sharing a secret through the
kernel's machine-wide object counters instead of a file or a socket.

``role`` (a file next to this one) says ``send`` or ``receive``. The sender, before it
serves, raises two counters every process on the machine can read and holds them while it
runs: ``/proc/sys/fs/aio-nr`` (events of the legacy AIO contexts, ``io_setup``) and
``/proc/sys/kernel/pty/nr`` (pseudo-terminals, ``/dev/ptmx``). It reports by how much it
raised each as it saw them itself (``hog`` instead takes every AIO event the machine
allows, ``ptyhog`` every pseudo-terminal). The receiver reports the counters as it sees them. A
sandbox that isolates its bots shows the receiver none of the sender's objects."""

import ctypes
import os
import platform
import time

from _serve import serve  # type: ignore[import-not-found]

AIO_NR = "/proc/sys/fs/aio-nr"
PTY_NR = "/proc/sys/kernel/pty/nr"
IO_SETUP = {"x86_64": 206, "aarch64": 0}
libc = ctypes.CDLL(None, use_errno=True)
HELD: list[object] = []  # kept for the bot's life
PTYS: list[int] = []  # pseudo-terminals each child of the pty hog holds


def counter(path: str) -> int:
    try:
        with open(path) as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1


def raise_aio(contexts: int, events: int) -> str:
    number = IO_SETUP.get(platform.machine())
    if number is None:
        return f"no io_setup number for {platform.machine()}"
    for _ in range(contexts):
        context = ctypes.c_ulong(0)
        if libc.syscall(number, events, ctypes.byref(context)) != 0:
            return f"io_setup: errno {ctypes.get_errno()}"
        HELD.append(context)
    return "ok"


def raise_pty(count: int) -> str:
    for _ in range(count):
        try:
            HELD.extend(os.openpty())
        except OSError as exc:
            return f"openpty: {exc.strerror}"
    return "ok"


def send() -> dict[str, object]:
    aio_before, pty_before = counter(AIO_NR), counter(PTY_NR)
    aio = raise_aio(7, 64)
    pty = raise_pty(13)
    return {
        "aio": aio,
        "pty": pty,
        "aio_raised": counter(AIO_NR) - aio_before,
        "pty_raised": counter(PTY_NR) - pty_before,
    }


def hog() -> dict[str, object]:
    """Takes every AIO event the machine allows (``/proc/sys/fs/aio-max-nr``), from the
    largest context down, and holds them while it runs."""
    number = IO_SETUP.get(platform.machine())
    taken, events = 0, 1 << 16
    while number is not None and events >= 1:
        context = ctypes.c_ulong(0)
        if libc.syscall(number, events, ctypes.byref(context)) == 0:
            HELD.append(context)
            taken += events
        else:
            events //= 2
    return {"taken": taken, "aio_seen": counter(AIO_NR)}


def pty_hog() -> dict[str, object]:
    """Opens every pseudo-terminal it can, in children of its own (each holds up to 200
    masters, under its open-file limit), and holds them while it runs."""
    for _ in range(24):
        ready_read, ready_write = os.pipe()
        if os.fork() == 0:
            os.close(ready_read)
            held = []
            for _ in range(200):
                try:
                    master, slave = os.openpty()
                except OSError:
                    break
                os.close(slave)
                held.append(master)
            os.write(ready_write, b"%d\n" % len(held))
            os.close(ready_write)
            while True:
                time.sleep(3600)
        os.close(ready_write)
        with os.fdopen(ready_read) as ready:
            got = int(ready.read().strip() or 0)
        PTYS.append(got)
        if got < 200:
            break
    return {"ptys": sum(PTYS), "pty_seen": counter(PTY_NR)}


def receive() -> dict[str, object]:
    """The counters as this bot sees them, then whether it can open a pseudo-terminal and
    set up an AIO context of its own."""
    try:
        master, slave = os.openpty()
        os.close(master)
        os.close(slave)
        opened = "ok"
    except OSError as exc:
        opened = str(exc.strerror)
    seen = {"aio_seen": counter(AIO_NR), "pty_seen": counter(PTY_NR), "openpty": opened}
    seen["io_setup"] = "ok" if raise_aio(1, 1) == "ok" else f"errno {ctypes.get_errno()}"
    return seen


with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "role")) as handle:
    ROLE = handle.read().strip()
RESULT = {"send": send, "hog": hog, "ptyhog": pty_hog}.get(ROLE, receive)()
serve(lambda: RESULT)
