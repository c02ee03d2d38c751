"""What the bwrap backend needs from a runtime: its image's file system, on the host.

The bwrap backend runs bots of every runtime but ``python`` (which keeps the host's
interpreter and a staged copy of its packages, see :mod:`sandbox.local`) inside the root
file system of the runtime's locally built image (:mod:`sandbox.runtimes.images`): the
image is exported once (``docker create`` + ``docker export``, unpacked member by member with
:func:`tarfile.tar_filter` plus our own rules) into a cache directory keyed by the image's tag,
owned by root and made read-only, and bwrap binds it read-only as ``/``. Docker is needed
only to make the copy; once it exists, bots start from it without any engine.

The cache (:func:`cache_dir`) is ``KRYT_SANDBOX_CACHE_DIR``, else ``/var/cache/kryt-sandbox``
as root, else ``$XDG_CACHE_HOME/kryt-sandbox`` (``~/.cache``). It is on disk on purpose: a
JDK's file system is about 400 MB (Go's 870 MB), too much for the RAM-backed runtime
directory. The cache and its ``rootfs`` folder are 0711 (bwrap resolves a bind's source by
path even when handed a descriptor, so the sandbox uid must traverse them; the copies hold
only what the public image holds); ``artifacts`` is 0700 (each bot gets a copy of its own).

Compiled submissions are built into :func:`artifact_dir` entries by the bwrap backend (the
build runs under bwrap in the same root, see :mod:`sandbox.local`); :func:`store_artifact`
copies the build's output in, world-readable, owned by us, so it is immutable for the bot.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sandbox.errors import ImageBuildError
from sandbox.runtimes import Runtime, RuntimeBuildError

__all__ = [
    "CACHE_ENV",
    "ROOTFS_MARKER",
    "RootfsError",
    "artifact_dir",
    "cache_dir",
    "copy_tree",
    "locked",
    "rootfs_key",
    "runtime_rootfs",
    "store_artifact",
]

#: The organiser's setting: where runtime file systems and build artifacts are cached.
CACHE_ENV = "KRYT_SANDBOX_CACHE_DIR"
#: Written last into a finished copy (a copy without it is one that died half-way).
ROOTFS_MARKER = ".kryt-rootfs"
#: Seconds ``docker export`` of one runtime image may take.
EXPORT_SECONDS = 900
#: Where the bwrap backend mounts over the (read-only) copy: they must exist in it.
MOUNT_POINTS = ("bot", "src", "artifact", "run/kryt", "tmp", "proc", "dev")
#: What an image's tar may hold; anything else (devices, FIFOs) is left out.
_KEPT_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE)


class RootfsError(ImageBuildError):
    """A runtime's file system cannot be made on this host (no image, no engine, no disk)."""


def cache_dir() -> Path:
    """The cache of runtime file systems and build artifacts (0711, ours)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        base = Path(configured)
    elif os.geteuid() == 0:
        base = Path("/var/cache/kryt-sandbox")
    else:
        parent = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = Path(parent) / "kryt-sandbox"
    try:
        base.mkdir(mode=0o711, parents=True, exist_ok=True)
        info = os.lstat(base)
    except OSError as exc:
        raise RootfsError(f"cannot create the sandbox cache {str(base)!r}: {exc}") from exc
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise RootfsError(f"sandbox cache {str(base)!r} is not a directory owned by us")
    os.chmod(base, 0o711)
    return base


@contextlib.contextmanager
def locked(path: Path, *, remove: bool = False) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created if missing), across processes.

    ``remove``: delete ``path`` before the lock is released, so no empty lock file is left
    per build. Safe with waiters: a waiter that then gets the lock on the deleted file sees
    that ``path`` no longer names the file it locked, and locks ``path`` anew; whoever holds
    the lock on the file ``path`` names holds the lock.
    """
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            stale = remove and not _names(path, fd)
        except BaseException:
            os.close(fd)
            raise
        if not stale:
            break
        os.close(fd)  # its holder removed it meanwhile: lock the file path names now
    try:
        yield
    finally:
        try:
            if remove:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        finally:
            os.close(fd)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` is the file open as ``fd`` (not deleted, nor replaced)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def rootfs_key(runtime: Runtime) -> str:
    """The cache key of ``runtime``'s file system: the tag (a hash of its inputs) of its image."""
    from sandbox.runtimes.images import image_tag

    return image_tag(runtime.name).rsplit(":", 1)[-1]


def runtime_rootfs(runtime: Runtime) -> Path:
    """The read-only copy of ``runtime``'s image file system, made on first use.

    Raises :class:`RootfsError` (an infrastructure error: never the bot's fault) naming the
    image and the command that builds it when the copy cannot be made.
    """
    if runtime.name == "python":
        raise ValueError("the python runtime runs on the host's interpreter under bwrap")
    from sandbox.runtimes.images import image_tag

    tag = image_tag(runtime.name)
    root = cache_dir() / "rootfs"
    root.mkdir(mode=0o711, exist_ok=True)
    os.chmod(root, 0o711)
    final = root / f"{runtime.name}-{rootfs_key(runtime)}"
    if (final / ROOTFS_MARKER).is_file():
        return final
    with locked(root / f".{final.name}.lock"):
        if (final / ROOTFS_MARKER).is_file():
            return final
        if final.exists():
            shutil.rmtree(final)  # a copy that died half-way
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
        try:
            _export(tag, tmp, runtime)
            for point in MOUNT_POINTS:
                (tmp / point).mkdir(mode=0o755, parents=True, exist_ok=True)
            (tmp / ROOTFS_MARKER).write_text(tag + "\n")
            os.chmod(tmp, 0o755)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _export(tag: str, dest: Path, runtime: Runtime) -> None:
    """Unpack the file system of image ``tag`` into ``dest`` (safely, see :func:`_member`)."""
    from sandbox.base_image import BaseImageError, docker_cli, image_exists

    hint = f"build it with `python -m sandbox.runtimes build {runtime.name}`"
    try:
        docker = docker_cli()
        if not image_exists(tag):
            raise RootfsError(
                f"the {runtime.name} runtime's image {tag} is missing, so bwrap has no file "
                f"system to run {runtime.name} bots in: {hint}"
            )
    except (BaseImageError, OSError) as exc:
        raise RootfsError(
            f"cannot make the {runtime.name} runtime's file system for bwrap from {tag}: {exc}"
        ) from exc
    created = subprocess.run(
        [docker, "create", "--network", "none", tag, "/bin/true"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if created.returncode != 0:
        raise RootfsError(f"docker create {tag} failed: {created.stderr.strip()[-1000:]}")
    container = created.stdout.strip()
    try:
        proc = subprocess.Popen(
            [docker, "export", container], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stderr is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                for member in tar:
                    kept = _member(member, str(dest))
                    if kept is not None:
                        tar.extract(kept, dest, filter="fully_trusted", numeric_owner=True)
            proc.stdout.close()
            error = proc.stderr.read().decode(errors="replace")
            if proc.wait(timeout=EXPORT_SECONDS) != 0:
                raise RootfsError(f"docker export of {tag} failed: {error.strip()[-1000:]}")
        except (tarfile.TarError, OSError, KeyError) as exc:
            # KeyError: tarfile's words for a hard link to a member the stream did not hold.
            raise RootfsError(f"cannot unpack the file system of {tag}: {exc}") from exc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        subprocess.run(
            [docker, "rm", "-f", container], capture_output=True, check=False, timeout=120
        )


def _member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """``member`` made safe to unpack as root, or None to leave it out.

    :func:`tarfile.tar_filter` refuses absolute names and ``..`` and clears setuid/setgid and
    group/other write bits (no sandbox uid may change a file, no program gains privileges);
    it does not check link targets, so a hard link leaving ``dest`` (absolute, ``..``, or
    through a symlink already unpacked) is refused here: unpacking it would link, chmod and
    chown a host file. On top, only files, directories and links are kept, owned by root.
    Symlinks may point anywhere: they are resolved inside the sandbox, never here.
    """
    if member.type not in _KEPT_TYPES:
        return None
    try:
        safe = tarfile.tar_filter(member, dest)
    except tarfile.FilterError as exc:
        raise RootfsError(f"unsafe member in the image's file system: {exc}") from exc
    if safe.islnk():
        root = os.path.realpath(dest)
        target = os.path.realpath(os.path.join(dest, safe.linkname))
        if os.path.isabs(safe.linkname) or os.path.commonpath([root, target]) != root:
            raise RootfsError(
                f"unsafe member in the image's file system: {safe.name!r} is a hard link to"
                f" {safe.linkname!r}, outside the copy"
            )
    return safe.replace(uid=0, gid=0, uname="root", gname="root", deep=False)


def artifact_dir(runtime: Runtime, submission_sha: str) -> Path:
    """Where the build artifact of ``submission_sha`` on ``runtime``'s current image lives
    (it may not exist yet: the bwrap backend builds it)."""
    root = cache_dir() / "artifacts"
    root.mkdir(mode=0o700, exist_ok=True)
    return root / f"{runtime.name}-{rootfs_key(runtime)}-{submission_sha[:32]}"


def copy_tree(src: Path, dest: Path) -> int:
    """Copy the tree at ``src`` (written by an untrusted build) into ``dest`` (created if
    missing; it may be an empty mount point).

    Only directories, regular files and symlinks (kept as links: they resolve inside the
    sandbox) are copied, world-readable and owned by us; anything else is an error. Returns
    the number of entries copied. Raises :class:`RuntimeBuildError` for anything else (a
    FIFO the build made).
    """
    count = 0
    dest.mkdir(mode=0o755, exist_ok=True)
    todo = [Path(".")]
    while todo:
        rel = todo.pop()
        with os.scandir(src / rel) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            source, target = src / rel / name, dest / rel / name
            info = os.lstat(source)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(source), target)
            elif stat.S_ISDIR(info.st_mode):
                target.mkdir(mode=0o755)
                todo.append(rel / name)
            elif stat.S_ISREG(info.st_mode):
                shutil.copyfile(source, target, follow_symlinks=False)
                os.chmod(target, 0o755 if info.st_mode & 0o111 else 0o644)
            else:
                raise RuntimeBuildError(
                    f"the build left {(rel / name).as_posix()!r}, which is neither a file,"
                    " a directory nor a link"
                )
            count += 1
    return count


def store_artifact(built: Path, final: Path) -> Path:
    """Copy a finished build's output ``built`` to ``final`` atomically; return ``final``."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        shutil.rmtree(tmp)
        copy_tree(built, tmp)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
