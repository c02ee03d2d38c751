"""A uid (and gid) of its own for every running bot, leased from a pool.

The kernel keeps some quotas per uid: inotify instances and watches, epoll watches,
``RLIMIT_NPROC``, POSIX message queue bytes. Bots sharing one uid share them, so one bot
holding all 128 inotify instances of the uid made another bot's ``inotify_init`` fail. Each
bot (bwrap as root, Docker) therefore runs as a uid of its own, with the gid of the same
number, from :data:`DEFAULT_FIRST_UID` to ``DEFAULT_FIRST_UID + DEFAULT_COUNT - 1`` (set
``KRYT_SANDBOX_UIDS=FIRST-LAST`` to move it): a block far above the uids of people (1000+),
systemd's dynamic users (61184-65519), ``nobody`` (65534) and systemd-nspawn's container
range (524288-1879048191), and below 2^31 (some tools read uids as signed).

A lease is an exclusive ``flock`` on ``<lock dir>/<uid>.lock``, held by this process for
the bot's life, and gone with its holder (a runner killed by ``kill -9`` leaks no uid). As
root the lock directory is :data:`MACHINE_LOCK_DIR`, whatever runtime directory a runner
uses, so leases are unique across every referee process of the machine; otherwise (Docker
bots of a user in the docker group) it is ``<runtime dir>/uids``, per user. The lock
files themselves are never deleted (deleting a locked file would let a second process lock
a new file of the same name). A uid is handed out only when no process runs as it (uid or
gid, any of real/effective/saved/filesystem): a bot whose processes outlived their stop, or
a container of a dead runner the reaper has not removed yet, keeps its uid out of the pool
until it is gone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.errors import SandboxInfrastructureError

__all__ = [
    "DEFAULT_COUNT",
    "DEFAULT_FIRST_UID",
    "MACHINE_LOCK_DIR",
    "UIDS_ENV",
    "UidLease",
    "UidPool",
    "default_pool",
    "ids_in_use",
]

UIDS_ENV = "KRYT_SANDBOX_UIDS"
"""Environment variable naming the pool's range, ``FIRST-LAST`` (inclusive)."""
DEFAULT_FIRST_UID = 1_990_000_000
DEFAULT_COUNT = 1000
MACHINE_LOCK_DIR = Path("/run/kryt-sandbox-uids")
"""Where root's referees lease uids: one directory for the machine, not one per runtime
directory (two runners given different ``KRYT_SANDBOX_RUNTIME_DIR`` would otherwise each
hand out the same uid, and their bots could signal each other and share per-uid quotas)."""


def ids_in_use() -> set[int]:
    """Every uid and gid some process of this pid namespace runs with (real, effective,
    saved or filesystem), zombies included."""
    found: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                for line in handle:
                    if line.startswith(("Uid:", "Gid:")):
                        found.update(int(value) for value in line.split()[1:])
        except (OSError, ValueError):
            continue  # gone meanwhile
    return found


@dataclass
class UidLease:
    """One bot's uid and gid, held until :meth:`release` (idempotent)."""

    uid: int
    gid: int
    _fd: int | None = field(default=None, repr=False)
    _pool: UidPool | None = field(default=None, repr=False)

    def release(self) -> None:
        """Give the uid back. Call it once every process of the bot is gone (a survivor
        keeps the uid out of later leases anyway: :meth:`UidPool.lease` checks)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._pool is not None:
            self._pool._forget(self.uid)
        # LOCK_UN first: it releases the lock of the open file description even where a
        # forked child of ours still holds a copy of the descriptor.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class UidPool:
    """``count`` uids from ``first``, leased through lock files in ``lock_dir`` (default:
    :data:`MACHINE_LOCK_DIR` as root, else ``<runtime dir>/uids``)."""

    def __init__(self, first: int, count: int, lock_dir: Path | None = None) -> None:
        if first < 1 or count < 1 or first + count - 1 > 0xFFFF_FFFE:
            raise ValueError(f"bad sandbox uid range: {first} and {count} after it")
        self.first = first
        self.count = count
        self._lock_dir = lock_dir
        self._held: set[int] = set()
        self._lock = threading.Lock()

    @property
    def last(self) -> int:
        """The pool's highest uid."""
        return self.first + self.count - 1

    def __contains__(self, uid: object) -> bool:
        return isinstance(uid, int) and self.first <= uid <= self.last

    def describe(self) -> str:
        """``"uids FIRST-LAST"``, for reasons and messages."""
        return f"uids {self.first}-{self.last}"

    def lock_dir(self) -> Path:
        """The directory of the lock files (made on first use: mode 0700, ours)."""
        if self._lock_dir is None:
            if os.geteuid() == 0:
                self._lock_dir = MACHINE_LOCK_DIR
            else:
                from sandbox.backend import runtime_dir

                self._lock_dir = runtime_dir() / "uids"
        path = self._lock_dir
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise SandboxInfrastructureError(
                f"cannot make the sandbox uid lock directory {str(path)!r}: {exc}"
            ) from exc
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise SandboxInfrastructureError(f"{str(path)!r} is not a directory owned by us")
        return path

    def lease(self) -> UidLease:
        """The lowest uid of the pool that no bot holds and no process runs as; raises
        :class:`SandboxInfrastructureError` (ours) when every one is taken."""
        directory = self.lock_dir()
        busy = 0
        for uid in range(self.first, self.last + 1):
            with self._lock:
                if uid in self._held:
                    continue
                self._held.add(uid)
            fd: int | None = None
            try:
                fd = os.open(
                    directory / f"{uid}.lock",
                    os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW,
                    0o600,
                )
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # Locked: no live bot of any runner has it. Its last bot's processes
                # may still run (cleanup failed, a dead runner's container): skip it then.
                if uid in ids_in_use():
                    busy += 1
                    raise BlockingIOError(errno.EBUSY, "processes of this uid run")
            except OSError as exc:
                with self._lock:
                    self._held.discard(uid)
                if fd is not None:
                    with contextlib.suppress(OSError):
                        fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EBUSY):
                    continue
                raise SandboxInfrastructureError(f"cannot lease sandbox uid {uid}: {exc}") from exc
            return UidLease(uid=uid, gid=uid, _fd=fd, _pool=self)
        raise SandboxInfrastructureError(
            f"no free sandbox uid: all {self.count} of {self.describe()} are in use"
            f" ({busy} by leftover processes); raise the range with {UIDS_ENV}=FIRST-LAST"
        )

    def _forget(self, uid: int) -> None:
        with self._lock:
            self._held.discard(uid)


_RANGE = re.compile(r"\s*(\d+)\s*-\s*(\d+)\s*\Z")
_default: dict[str, UidPool] = {}
_default_lock = threading.Lock()


def default_pool() -> UidPool:
    """The pool bots lease from: :data:`UIDS_ENV` (``FIRST-LAST``) or the default block.
    A malformed setting is our error (:class:`SandboxInfrastructureError`)."""
    setting = os.environ.get(UIDS_ENV, "").strip()
    with _default_lock:
        pool = _default.get(setting)
        if pool is None:
            if setting:
                match = _RANGE.match(setting)
                if match is None or int(match[2]) < int(match[1]) or int(match[1]) < 1:
                    raise SandboxInfrastructureError(
                        f"{UIDS_ENV}={setting!r} is not a range FIRST-LAST of uids above 0"
                    )
                first, count = int(match[1]), int(match[2]) - int(match[1]) + 1
            else:
                first, count = DEFAULT_FIRST_UID, DEFAULT_COUNT
            try:
                pool = UidPool(first, count)
            except ValueError as exc:
                raise SandboxInfrastructureError(f"{UIDS_ENV}: {exc}") from exc
            _default[setting] = pool
        return pool
