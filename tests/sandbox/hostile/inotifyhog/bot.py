"""Hostile: takes every inotify instance the kernel lets its uid hold (128 by default, a
per-uid quota) and keeps them; its report says how many it holds and whether one more can
be had (``Report``), so a test can ask another bot at the same time."""

import ctypes
import os

from _serve import serve  # type: ignore[import-not-found]

libc = ctypes.CDLL(None, use_errno=True)
HOG = os.path.exists("hog.txt")


def take_all() -> tuple[list[int], str]:
    held: list[int] = []
    while len(held) < 10_000:
        fd = libc.inotify_init1(0)
        if fd < 0:
            return held, os.strerror(ctypes.get_errno())
        held.append(fd)
    return held, ""


HELD, STOPPED_BY = take_all() if HOG else ([], "")


def report() -> dict[str, object]:
    fd = libc.inotify_init1(0)
    error = "" if fd >= 0 else os.strerror(ctypes.get_errno())
    if fd >= 0:
        os.close(fd)
    return {"uid": os.getuid(), "held": len(HELD), "stopped_by": STOPPED_BY, "one_more": error}


serve(report)
