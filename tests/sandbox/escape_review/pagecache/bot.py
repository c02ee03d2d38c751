"""Hostile (round 10): two bots of one author at one table, sharing a secret through the
page cache of a read-only file both sandboxes share (the host's ``/usr`` under bwrap, the
image's lower layer under Docker), the way the file locks the seccomp filter now refuses
did (docs/sandbox.md, "A seccomp filter").

``role`` (a file next to this one) says ``send`` or ``receive``. The sender, before it
serves, drops 64 pages of a file no bot reads (``pydoc_data/topics.py``) from the page
cache (``posix_fadvise(DONTNEED)``: allowed on any file one can read), then reads the pages
of the 1 bits of ``bits`` (a file next to this one) back in, without read-ahead. The
receiver asks for one byte of each page with ``preadv2(RWF_NOWAIT)``, which fails with
EAGAIN rather than read a page that is not cached: the answer is the bit. No timing."""

import os

from _serve import serve  # type: ignore[import-not-found]

SHARED = "/usr/lib/python3.11/pydoc_data/topics.py"
PAGE = 4096
PAGES = 64
HERE = os.path.dirname(os.path.abspath(__file__))


def send(bits: str) -> dict[str, object]:
    fd = os.open(SHARED, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no read-ahead around our reads
    os.posix_fadvise(fd, 0, PAGES * PAGE, os.POSIX_FADV_DONTNEED)
    for page, bit in enumerate(bits[:PAGES]):
        if bit == "1":
            os.pread(fd, 1, page * PAGE)
    os.close(fd)
    return {"sent": bits[:PAGES]}


def receive() -> dict[str, object]:
    fd = os.open(SHARED, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    bits = []
    buffer = bytearray(1)
    for page in range(PAGES):
        try:
            os.preadv(fd, [buffer], page * PAGE, os.RWF_NOWAIT)
            bits.append("1")
        except BlockingIOError:
            bits.append("0")
        except OSError as exc:
            return {"received": None, "error": f"page {page}: {exc.strerror}"}
    os.close(fd)
    return {"received": "".join(bits)}


with open(os.path.join(HERE, "role")) as handle:
    ROLE = handle.read().strip()
if ROLE == "send":
    with open(os.path.join(HERE, "bits")) as handle:
        RESULT = send(handle.read().strip())
else:
    RESULT = receive()
serve(lambda: RESULT)
