"""Escape review, round 10: a hostile bot author's attacks the earlier hostile suites do not
try, on Docker and bwrap (the bot folders are under ``escape_review/``).

- What a bot inherits and reaches at all: its descriptors (none leads out of its root), its
  supervisor (process 1: environment, memory, descriptors closed to it), the mounts it can
  write to (only its own ``/tmp``, ``/dev/shm`` and ``/run/kryt``), the host's services
  (PostgreSQL, the Docker API, unix sockets) and its environment (no secret of ours).
- State that outlives a bot: files, System V and POSIX IPC objects and a daemon serving an
  abstract socket, left by one bot for the next; and a bot that exits 0 with a daemon
  behind it leaves no process.
- The page cache of a read-only file the sandboxes share (the host's ``/usr`` under
  bwrap): one bot drops and reads pages, the other asks which are cached with
  ``preadv2(RWF_NOWAIT)``; a 64-bit secret passes exactly. Under Docker the image's files
  sit on overlayfs, which refuses ``RWF_NOWAIT`` (there only timing would tell). Found on
  bwrap; closed by the seccomp filter (fadvise ignored, ``RWF_NOWAIT`` refused).
- The kernel's machine-wide object counters, which no namespace separates: legacy AIO
  contexts (``/proc/sys/fs/aio-nr``, ``io_setup``: not refused by the seccomp filter) and,
  under Docker, pseudo-terminals (``/proc/sys/kernel/pty/nr``, ``/dev/ptmx``). Two bots of
  one author at one table share a secret through them, as through the file locks the
  filter now refuses (docs/sandbox.md, "A seccomp filter"), and one bot can take them all,
  as a bot once took every inotify instance of a shared uid ("A uid per bot"). Found on
  both; closed: ``io_setup`` is refused and Docker bots get no devpts, so each test
  accepts "refused" or "not seen".
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import Backend, RunningBot
from sandbox.death import DeathCause
from tests.sandbox.conftest import roomy, stage_hostile_bot
from tests.sandbox.test_hostile import (
    PATIENT,
    call,
    forget_image,
    report,
    stop_and_check_clean,
    wait_death,
)

pytestmark = pytest.mark.timeout(400)

REVIEW = Path(__file__).parent / "escape_review"
MakeEscapeBot = Callable[..., Path]


@pytest.fixture
def make_escape_bot(tmp_path: Path) -> MakeEscapeBot:
    """``make_escape_bot("keeper", {"role": "write"}, folder="writer")`` -> a bot folder of
    ``escape_review/`` (with the shared ``_serve.py``) ready to start."""

    def make(name: str, extra: dict[str, str] | None = None, folder: str | None = None) -> Path:
        # A salt of its own: two tests (in two pytest workers) staging the same bot would
        # share one Docker image, and the first to finish would remove it under the other.
        salted = {**(extra or {}), "salt.txt": uuid.uuid4().hex}
        return stage_hostile_bot(REVIEW / name, tmp_path / (folder or name), salted)

    return make


@contextmanager
def running(backend: Backend, folder: Path, label: str) -> Iterator[RunningBot]:
    """A started bot, stopped (and checked clean) when the block ends; a one-off bot's
    Docker image is removed after it."""
    bot = backend.start(folder, roomy(), label)
    try:
        yield bot
    finally:
        try:
            stop_and_check_clean(bot)
        finally:
            forget_image(backend, folder)


def named_processes(name: str) -> list[int]:
    """Host pids whose command name (``/proc/PID/comm``) is ``name``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_gone(name: str, seconds: float = PATIENT) -> list[int]:
    """Poll until no host process is named ``name``; the ones still there."""
    deadline = time.monotonic() + seconds
    while (left := named_processes(name)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def host_io_setup() -> int:
    """0 when this (host) process can set up a one-event AIO context, else the errno."""
    if platform.machine() != "x86_64":
        pytest.skip(f"io_setup's number is x86_64's, not {platform.machine()}'s")
    libc = ctypes.CDLL(None, use_errno=True)
    context = ctypes.c_ulong(0)
    if libc.syscall(206, 1, ctypes.byref(context)) != 0:  # io_setup
        return ctypes.get_errno()
    libc.syscall(207, context)  # io_destroy
    return 0


# ------------------------------------------------------------------- what a bot reaches


ALLOWED_ENV = {
    "HOME",
    "HOSTNAME",
    "KRYT_BOT_ADDRESS",
    "LANG",
    "PATH",
    "PWD",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONPATH",
}


def test_a_bot_reaches_no_descriptor_supervisor_mount_service_or_secret_of_ours(
    sandbox_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """It inherits only its standard streams (no directory descriptor whose ``..`` walks
    the host: bwrap's bind descriptors, the seccomp descriptor, the status pipe); process 1
    (the supervisor) is closed to it through ``/proc`` (environment: Docker's status
    secret, memory, descriptors, maps); it can write only to its own ``/tmp``, ``/dev/shm``
    and ``/run/kryt``; no host service answers it (PostgreSQL on 5432, the Docker API, the
    usual unix sockets); its environment holds nothing of the referee's."""
    secret_values = [v for k, v in os.environ.items() if k.startswith("KRYT_") and len(v) > 3]
    with running(sandbox_backend, make_escape_bot("recon"), "test-r10-recon") as bot:
        result = report(bot)
    fds = result["fds"]
    # 0, 1, 2 and the descriptor listing /proc/self/fd itself (closed when read back).
    assert set(fds) <= {"0", "1", "2", "3"}, fds
    assert fds.get("3", "?").startswith("?"), fds
    assert result["fd_escapes"] == []
    for what in ("environ", "maps", "mem", "fd", "fdinfo/0", "stack"):
        assert result["pid1"][what].startswith("refused"), (what, result["pid1"][what])
    assert set(result["writable"]) <= {"/tmp", "/dev/shm", "/run/kryt"}, result["writable"]
    assert {"/tmp", "/run/kryt"} <= set(result["writable"])
    assert result["services"] == []
    env: dict[str, str] = result["env"]
    assert set(env) <= ALLOWED_ENV, sorted(set(env) - ALLOWED_ENV)
    assert "KRYT_STATUS_TOKEN" not in env
    assert not [value for value in secret_values if value in repr(result)]
    assert result["uid"][0] != 0 and result["uid"][0] == result["uid"][1]
    assert len(result["pids"]) <= 3, result["pids"]
    # The machine's name is not the bot's business (Docker and bwrap both say "bot").
    assert result["hostname"] == "bot", result["hostname"]


# ------------------------------------------------------------------ state that outlives


def test_nothing_a_bot_leaves_reaches_the_next_bot(
    sandbox_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """The writer leaves a secret in its writable mounts, System V shared memory and a
    message queue, a POSIX message queue and a daemon (new session, deaf to SIGTERM)
    serving it on an abstract socket; once it is stopped the daemon is gone and the next
    bot (often on the same uid) finds none of it."""
    secret = f"KRYT-R10-{secrets.token_hex(8)}"
    writer = make_escape_bot("keeper", {"role": "write", "secret": secret}, folder="writer")
    with running(sandbox_backend, writer, "test-r10-keep-write") as bot:
        done = report(bot)["done"]
        assert done == [
            "/tmp/kryt-keep",
            "/dev/shm/kryt-keep",
            "/run/kryt/kryt-keep",
            "shm",
            "msg",
            "mq",
            "daemon",
        ], done
        assert named_processes("krytkeep10"), "the daemon is not running (seen from the host)"
    assert wait_gone("krytkeep10") == [], "the writer's daemon outlived it"
    reader = make_escape_bot("keeper", {"role": "read"}, folder="reader")
    with running(sandbox_backend, reader, "test-r10-keep-read") as bot:
        result = report(bot)
    assert result["found"] == {}, result
    assert secret not in repr(result)


def test_a_bot_that_exits_leaves_no_daemon_behind(
    sandbox_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """Its main process exits 0 (no signal, so the supervisor kills nothing itself) while
    its daemon (double fork, own session, deaf to SIGTERM and SIGHUP) runs: an ``EXITED``
    death, and no process of it remains once it is stopped."""
    secret = f"KRYT-R10-{secrets.token_hex(8)}"
    folder = make_escape_bot("keeper", {"role": "write", "secret": secret}, folder="exiter")
    with running(sandbox_backend, folder, "test-r10-exiter") as bot:
        assert "daemon" in report(bot)["done"]
        assert named_processes("krytkeep10"), "the daemon is not running (seen from the host)"
        assert call(bot, "Big") == b"bye"
        death = wait_death(bot, PATIENT)
        assert death.cause is DeathCause.EXITED, death
    assert wait_gone("krytkeep10") == [], "the daemon outlived its bot"


# ------------------------------------------------------------------------ page cache


@pytest.mark.parametrize(
    "backend_name",
    [
        pytest.param("docker", marks=pytest.mark.docker),
        "bwrap",
    ],
)
def test_the_page_cache_of_a_shared_file_carries_no_secret_between_running_bots(
    backend_name: str, request: pytest.FixtureRequest, make_escape_bot: MakeEscapeBot
) -> None:
    """The sender drops 64 pages of ``pydoc_data/topics.py`` (a file no bot reads) from the
    page cache and reads back those of the 1 bits of a random 64-bit secret; the receiver,
    started after the sender reported and stopped before it, must not read the secret back
    with ``preadv2(RWF_NOWAIT)`` (EAGAIN: not cached)."""
    backend: Backend = request.getfixturevalue(f"{backend_name}_backend")
    bits = format((secrets.randbits(64) | 1 << 63) & ~1, "064b")  # never all 0s or all 1s
    sender = make_escape_bot("pagecache", {"role": "send", "bits": bits}, folder="sender")
    receiver = make_escape_bot("pagecache", {"role": "receive"}, folder="receiver")
    with running(backend, sender, "test-r10-page-send") as sending:
        assert report(sending)["sent"] == bits
        with running(backend, receiver, "test-r10-page-recv") as receiving:
            got = report(receiving)
    assert got["received"] != bits, got


# ------------------------------------------------------- machine-wide kernel counters


def test_aio_contexts_carry_no_secret_between_running_bots(
    sandbox_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """The sender holds 7 AIO contexts of 64 events (448 in ``/proc/sys/fs/aio-nr``) while
    it runs; the receiver, started after the sender reported and stopped before it, must
    not see them: a number one bot sets and another reads is a channel (a hand, bit by bit,
    as the file locks the seccomp filter now refuses)."""
    sender = make_escape_bot("counters", {"role": "send"}, folder="sender")
    receiver = make_escape_bot("counters", {"role": "receive"}, folder="receiver")
    with running(sandbox_backend, sender, "test-r10-aio-send") as sending:
        sent = report(sending)
        if sent["aio"] != "ok":  # refused (the seccomp filter): the counter cannot carry it
            assert sent["aio"] == f"io_setup: errno {errno.EPERM}", sent
            return
        assert sent["aio_raised"] >= 448, sent
        with running(sandbox_backend, receiver, "test-r10-aio-recv") as receiving:
            seen = report(receiving)
    assert seen["aio_seen"] < sent["aio_raised"], (sent, seen)


def test_a_bot_cannot_take_every_aio_context_of_the_machine(
    sandbox_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """The hog takes every event ``/proc/sys/fs/aio-max-nr`` allows (65,536: about 4 MiB of
    rings, well within its memory limit) and holds them; meanwhile the host (this process)
    and another bot must still get an AIO context of their own."""
    hog = make_escape_bot("counters", {"role": "hog"}, folder="hog")
    other = make_escape_bot("counters", {"role": "receive"}, folder="other")
    with running(sandbox_backend, hog, "test-r10-aio-hog") as hogging:
        taken = report(hogging)
        host = host_io_setup()
        with running(sandbox_backend, other, "test-r10-aio-other") as bot:
            seen = report(bot)
    assert host == 0, (taken, host, seen)  # the host always gets a context of its own
    # A bot either gets no AIO context at all (refused) or the hog left it one.
    assert taken["taken"] == 0 or seen["io_setup"] == "ok", (taken, seen)


@pytest.mark.docker
def test_pseudo_terminals_carry_no_secret_between_running_docker_bots(
    docker_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """Docker mounts a ``devpts`` with ``/dev/ptmx`` (mode 666) in every container (bwrap's
    ``/dev`` has none: ``openpty`` fails there); the count of pseudo-terminals is the
    machine's. The sender holds 13; the receiver must not see them."""
    sender = make_escape_bot("counters", {"role": "send"}, folder="sender")
    receiver = make_escape_bot("counters", {"role": "receive"}, folder="receiver")
    with running(docker_backend, sender, "test-r10-pty-send") as sending:
        sent = report(sending)
        if sent["pty"] != "ok":  # no pseudo-terminal to open: the counter cannot carry it
            assert sent["pty"].startswith("openpty: "), sent
            return
        assert sent["pty_raised"] >= 13, sent
        with running(docker_backend, receiver, "test-r10-pty-recv") as receiving:
            seen = report(receiving)
    assert seen["pty_seen"] < sent["pty_raised"], (sent, seen)


@pytest.mark.docker
def test_a_docker_bot_cannot_take_every_pseudo_terminal(
    docker_backend: Backend, make_escape_bot: MakeEscapeBot
) -> None:
    """The hog opens pseudo-terminals in up to 24 children of 200 each (its open-file and
    process limits allow far more than the kernel's 3,072 for all containers together:
    ``kernel.pty.max`` 4,096 less the 1,024 reserved for the host's own ``/dev/pts``);
    another bot started meanwhile must still open one."""
    hog = make_escape_bot("counters", {"role": "ptyhog"}, folder="ptyhog")
    other = make_escape_bot("counters", {"role": "receive"}, folder="other")
    with running(docker_backend, hog, "test-r10-pty-hog") as hogging:
        held: dict[str, Any] = report(hogging)
        with running(docker_backend, other, "test-r10-pty-other") as bot:
            seen = report(bot)
        master, slave = os.openpty()  # the host's own /dev/pts still serves
        os.close(master)
        os.close(slave)
    # A bot either opens none at all (no devpts) or the hog left it one.
    assert held["ptys"] == 0 or seen["openpty"] == "ok", (held, seen)
