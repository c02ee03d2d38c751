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
from pathlib import Path

from sandbox.errors import UnsafeSocketError

__all__ = ["SOCKET_NAME", "fd_address", "open_bot_socket"]

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
