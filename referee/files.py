"""Reading a file a user names: a regular file only, opened without blocking.

``Path.read_bytes`` reads whatever it is given: a device such as ``/dev/zero`` until memory
runs out, a named pipe with no writer forever (``open`` itself waits). Every command that
reads a file named on its command line or in its settings reads it here instead.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["NotARegularFileError", "file_kind", "read_regular_file"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotARegularFileError(OSError):
    """The path names a directory, device, named pipe or socket; ``kind`` says which and
    ``strerror`` reads "it is <kind>, not a regular file"."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file", str(path))
        self.kind = kind


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: "a named pipe", "a directory"..."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def read_regular_file(path: str | Path, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit`` when given).

    Raises :class:`NotARegularFileError` for anything else, checked on the opened
    descriptor (what is read is what was checked), and :class:`OSError` when it cannot be
    opened or read."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(handle).st_mode
    except OSError:
        os.close(handle)
        raise
    if not stat.S_ISREG(mode):
        os.close(handle)
        raise NotARegularFileError(path, file_kind(mode))
    with open(handle, "rb", closefd=True) as stream:
        return stream.read() if limit is None else stream.read(limit)
