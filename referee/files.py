"""Reading a file a user names: a regular file, a pipe or ``/dev/null``, never a device.

``Path.read_bytes`` reads whatever it is given: a device such as ``/dev/zero`` until memory
runs out. Commands that read a file named on their command line or in their settings (results,
game files, deal books, tournament settings) read it here: a regular file; a pipe, as ``cat``
reads one (``<(zcat games.kgn.gz)``; a named pipe waits for its writer); ``/dev/null`` as an
empty file. Any other device, a directory or a socket is refused, saying what it is.
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
    """The path names a directory, a device (other than ``/dev/null``) or a socket; ``kind``
    says which and ``strerror`` reads "it is <kind>, not a regular file"."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file", str(path))
        self.kind = kind


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: "a named pipe", "a directory"..."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _is_devnull(info: os.stat_result) -> bool:
    try:
        return os.path.samestat(info, os.stat(os.devnull))
    except OSError:
        return False


def read_regular_file(path: str | Path, *, limit: int | None = None) -> bytes:
    """The bytes of the file at ``path`` (at most ``limit`` when given): a regular file, a
    pipe (read to its end, as a stream) or ``/dev/null`` (empty).

    Raises :class:`NotARegularFileError` for anything else, checked on the opened
    descriptor (what is read is what was checked), and :class:`OSError` when it cannot be
    opened or read."""
    # Opened without blocking, so that a named pipe is looked at before it is waited on.
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(handle)
        if stat.S_ISFIFO(info.st_mode):
            # A pipe's reader waits for data (and a named pipe for its writer), as cat does:
            # opened again without O_NONBLOCK, a read returns only at data or end of stream.
            reopened = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            os.close(handle)
            handle = reopened
        elif not stat.S_ISREG(info.st_mode) and not _is_devnull(info):
            raise NotARegularFileError(path, file_kind(info.st_mode))
    except BaseException:
        os.close(handle)
        raise
    with open(handle, "rb", closefd=True) as stream:
        return stream.read() if limit is None else stream.read(limit)
