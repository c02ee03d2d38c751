"""Hostile: two copies of this bot try to pass a secret to each other while both run.

The file ``role`` (written by the test) says ``send`` or ``receive``. The sender offers
``SECRET`` on every channel it can think of before it serves: an abstract Unix socket, a
System V shared memory segment, files in ``/tmp`` and ``/dev/shm``, and ``flock`` locks on
read-only files every sandbox shares (one bit a file: locked means 1). The receiver's report
says what it read on each channel (None where nothing came through).
"""

import ctypes
import fcntl
import os
import socket
import struct
from pathlib import Path

from _serve import serve  # type: ignore[import-not-found]

SECRET = 0b1011001110001101
BITS = 16
ABSTRACT = b"\0kryt-review-collude"
SYSV_KEY = 0x4B525954
PLACES = ("/tmp/kryt-review-secret", "/dev/shm/kryt-review-secret")
ROLE = Path("role").read_text().strip()
held: list[object] = []
refused: set[int] = set()
"""The errors the sender's locks met (a sandbox that refuses locks)."""
FLOCK = "hhqqi4x"
"""struct flock on 64-bit Linux: type, whence, (padding), start, len, pid, (padding)."""


def shared_files() -> list[str]:
    """Read-only files both sandboxes see: the interpreter's standard library."""
    for base in ("/usr/lib/python3.11", "/usr/lib/python3"):
        if os.path.isdir(base):
            names = sorted(n for n in os.listdir(base) if n.endswith(".py"))
            return [os.path.join(base, n) for n in names[:BITS]]
    return []


def send() -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(ABSTRACT)
        server.listen(1)
        held.append(server)
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(SYSV_KEY, 4096, 0o1666)  # IPC_CREAT | 0666
    if shmid >= 0:
        address = libc.shmat(shmid, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.c_uint32.from_address(address).value = SECRET
    for place in PLACES:
        try:
            with open(place, "w") as handle:
                handle.write(str(SECRET))
            os.chmod(place, 0o666)
        except OSError:
            pass
    for bit, path in enumerate(shared_files()):
        if SECRET >> bit & 1:
            lock = open(path, "rb")  # noqa: SIM115 (held open: the lock is the bit)
            held.append(lock)
            # Both kinds of lock: flock() and fcntl()'s record locks (a read lock: the file
            # is open read-only).
            for take in (
                lambda f: fcntl.flock(f, fcntl.LOCK_EX),
                lambda f: fcntl.lockf(f, fcntl.LOCK_SH),
            ):
                try:
                    take(lock)
                except OSError as exc:
                    refused.add(exc.errno or 0)


def receive() -> dict[str, object]:
    found: dict[str, object] = {}
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(ABSTRACT)
        found["abstract_socket"] = True
    except OSError as exc:
        found["abstract_socket"] = None
        found["abstract_socket_error"] = exc.errno
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(SYSV_KEY, 4096, 0)
    found["sysv_shm"] = None
    if shmid >= 0:
        address = libc.shmat(shmid, None, 0o10000)  # SHM_RDONLY
        if address not in (None, ctypes.c_void_p(-1).value):
            found["sysv_shm"] = ctypes.c_uint32.from_address(address).value
    for place in PLACES:
        try:
            with open(place) as handle:
                found[place] = int(handle.read())
        except OSError:
            found[place] = None
    value = record = 0
    errors: set[int] = set()
    files = shared_files()
    for bit, path in enumerate(files):
        with open(path, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                value |= 1 << bit
            except OSError as exc:
                errors.add(exc.errno or 0)
            try:  # would a write lock conflict? (F_GETLK names a read lock held elsewhere)
                asked = struct.pack(FLOCK, fcntl.F_WRLCK, 0, 0, 0, 0)
                answer = struct.unpack(FLOCK, fcntl.fcntl(handle, fcntl.F_GETLK, asked))
                if answer[0] != fcntl.F_UNLCK:
                    record |= 1 << bit
            except OSError as exc:
                errors.add(exc.errno or 0)
    found["flock_files"] = len(files)
    found["flock"] = value if files else None
    found["record_lock"] = record if files else None
    found["lock_errors"] = sorted(errors)
    found["secret"] = SECRET
    return found


if ROLE == "send":
    send()
    serve(lambda: {"sent": SECRET, "held": len(held), "refused": sorted(refused)})
else:
    serve(receive)
