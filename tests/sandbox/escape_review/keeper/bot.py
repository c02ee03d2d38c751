"""Hostile (round 10): leaves a secret for the next bot started after it (its own next
start in a later series, or another author's bot on the same uid), in every place that
could outlive a process: files in its writable mounts, System V shared memory and a
message queue, a POSIX message queue, and a daemon (double fork, new session, deaf to
SIGTERM and SIGHUP) that hands the secret to whoever connects to an abstract Unix socket.

``role`` (a file next to this one) says ``write`` (the secret is in ``secret``) or
``read``; the reader reports everything it found. The probe's ``Big`` method makes the bot
exit 0 at once (its daemon stays behind, as far as the bot can tell)."""

import ctypes
import os
import signal
import socket
import threading
import time

from _serve import serve  # type: ignore[import-not-found]

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["/tmp/kryt-keep", "/dev/shm/kryt-keep", "/run/kryt/kryt-keep"]
KEY = 0x4B525954
ABSTRACT = b"\0kryt-keep-round10"
MQ_NAME = b"/kryt-keep-round10"
NAME = b"krytkeep10"
IPC_CREAT, SIZE = 0o1000, 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
libc.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
libc.mq_receive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
libc.mq_receive.restype = ctypes.c_ssize_t


class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 256)]


def errno_text(what: str) -> str:
    return f"{what}: errno {ctypes.get_errno()}"


def daemon(secret: bytes) -> None:
    """Double fork into a session of its own; serve the secret on an abstract socket."""
    if os.fork() > 0:
        os.wait()
        return
    os.setsid()
    libc.prctl(15, NAME, 0, 0, 0)  # PR_SET_NAME: the host finds it by this name
    if os.fork() > 0:
        os._exit(0)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, signal.SIG_IGN)
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(ABSTRACT)
        server.listen(8)
        while True:
            conn, _ = server.accept()
            conn.sendall(secret)
            conn.close()
    except OSError:
        while True:
            time.sleep(3600)


def write(secret: bytes) -> dict[str, object]:
    done: list[str] = []
    for path in FILES:
        try:
            with open(path, "wb") as out:
                out.write(secret)
            done.append(path)
        except OSError as exc:
            done.append(f"{path}: {exc.strerror}")
    shm = libc.shmget(KEY, SIZE, IPC_CREAT | 0o666)
    if shm >= 0 and (address := libc.shmat(shm, None, 0)) not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(address, secret, len(secret))
        done.append("shm")
    else:
        done.append(errno_text("shm"))
    queue = libc.msgget(KEY, IPC_CREAT | 0o666)
    message = Message(1, secret)
    if queue >= 0 and libc.msgsnd(queue, ctypes.byref(message), len(secret), 0) == 0:
        done.append("msg")
    else:
        done.append(errno_text("msg"))
    mq = libc.mq_open(MQ_NAME, os.O_CREAT | os.O_RDWR, 0o666, None)
    if mq >= 0 and libc.mq_send(mq, secret, len(secret), 0) == 0:
        done.append("mq")
    else:
        done.append(errno_text("mq"))
    daemon(secret)
    done.append("daemon")
    return {"done": done}


def read() -> dict[str, object]:
    found: dict[str, str] = {}
    for path in FILES:
        try:
            with open(path, "rb") as handle:
                found[path] = handle.read(256).decode(errors="replace")
        except OSError:
            pass
    shm = libc.shmget(KEY, 0, 0)
    if shm >= 0:
        address = libc.shmat(shm, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            found["shm"] = ctypes.string_at(address, 64).decode(errors="replace")
        else:
            found["shm"] = "exists"
    queue = libc.msgget(KEY, 0)
    if queue >= 0:
        message = Message()
        got = libc.msgrcv(queue, ctypes.byref(message), 256, 0, 0o4000)  # IPC_NOWAIT
        found["msg"] = message.mtext[: max(got, 0)].decode(errors="replace") or "exists"
    mq = libc.mq_open(MQ_NAME, os.O_RDONLY | os.O_NONBLOCK, 0, None)
    if mq >= 0:
        buffer = ctypes.create_string_buffer(1 << 16)
        got = libc.mq_receive(mq, buffer, len(buffer), None)
        found["mq"] = buffer.raw[: max(got, 0)].decode(errors="replace") or "exists"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(5.0)
            conn.connect(ABSTRACT)
            found["abstract"] = conn.recv(256).decode(errors="replace")
    except OSError:
        pass
    return {"found": found, "uid": os.getuid()}


with open(os.path.join(HERE, "role")) as handle:
    ROLE = handle.read().strip()
if ROLE == "write":
    with open(os.path.join(HERE, "secret"), "rb") as secret:
        RESULT = {**write(secret.read().strip()), "uid": os.getuid()}
else:
    RESULT = read()


def leave() -> bytes:
    """``Big``: exit 0 half a second from now (after this reply went out)."""
    threading.Timer(0.5, os._exit, (0,)).start()
    return b"bye"


serve(lambda: RESULT, leave)
