"""Connect to a bot's Unix socket without trusting the bot's socket directory.

A bot controls the directory its socket lives in, so it can replace the socket with a
symlink to, say, the host's ``/var/run/docker.sock``; a plain ``connect()`` would follow it
and hand the bot's "replies" to the Docker API. Instead the referee opens the socket file
itself with ``O_PATH | O_NOFOLLOW`` (relative to an ``O_PATH`` handle on the directory),
checks that it is a socket owned by the bot's uid, and dials ``unix:///proc/self/fd/N``:
the kernel resolves that magic link to the very inode that was checked, and the path stays
far below the 107-byte ``sun_path`` limit however deep the socket directory is.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sandbox.errors import BotNotHealthyError, UnsafeSocketError

__all__ = ["SOCKET_NAME", "channel_options", "open_bot_socket", "wait_serving"]

SOCKET_NAME = "bot.sock"
#: ``sun_path`` holds 108 bytes including the terminating NUL.
MAX_SUN_PATH = 107


def open_bot_socket(
    sock_dir: Path, expected_uid: int | None, name: str = SOCKET_NAME
) -> int | None:
    """Return an ``O_PATH`` descriptor of the bot's socket, or None if it does not exist yet.

    Raises :class:`UnsafeSocketError` when the entry is a symlink, not a socket, or owned by
    another uid than ``expected_uid``.
    """
    dir_fd = os.open(sock_dir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    problem = ""
    if stat.S_ISLNK(info.st_mode):
        target = _link_target(sock_dir / name)
        problem = f"is a symlink to {target!r}"
    elif not stat.S_ISSOCK(info.st_mode):
        problem = "is not a Unix socket"
    elif expected_uid is not None and info.st_uid != expected_uid:
        problem = f"is owned by uid {info.st_uid}, not the bot's uid {expected_uid}"
    if problem:
        os.close(fd)
        raise UnsafeSocketError(f"the bot's socket {str(sock_dir / name)!r} {problem}; refusing it")
    return fd


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def fd_address(fd: int) -> str:
    """gRPC target that dials the socket behind ``fd`` (see the module docstring)."""
    address = f"unix:///proc/self/fd/{fd}"
    assert len(address) - len("unix://") <= MAX_SUN_PATH
    return address


def channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    """Channel options for a bot: bounded messages, a private subchannel pool.

    The private pool matters because descriptor numbers are reused: a later bot may get the
    same ``/proc/self/fd/N`` target, and must never share a connection with an earlier one.
    """
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.use_local_subchannel_pool", 1),
        ("grpc.enable_retries", 0),
        # Retry the socket every 50-500 ms while the bot starts (gRPC's default first
        # back-off of 1 s added a second to every bot start). referee.client.RECONNECT_OPTIONS
        # says the same: a bot's runtime has no ``sandbox`` to share it from.
        ("grpc.initial_reconnect_backoff_ms", 50),
        ("grpc.min_reconnect_backoff_ms", 50),
        ("grpc.max_reconnect_backoff_ms", 500),
    ]


def wait_serving(
    channel: grpc.Channel,
    *,
    deadline: float,
    alive: Callable[[], bool],
    label: str,
    service: str = "",
) -> None:
    """Poll the health service until SERVING; raise when the deadline passes.

    ``alive`` is checked between attempts so a crashed bot is reported at once (the caller
    turns that into :class:`~sandbox.errors.BotCrashedError`); here it just stops waiting.
    """
    stub = health_pb2_grpc.HealthStub(channel)
    last = "no answer"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BotNotHealthyError(
                f"bot {label!r} did not report SERVING before its startup deadline ({last})",
                label=label,
            )
        if not alive():
            return
        try:
            reply = stub.Check(
                health_pb2.HealthCheckRequest(service=service), timeout=min(remaining, 1.0)
            )
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
            last = f"status {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}"
        except grpc.RpcError as exc:
            # A final attempt cut short by the deadline must not hide a real earlier answer.
            if exc.code() is not grpc.StatusCode.DEADLINE_EXCEEDED or last == "no answer":
                last = f"{exc.code().name}: {exc.details()}"
        time.sleep(0.05)
