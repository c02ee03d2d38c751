"""The channels the round-10 escape review found, closed (``test_escape_review_round10.py``),
and what must keep working around them.

- The page cache of shared read-only files: ``posix_fadvise`` and ``readahead`` are ignored
  (they answer 0, the pages stay cached), ``preadv2``/``pwritev2`` with ``RWF_NOWAIT`` answer
  EOPNOTSUPP whatever else the flags register holds, ``cachestat`` EPERM; ordinary
  ``preadv2``/``pwritev2`` still read and write, and ``mincore`` reports every page of a file
  the bot cannot write as resident (the kernel's rule since Linux 5.2).
- Legacy AIO: every ``io_*`` call answers EPERM.
- Pseudo-terminals: no bot opens one (Docker's ``devpts`` is replaced by an empty read-only
  tmpfs; bwrap's ``/dev`` never had one).
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox import seccomp
from sandbox.backend import Backend
from tests.sandbox.conftest import roomy, stage_hostile_bot
from tests.sandbox.test_hostile import forget_image, report, stop_and_check_clean

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="the probes use x86-64 numbers"),
]

SHARED = "/usr/lib/python3.11/argparse.py"
"""A read-only file every sandbox shares (the host's under bwrap, the image's under Docker);
not the review's ``pydoc_data/topics.py``, whose pages its page-cache test reads."""
ADVISED = "/usr/lib/python3.11/_pydecimal.py"
"""The host's file the bwrap test's bot advises away (no other test drops its pages)."""
CONTROLS = {False: "/usr/lib/python3.11/turtle.py", True: "/usr/lib/python3.11/pydoc.py"}
"""The host's files the filter's own test advises away, then drops unfiltered (a bot's
filter, a build's: one file each, as the two may run at once)."""

PROBE = """\
import ctypes, errno, json, mmap, os, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("PROBE_TARGET") or open(os.path.join(HERE, "target")).read().strip()
PAGE = 4096
NOWAIT = 0x8
HIGH = 0xFFFFFFFF00000000  # the upper half of the flags register: not read by the kernel


def name(number):
    return errno.errorcode.get(number, str(number))


def raw(number, *args):
    ctypes.set_errno(0)
    done = libc.syscall(ctypes.c_long(number), *(ctypes.c_ulong(a) for a in args))
    return "ok" if done >= 0 else name(ctypes.get_errno())


def attempt(call):
    try:
        call()
    except OSError as exc:
        return name(exc.errno)
    return "ok"


def raw_preadv2(fd, flags):
    buffer = ctypes.create_string_buffer(16)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 16)
    return raw(327, fd, ctypes.addressof(iov), 1, PAGE, 0, flags)


def probe():
    found = {}
    fd = os.open(SHARED, os.O_RDONLY)
    buffer = bytearray(16)
    read = os.preadv(fd, [buffer], 3 * PAGE, 0)
    found["preadv2"] = "ok" if bytes(buffer[:read]) == os.pread(fd, 16, 3 * PAGE) else "wrong"
    found["preadv2 high bits"] = raw_preadv2(fd, HIGH)
    found["preadv2 nowait"] = attempt(lambda: os.preadv(fd, [buffer], 0, os.RWF_NOWAIT))
    found["preadv2 nowait high bits"] = raw_preadv2(fd, HIGH | NOWAIT)
    found["fadvise"] = attempt(lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
    found["readahead"] = raw(187, fd, 0, PAGE)
    size = os.fstat(fd).st_size
    pages = (size + PAGE - 1) // PAGE
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
    address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    vector = (ctypes.c_ubyte * pages)()
    if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector) == 0:
        found["mincore"] = [sum(v & 1 for v in vector), pages]
    else:
        found["mincore"] = name(ctypes.get_errno())
    os.close(fd)
    # A file of the bot's own (its /tmp): writable, so mincore and cachestat would tell.
    own_path = os.path.join(os.environ.get("PROBE_TMP", "/tmp"), "kryt-side-channels")
    own = os.open(own_path, os.O_RDWR | os.O_CREAT, 0o600)
    found["pwritev2"] = attempt(lambda: os.pwritev(own, [b"kryt" * 1024], 0, 0))
    back = bytearray(4)
    os.preadv(own, [back], 4, 0)
    found["read back"] = bytes(back).decode()
    found["pwritev2 nowait"] = attempt(lambda: os.pwritev(own, [b"x"], 0, os.RWF_NOWAIT))
    found["preadv2 nowait own"] = attempt(lambda: os.preadv(own, [back], 0, os.RWF_NOWAIT))
    cachestat_range = (ctypes.c_uint64 * 2)(0, 0)
    cachestat = (ctypes.c_uint64 * 5)()
    where = (ctypes.addressof(cachestat_range), ctypes.addressof(cachestat))
    found["cachestat"] = raw(451, own, *where, 0)
    os.close(own)
    context = ctypes.c_ulong(0)
    found["io_setup"] = raw(206, 1, ctypes.addressof(context))
    found["io_destroy"] = raw(207, 0)
    found["io_getevents"] = raw(208, 0, 0, 0, 0, 0)
    found["io_submit"] = raw(209, 0, 0, 0)
    found["io_cancel"] = raw(210, 0, 0, 0)
    found["io_pgetevents"] = raw(333, 0, 0, 0, 0, 0, 0)
    found["openpty"] = attempt(os.openpty)
    found["dev/pts"] = []
    for line in open("/proc/self/mountinfo"):
        mount, _, kind = line.partition(" - ")
        if mount.split()[4] == "/dev/pts":
            read_only = "ro" in mount.split()[5].split(",")
            found["dev/pts"].append(kind.split()[0] + (" ro" if read_only else ""))
    return found


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--print":
    print(json.dumps(probe()))
else:
    from _serve import serve

    RESULT = probe()
    serve(lambda: RESULT)
"""

MANIFEST = """\
name = "sidechannels"
version = "1.0.0"
language = "python"
entry = "bot.py"
description = "Probes the page-cache, AIO and pseudo-terminal calls round 10 closed."
"""

#: What every sandbox answers (both backends): the review's channels closed, the ordinary
#: calls around them working. ``ENOTSUP`` is Python's name of errno 95, Linux's EOPNOTSUPP.
EXPECTED = {
    "preadv2": "ok",
    "preadv2 high bits": "ok",
    "preadv2 nowait": "ENOTSUP",
    "preadv2 nowait high bits": "ENOTSUP",
    "fadvise": "ok",
    "readahead": "ok",
    "pwritev2": "ok",
    "read back": "kryt",
    "pwritev2 nowait": "ENOTSUP",
    "preadv2 nowait own": "ENOTSUP",
    "cachestat": "EPERM",
    "io_setup": "EPERM",
    "io_destroy": "EPERM",
    "io_getevents": "EPERM",
    "io_submit": "EPERM",
    "io_cancel": "EPERM",
    "io_pgetevents": "EPERM",
}


@pytest.fixture
def probe_bot(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """``probe_bot(target)``: the probe's folder, advising and reading ``target``; its own
    image under Docker (the test's name is one of its files)."""

    def make(target: str) -> Path:
        source = tmp_path / "source"
        source.mkdir(exist_ok=True)
        (source / "bot.py").write_text(PROBE)
        (source / "bot.toml").write_text(MANIFEST)
        extra = {"target": target, "test": request.node.nodeid}
        return stage_hostile_bot(source, tmp_path / "sidechannels", extra)

    return make


def resident(path: str) -> tuple[int, int]:
    """(cached pages, pages) of ``path`` as this process sees them (as root: the truth)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        try:
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
            return sum(v & 1 for v in vector), pages
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)


def cache_all(path: str) -> None:
    """Read ``path`` whole, so that every page of it is in the page cache."""
    Path(path).read_bytes()


def run_bot(backend: Backend, folder: Path) -> dict[str, Any]:
    """The probe's report from a bot started in ``backend`` (stopped and checked clean)."""
    bot = backend.start(folder, roomy(), "test-side-channels")
    try:
        found: dict[str, Any] = report(bot)
    finally:
        try:
            stop_and_check_clean(bot)
        finally:
            forget_image(backend, folder)
    return found


def test_every_sandbox_closes_the_channels_and_keeps_ordinary_io(
    sandbox_backend: Backend, probe_bot: Callable[[str], Path]
) -> None:
    """Both backends: the review's calls refused or ignored, plain ``preadv2``/``pwritev2``
    (and flags whose upper half only is set: the kernel reads 32 bits) still working."""
    found = run_bot(sandbox_backend, probe_bot(SHARED))
    assert {key: found.get(key) for key in EXPECTED} == EXPECTED, found
    # The kernel's rule (5.2+): a file the bot may not write shows every page as cached.
    cached, pages = found["mincore"]
    assert pages > 16 and cached == pages, found["mincore"]
    assert found["openpty"] in {"ENOENT", "ENXIO", "EACCES", "EPERM"}, found["openpty"]


@pytest.mark.docker
def test_a_docker_bot_has_no_devpts_and_opens_no_pseudo_terminal(
    docker_backend: Backend, probe_bot: Callable[[str], Path]
) -> None:
    """Docker's ``devpts`` is gone: ``/dev/pts`` is an empty read-only tmpfs, so
    ``/dev/ptmx`` (a link to ``pts/ptmx``) leads nowhere."""
    found = run_bot(docker_backend, probe_bot(SHARED))
    assert found["dev/pts"] == ["tmpfs ro"], found["dev/pts"]
    assert found["openpty"] == "ENOENT", found["openpty"]


def test_a_bwrap_bots_page_cache_advice_leaves_the_shared_pages_cached(
    bwrap_backend: Backend, probe_bot: Callable[[str], Path]
) -> None:
    """The probe's ``posix_fadvise(POSIX_FADV_DONTNEED)`` on the host's file "succeeds" but
    drops nothing: every page the host cached before is still cached after."""
    cache_all(ADVISED)
    before = resident(ADVISED)
    assert before[0] == before[1], before
    found = run_bot(bwrap_backend, probe_bot(ADVISED))
    assert found["fadvise"] == "ok", found
    assert resident(ADVISED) == before


def run_confined_probe(tmp_path: Path, build: bool) -> dict[str, Any]:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = subprocess.run(
        seccomp.confined_command(["/usr/bin/python3", str(probe), "--print"], build=build),
        env={"PATH": "/usr/bin:/bin", "PROBE_TMP": str(tmp_path), "PROBE_TARGET": CONTROLS[build]},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.mark.skipif(
    not all(Path(path).is_file() for path in CONTROLS.values())
    or seccomp.filter_problem() is not None,
    reason="needs the host's Python 3.11 and libseccomp",
)
@pytest.mark.parametrize("build", [False, True], ids=["bot", "build"])
def test_the_filter_answers_the_same_to_bots_and_builds(tmp_path: Path, build: bool) -> None:
    """The launcher's filter alone (as root on the host, where ``mincore`` tells the truth):
    the same answers for a running bot's filter and a build's, and ``DONTNEED`` ignored. A
    process without the filter drops the pages (the check can fail)."""
    control = CONTROLS[build]
    cache_all(control)
    found = run_confined_probe(tmp_path, build)
    assert {key: found.get(key) for key in EXPECTED} == EXPECTED, found
    cached, pages = resident(control)
    assert cached == pages
    fd = os.open(control, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    assert resident(control)[0] < pages
