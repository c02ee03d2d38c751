"""Host file-system work the sandbox does for bots: small tmpfs mounts and safe deletion.

- :func:`mount_tmpfs` gives each bot's socket directory its own tiny tmpfs (size and inode
  caps), so nothing a bot writes there reaches the host's disk or inode table. bwrap also
  stages a bot's code and the shared runtime into their own (read-only,
  :func:`remount_read_only`) tmpfs: a bind of a tmpfs root shows ``/`` as its root in
  ``/proc/self/mountinfo``, where a bind of a host directory shows the host path.
- :func:`remove_tree` deletes any tree a bot can build (5,000 levels deep, paths far beyond
  ``PATH_MAX``, directories chmod-ed to 0) without recursion and with O(1) open descriptors:
  it walks with ``openat``/``unlinkat`` relative to one directory descriptor at a time.
- :func:`mounts_under` / :func:`unmount` find and detach mounts below a directory before
  it is removed (a tmpfs left by a killed runner would otherwise make ``rmdir`` fail).

Every failure is a :class:`~sandbox.errors.CleanupError` naming the path: a cleanup
problem is always ours, never the bot's.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from pathlib import Path

from sandbox.errors import CleanupError

__all__ = ["mount_tmpfs", "mounts_under", "remount_read_only", "remove_tree", "unmount"]

_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REMOUNT = 0x20
_MNT_DETACH = 0x2
_UMOUNT_NOFOLLOW = 0x8
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(
    path: Path,
    *,
    size_bytes: int,
    inodes: int,
    uid: int,
    gid: int,
    mode: int = 0o700,
    executable: bool = False,
) -> None:
    """Mount a fresh tmpfs on ``path`` (needs CAP_SYS_ADMIN): ``nosuid,nodev`` (and
    ``noexec`` unless ``executable``), at most ``size_bytes`` and ``inodes`` entries, its
    root owned by ``uid:gid`` with ``mode``.

    Raises :class:`OSError` when the kernel refuses (not root, no capability), and
    :class:`ValueError` for a size or inode count below 1 (0 means unlimited to the kernel).
    """
    if size_bytes < 1 or inodes < 1:
        raise ValueError(
            f"a tmpfs needs a positive size and inode count (0 is unlimited to the kernel): "
            f"size_bytes={size_bytes}, inodes={inodes}"
        )
    options = f"size={size_bytes},nr_inodes={inodes},mode={mode:04o},uid={uid},gid={gid}"
    result = _libc().mount(
        b"tmpfs",
        os.fsencode(path),
        b"tmpfs",
        ctypes.c_ulong(_flags(executable)),
        options.encode(),
    )
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount tmpfs on {str(path)!r}: {os.strerror(code)}")


def _flags(executable: bool) -> int:
    return _MS_NOSUID | _MS_NODEV | (0 if executable else _MS_NOEXEC)


def remount_read_only(path: Path, *, executable: bool = False) -> None:
    """Make the tmpfs mounted at ``path`` (by :func:`mount_tmpfs`) read-only, keeping its
    other flags. Raises :class:`OSError` when the kernel refuses."""
    flags = _MS_REMOUNT | _MS_RDONLY | _flags(executable)
    if _libc().mount(None, os.fsencode(path), None, ctypes.c_ulong(flags), None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"remount {str(path)!r} read-only: {os.strerror(code)}")


def unmount(path: Path) -> None:
    """Detach the mount at ``path`` (lazily: open descriptors keep it alive, not the path)."""
    if _libc().umount2(os.fsencode(path), _MNT_DETACH | _UMOUNT_NOFOLLOW) != 0:
        code = ctypes.get_errno()
        if code in (errno.EINVAL, errno.ENOENT):
            return  # not (or no longer) a mount point
        raise CleanupError(f"could not unmount {str(path)!r}: {os.strerror(code)}")


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    out, i = [], 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below ``path`` in this mount namespace, deepest first."""
    base = os.path.realpath(path)
    prefix = base.rstrip("/") + "/"
    found: list[str] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            for line in handle:
                fields = line.split(" ")
                if len(fields) > 4:
                    point = _unescape(fields[4])
                    if point == base or point.startswith(prefix):
                        found.append(point)
    except OSError as exc:
        raise CleanupError(f"cannot read /proc/self/mountinfo: {exc}") from exc
    found.sort(key=lambda p: p.count("/"), reverse=True)
    return [Path(p) for p in found]


def _open_dir(name: str, dir_fd: int | None) -> int:
    """Open a directory below ``dir_fd``, with every owner permission when it is ours: a bot
    of our uid may have chmod-ed it to 0 (it cannot be opened) or to 0500 (it opens, but
    nothing in it can be deleted). Root needs neither."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    # Best effort: where it fails (a read-only or immutable directory), the deletion that
    # follows reports the real problem, naming the path.
    with contextlib.suppress(OSError):
        info = os.fstat(fd)
        if info.st_uid == os.geteuid() and info.st_mode & 0o700 != 0o700:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) | 0o700)
    return fd


def _clear_one_level(fd: int, device: int) -> str | None:
    """Delete the files and empty directories in ``fd``; return a non-empty subdirectory."""
    with os.scandir(fd) as entries:
        for entry in entries:
            # Entries may vanish meanwhile (the reaper and the runner may both clean up).
            try:
                if not entry.is_dir(follow_symlinks=False):
                    os.unlink(entry.name, dir_fd=fd)
                    continue
                if entry.stat(follow_symlinks=False).st_dev != device:
                    raise CleanupError(f"{entry.name!r} is a mount point; refusing to descend")
                os.rmdir(entry.name, dir_fd=fd)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                return entry.name
    return None


def remove_tree(path: Path) -> None:
    """Delete ``path`` and everything below it; a missing ``path`` is fine.

    Mounts below ``path`` are detached first (root only; otherwise they make this fail).
    The walk never recurses and holds one directory descriptor at a time, so neither depth
    nor path length nor permissions a bot set can stop it. Raises :class:`CleanupError`.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CleanupError(f"could not remove {str(path)!r}: {exc}") from exc
    names: list[str] = []
    fd: int | None = None
    try:
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(path)
            return
        for mount in mounts_under(path):
            unmount(mount)
        fd = _open_dir(os.fspath(path), None)
        device = os.fstat(fd).st_dev
        while True:
            child = _clear_one_level(fd, device)
            if child is not None:
                try:
                    next_fd = _open_dir(child, fd)
                except FileNotFoundError:
                    continue
                os.close(fd)
                fd = next_fd
                names.append(child)
                continue
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            # Another cleaner (the reaper, a sweep) may have removed it meanwhile: fine.
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(names.pop(), dir_fd=fd)
        os.close(fd)
        fd = None
        os.rmdir(path)
    except CleanupError as exc:
        raise CleanupError(f"could not remove {str(path)!r}: {exc}") from exc
    except FileNotFoundError:
        if os.path.lexists(path):
            raise CleanupError(f"{str(path)!r} changed while it was being removed") from None
    except OSError as exc:
        where = f" at depth {len(names)} ({names[-1]!r})" if names else ""
        raise CleanupError(f"could not remove {str(path)!r}{where}: {exc}") from exc
    finally:
        if fd is not None:
            os.close(fd)
