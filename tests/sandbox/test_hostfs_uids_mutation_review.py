"""What ``sandbox/hostfs.py`` and ``sandbox/uids.py`` promise, checked against the kernel.

A mutation review of both modules (the tmpfs mounts of bots' socket, code and runtime
directories; the removal of any tree a hostile bot can build; the uid each running bot gets
of its own) found many changes the existing tests let live: they mount one tmpfs and delete
one deep tree as root, and lease uids from a pool whose leftover process runs with the same
uid and gid. These tests pin down, without starting a sandbox:

- every tmpfs a bot gets: its size and inode caps, owner, mode and ``nosuid,nodev,noexec``
  flags, read from ``statvfs`` (what the kernel enforces), before and after a read-only
  remount; failures naming the path;
- :func:`~sandbox.hostfs.unmount` and :func:`~sandbox.hostfs.mounts_under`: lazy detach,
  no symlink followed, escaped names, deepest first, no sibling directory's mount;
- :func:`~sandbox.hostfs.remove_tree`: a symlink (at the top, or swapped in for a directory
  mid-walk) is never followed out of the tree, entries another cleaner removed are skipped,
  errors name the path and depth and leak no descriptor, and (as a non-root user) directories
  a bot chmod-ed are still removed while a foreign one fails instead of looping;
- :mod:`sandbox.uids`: a uid is not handed out while any process runs with it as its real,
  effective or saved uid or gid; a lease is released even where a forked child kept the
  descriptor; the range's bounds (never uid 0, never ``(uid_t)-1``), the lock directory's
  and lock files' checks, and ``KRYT_SANDBOX_UIDS`` validation.

Everything runs as root (mounts, ``chattr``, other uids); it is skipped otherwise, and
required under CI. Every mount, immutable flag and process is undone by the ``guard``
fixture, whatever happens.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sandbox import hostfs, uids
from sandbox.errors import CleanupError, SandboxInfrastructureError
from sandbox.hostfs import mount_tmpfs, mounts_under, remount_read_only, remove_tree, unmount
from sandbox.uids import DEFAULT_COUNT, DEFAULT_FIRST_UID, UIDS_ENV, UidPool, default_pool
from tests.services import require

pytestmark = pytest.mark.timeout(120)

BOT = 2_000_001_000
"""A uid (and gid) of no one else on the machine: the 'bot' of these tests."""
OTHER = 2_000_001_001
"""Another unused id, for the roles a process does not hold :data:`BOT` in."""
_MNT_DETACH = 0x2
_MUST = os.ST_NOSUID | os.ST_NODEV


# --- fixtures and helpers -----------------------------------------------------------------


def _points_below(top: Path) -> list[str]:
    """Mount points at or below ``top``, read here (not with the code under test)."""
    base = os.path.realpath(top)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split(" ")[4])
            if point == base or point.startswith(base + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


@dataclass
class Guard:
    """What a test made that must be undone: processes, immutable files (mounts below
    ``top`` are found and detached anyway)."""

    top: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    immutable: list[Path] = field(default_factory=list)

    def make_immutable(self, path: Path) -> None:
        """``chattr +i path`` (undone by the fixture)."""
        self.immutable.append(path)
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        require(done.returncode == 0, "chattr +i", done.stderr.strip() or "refused")


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[Guard]:
    """Root only (fails under CI otherwise); undoes every mount below ``tmp_path``, every
    immutable flag and every process the test made, even when it fails."""
    require(os.geteuid() == 0, "root", "mounts, chattr and other uids need root")
    require(shutil.which("chattr") is not None, "chattr", "e2fsprogs is not installed")
    made = Guard(tmp_path)
    try:
        yield made
    finally:
        for proc in made.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=60)
        for path in made.immutable:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
        libc = ctypes.CDLL(None, use_errno=True)
        for _ in range(10):
            points = _points_below(tmp_path)
            if not points:
                break
            for point in points:
                libc.umount2(os.fsencode(point), _MNT_DETACH)
        assert _points_below(tmp_path) == []


def _mounted(path: Path) -> bool:
    return os.path.realpath(path) in _points_below(path)


def _flags(path: Path) -> int:
    return os.statvfs(path).f_flag & (_MUST | os.ST_NOEXEC | os.ST_RDONLY)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _done(action: Callable[[Path], None], path: Path) -> str:
    action(path)
    return "done"


def _as_user(uid: int, cwd: Path, action: Callable[[], str], deadline: float = 60.0) -> str:
    """``action()`` in a forked child running as ``uid:uid`` without groups, in ``cwd``:
    ``"ok: <result>"``, ``"error: <type>: <message>"``, or ``"timeout"`` (child killed)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            os.chdir(cwd)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            try:
                out = "ok: " + action()
            except Exception as exc:
                out = f"error: {type(exc).__name__}: {exc}"
            os.write(write_end, out.encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    chunks: list[bytes] = []
    try:
        end = time.monotonic() + deadline
        while True:
            left = end - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                return "timeout"
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                data = os.read(read_end, 65536)
                if not data:
                    break
                chunks.append(data)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    return b"".join(chunks).decode()


# --- tmpfs mounts ---------------------------------------------------------------------------


def test_a_socket_tmpfs_has_its_caps_owner_mode_and_flags(guard: Guard) -> None:
    """prepare_socket_dir's call: 64 KiB, 16 inodes, the bot's uid and gid, mode 0700,
    ``nosuid,nodev,noexec``; nothing past the cap is written, nothing there runs."""
    sock = guard.top / "sock"
    sock.mkdir()
    mount_tmpfs(sock, size_bytes=64 * 1024, inodes=16, uid=BOT, gid=OTHER)
    fs = os.statvfs(sock)
    assert (fs.f_blocks * fs.f_frsize, fs.f_files) == (64 * 1024, 16)
    assert _flags(sock) == _MUST | os.ST_NOEXEC
    info = os.stat(sock)
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o700, BOT, OTHER)
    program = sock / "true"
    shutil.copyfile("/bin/true", program)
    program.chmod(0o755)
    with pytest.raises(PermissionError):
        subprocess.run([str(program)], check=False)
    program.unlink()
    with pytest.raises(OSError) as full, open(sock / "big", "wb") as handle:
        handle.write(b"x" * (64 * 1024 + 4096))
        handle.flush()
    assert full.value.errno == errno.ENOSPC


def test_an_executable_tmpfs_stays_nosuid_nodev_and_read_only_after_remount(
    guard: Guard,
) -> None:
    """The code and runtime tmpfs: executable, but never suid or device nodes, before and
    after :func:`remount_read_only` (which keeps its caps and contents)."""
    code = guard.top / "code"
    code.mkdir()
    mount_tmpfs(code, size_bytes=1 << 20, inodes=64, uid=0, gid=0, mode=0o755, executable=True)
    assert _flags(code) == _MUST
    assert stat.S_IMODE(os.stat(code).st_mode) == 0o755
    (code / "bot.py").write_text("print(1)\n")
    remount_read_only(code, executable=True)
    assert _flags(code) == _MUST | os.ST_RDONLY
    fs = os.statvfs(code)
    assert (fs.f_blocks * fs.f_frsize, fs.f_files) == (1 << 20, 64)
    assert (code / "bot.py").read_text() == "print(1)\n"
    with pytest.raises(OSError) as caught:
        (code / "new").write_text("x")
    assert caught.value.errno == errno.EROFS


def test_a_read_only_remount_keeps_noexec(guard: Guard) -> None:
    """Remounting without the old flags would silently clear ``nosuid,nodev,noexec``."""
    plain = guard.top / "plain"
    plain.mkdir()
    mount_tmpfs(plain, size_bytes=64 * 1024, inodes=16, uid=0, gid=0)
    (plain / "f").write_text("kept")
    remount_read_only(plain)
    assert _flags(plain) == _MUST | os.ST_NOEXEC | os.ST_RDONLY
    assert (plain / "f").read_text() == "kept"
    with pytest.raises(OSError) as caught:
        (plain / "f").write_text("changed")
    assert caught.value.errno == errno.EROFS


def test_mount_and_remount_failures_are_raised_and_name_the_path(guard: Guard) -> None:
    missing = guard.top / "no such dir"
    with pytest.raises(OSError) as mounting:
        mount_tmpfs(missing, size_bytes=4096, inodes=4, uid=0, gid=0)
    assert mounting.value.errno == errno.ENOENT
    assert repr(str(missing)) in str(mounting.value)
    with pytest.raises(OSError) as remounting:
        remount_read_only(missing)
    assert remounting.value.errno == errno.ENOENT
    assert repr(str(missing)) in str(remounting.value)


@pytest.mark.parametrize(("size", "inodes"), [(0, 4), (4096, 0), (-1, 4)])
def test_a_tmpfs_without_a_positive_bound_is_refused_before_mounting(
    tmp_path: Path, size: int, inodes: int
) -> None:
    """``size=0`` or ``nr_inodes=0`` is an unlimited tmpfs to the kernel: never a bound."""
    target = tmp_path / "mnt"
    target.mkdir()
    with pytest.raises(ValueError, match="positive size and inode count"):
        mount_tmpfs(target, size_bytes=size, inodes=inodes, uid=0, gid=0)
    assert mounts_under(tmp_path) == []


# --- unmount and mounts_under -------------------------------------------------------------


def test_unmount_is_lazy_never_follows_a_symlink_and_reports_a_refusal(guard: Guard) -> None:
    top = guard.top
    (top / "plain").mkdir()
    unmount(top / "plain")  # not a mount point: nothing to do
    unmount(top / "missing")
    busy = top / "busy"
    busy.mkdir()
    mount_tmpfs(busy, size_bytes=64 * 1024, inodes=16, uid=0, gid=0)
    (busy / "held").write_text("still readable")
    (top / "link").symlink_to(busy)
    unmount(top / "link")  # the link is no mount point; its target stays mounted
    assert _mounted(busy)
    with open(busy / "held") as handle:  # a live process keeps a file open in it
        unmount(busy)
        assert not _mounted(busy)
        assert handle.read() == "still readable"
    user = top / "user"
    user.mkdir()
    os.chown(user, BOT, BOT)
    theirs = user / "m"
    theirs.mkdir()
    mount_tmpfs(theirs, size_bytes=4096, inodes=4, uid=0, gid=0)
    result = _as_user(BOT, user, lambda: _done(unmount, Path("m")))
    assert result.startswith("error: CleanupError: could not unmount 'm'"), result
    assert _mounted(theirs)


def test_mounts_under_reads_escaped_names_deepest_first_and_skips_a_sibling(
    guard: Guard,
) -> None:
    work = guard.top / "work"
    names = ["a b", "tab\there", "new\nline", "back\\slash", "nest", "nest/inner"]
    for name in [*names, "../work-2"]:
        (work / name).mkdir(parents=True)
        mount_tmpfs(work / name, size_bytes=4096, inodes=4, uid=0, gid=0)
        (work / name / "f").write_text(name)
    found = mounts_under(work)
    assert sorted(map(str, found)) == sorted(str(work / name) for name in names)
    assert found.index(work / "nest/inner") < found.index(work / "nest")
    remove_tree(work)
    assert not os.path.lexists(work)
    sibling = guard.top / "work-2"  # "…/work" is a prefix of its name, not its parent
    assert _mounted(sibling) and (sibling / "f").read_text() == "../work-2"


def test_remove_tree_of_a_mount_point_itself(guard: Guard) -> None:
    """A stager that died half-way leaves ``libfs-<key>`` mounted: remove_tree on it."""
    staged = guard.top / "libfs-0123"
    staged.mkdir()
    mount_tmpfs(staged, size_bytes=64 * 1024, inodes=16, uid=0, gid=0, mode=0o755)
    (staged / "half").mkdir()
    (staged / "half" / "copied").write_text("x")
    remove_tree(staged)
    assert not os.path.lexists(staged)
    assert _points_below(guard.top) == []


def test_remove_tree_through_a_symlinked_parent_detaches_the_mounts(guard: Guard) -> None:
    """mountinfo shows the real path: the runtime directory may be reached through a link."""
    real = guard.top / "real"
    (real / "work" / "sock").mkdir(parents=True)
    mount_tmpfs(real / "work" / "sock", size_bytes=4096, inodes=4, uid=0, gid=0)
    (guard.top / "link").symlink_to(real)
    remove_tree(guard.top / "link" / "work")
    assert not os.path.lexists(real / "work")
    assert _points_below(guard.top) == []


# --- remove_tree never follows a symlink out of the tree ----------------------------------


def _precious(top: Path) -> Path:
    """A directory outside the tree, with a mount and a file, that must survive."""
    outside = top / "outside"
    (outside / "sock").mkdir(parents=True)
    mount_tmpfs(outside / "sock", size_bytes=4096, inodes=4, uid=0, gid=0)
    (outside / "sock" / "f").write_text("mounted")
    (outside / "precious").write_text("keep")
    return outside


def _intact(outside: Path) -> bool:
    return (
        (outside / "precious").read_text() == "keep"
        and _mounted(outside / "sock")
        and (outside / "sock" / "f").read_text() == "mounted"
    )


def test_remove_tree_of_a_symlink_removes_only_the_link(guard: Guard) -> None:
    outside = _precious(guard.top)
    (guard.top / "dirlink").symlink_to(outside)
    (guard.top / "filelink").symlink_to(outside / "precious")
    remove_tree(guard.top / "dirlink")
    remove_tree(guard.top / "filelink")
    assert not os.path.lexists(guard.top / "dirlink")
    assert not os.path.lexists(guard.top / "filelink")
    assert _intact(outside)


def test_remove_tree_never_follows_a_directory_a_bot_swaps_for_a_symlink(
    guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bot still running may swap a directory for a link between the scan that found it
    and the walk into it (simulated at that exact point), below the top or the top itself."""
    top = guard.top
    outside = _precious(top)
    tree = top / "tree"
    (tree / "victim" / "deeper").mkdir(parents=True)
    (tree / "victim" / "deeper" / "file").write_text("x")
    scan = hostfs._clear_one_level

    def swapping(fd: int, device: int) -> str | None:
        child = scan(fd, device)
        if child == "victim" and not (tree / "victim").is_symlink():
            (tree / "victim").rename(top / "moved")
            (tree / "victim").symlink_to(outside)
        return child

    monkeypatch.setattr(hostfs, "_clear_one_level", swapping)
    try:
        remove_tree(tree)
    except CleanupError as exc:
        assert repr(str(tree)) in str(exc)
    assert _intact(outside)
    monkeypatch.undo()

    top_tree = top / "top-tree"
    top_tree.mkdir()
    found = hostfs.mounts_under

    def swapping_top(path: Path) -> list[Path]:
        points = found(path)
        top_tree.rename(top / "moved-top")
        top_tree.symlink_to(outside)
        return points

    monkeypatch.setattr(hostfs, "mounts_under", swapping_top)
    with pytest.raises(CleanupError, match=re.escape(repr(str(top_tree)))):
        remove_tree(top_tree)
    assert _intact(outside)


def test_remove_tree_never_empties_a_mount_it_did_not_detach(
    guard: Guard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mount made after the mount table was read (or one it missed) is refused, its
    contents left alone, and the error names the tree being removed."""
    tree = guard.top / "tree"
    sock = tree / "a" / "sock"
    sock.mkdir(parents=True)
    mount_tmpfs(sock, size_bytes=4096, inodes=4, uid=0, gid=0)
    (sock / "f").write_text("theirs")
    monkeypatch.setattr(hostfs, "mounts_under", lambda path: [])
    with pytest.raises(CleanupError, match=re.escape(repr(str(tree)))):
        remove_tree(tree)
    assert _mounted(sock) and (sock / "f").read_text() == "theirs"


def test_remove_tree_skips_entries_another_cleaner_removed(tmp_path: Path) -> None:
    """The reaper and a runner may both clean one directory: an entry gone meanwhile is
    not an error."""
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    for name in "abc":
        (tree / "d" / name).write_text(name)
    real_unlink = os.unlink

    def racing(path: str | Path, *, dir_fd: int | None = None) -> None:
        if path == "b":
            real_unlink(path, dir_fd=dir_fd)  # the other cleaner got there first
        real_unlink(path, dir_fd=dir_fd)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "unlink", racing)
        remove_tree(tree)
    assert not os.path.lexists(tree)


def test_remove_tree_errors_name_the_path_and_depth_and_leak_no_descriptor(
    guard: Guard,
) -> None:
    tree = guard.top / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    stuck = tree / "a" / "b" / "stuck"
    stuck.write_text("x")
    guard.make_immutable(stuck)
    before = _open_fds()
    with pytest.raises(CleanupError) as caught:
        remove_tree(tree)
    message = str(caught.value)
    assert repr(str(tree)) in message and "at depth 2 ('b')" in message, message
    assert _open_fds() == before
    lone = guard.top / "lone"
    lone.write_text("x")
    guard.make_immutable(lone)
    with pytest.raises(CleanupError, match=re.escape(repr(str(lone)))):
        remove_tree(lone)
    below_a_file = lone / "x"
    with pytest.raises(CleanupError, match=re.escape(repr(str(below_a_file)))):
        remove_tree(below_a_file)  # lstat fails with ENOTDIR, not "missing"
    subprocess.run(["chattr", "-i", str(stuck), str(lone)], check=True)
    remove_tree(tree)
    assert not os.path.lexists(tree)


# --- remove_tree as a user (trusted bots under a non-root referee) ------------------------


def _user_dir(guard: Guard) -> Path:
    home = guard.top / "home"
    home.mkdir()
    os.chown(home, BOT, BOT)
    return home


def _tree_with_modes(modes: list[int]) -> str:
    """In the current directory: ``t/m<mode>/{f, sub/g}``, each ``m<mode>`` chmod-ed."""
    for mode in modes:
        (Path("t") / f"m{mode:o}" / "sub").mkdir(parents=True)
        (Path("t") / f"m{mode:o}" / "f").write_text("x")
        (Path("t") / f"m{mode:o}" / "sub" / "g").write_text("x")
        (Path("t") / f"m{mode:o}").chmod(mode)
    remove_tree(Path("t"))
    return "removed" if not os.path.lexists("t") else "left"


def test_remove_tree_as_a_user_opens_directories_a_bot_chmod_ed(guard: Guard) -> None:
    home = _user_dir(guard)
    result = _as_user(BOT, home, lambda: _tree_with_modes([0o000, 0o100, 0o200, 0o300]))
    assert result == "ok: removed"


def test_remove_tree_as_a_user_fails_on_a_foreign_directory_instead_of_looping(
    guard: Guard,
) -> None:
    home = _user_dir(guard)
    foreign = home / "t" / "foreign"
    foreign.mkdir(parents=True)
    os.chown(home / "t", BOT, BOT)
    (foreign / "f").write_text("x")
    foreign.chmod(0)
    result = _as_user(BOT, home, lambda: _done(remove_tree, Path("t")))
    assert result.startswith("error: CleanupError: could not remove 't'"), result


def test_remove_tree_as_a_user_removes_directories_without_write_permission(
    guard: Guard,
) -> None:
    home = _user_dir(guard)
    result = _as_user(BOT, home, lambda: _tree_with_modes([0o500, 0o400, 0o600]))
    assert result == "ok: removed"


# --- uids: never handed out while in use ----------------------------------------------------

_HOLD_IDS = """
import os, sys
ruid, euid, suid, rgid, egid, sgid = (int(a) for a in sys.argv[1:])
os.setgroups([])
os.setresgid(rgid, egid, sgid)
os.setresuid(ruid, euid, suid)
print("ready", flush=True)
os.read(0, 1)
"""


def _hold_ids(guard: Guard, ids: list[int]) -> None:
    """A process running with real/effective/saved uid, then real/effective/saved gid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_IDS, *map(str, ids)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    guard.procs.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"


@pytest.mark.parametrize("role", range(6), ids=["ruid", "euid", "suid", "rgid", "egid", "sgid"])
def test_a_uid_any_process_holds_in_any_role_is_not_handed_out(guard: Guard, role: int) -> None:
    """A process that can switch back to the uid or keeps its gid (a bot's leftover that
    called setresuid/setresgid) is still that bot's: the uid stays out of the pool."""
    held = 2_000_001_100 + 10 * role
    ids = [OTHER] * 6
    ids[role] = held
    _hold_ids(guard, ids)
    assert held in uids.ids_in_use()
    lease = UidPool(held, 2, guard.top / "uids").lease()
    try:
        assert lease.uid == held + 1
    finally:
        lease.release()


def test_a_process_gone_during_the_scan_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/<pid>/status of a process that exits meanwhile is missing: not an error."""
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: ["999999999", *listdir(path)])
    found = uids.ids_in_use()
    monkeypatch.undo()
    assert os.getuid() in found


def test_a_full_pool_says_why_and_leaks_no_descriptor(guard: Guard) -> None:
    first = 2_000_001_200
    _hold_ids(guard, [first] * 3 + [OTHER] * 3)
    held = UidPool(first, 2, guard.top / "uids").lease()  # first + 1, in another pool
    try:
        pool = UidPool(first, 2, guard.top / "uids")
        before = _open_fds()
        with pytest.raises(SandboxInfrastructureError) as caught:
            pool.lease()
        assert _open_fds() == before
        assert str(caught.value) == (
            f"no free sandbox uid: all 2 of uids {first}-{first + 1} are in use"
            f" (1 by leftover processes); raise the range with {UIDS_ENV}=FIRST-LAST"
        )
    finally:
        held.release()


def test_a_lease_is_released_though_a_forked_child_kept_its_descriptor(tmp_path: Path) -> None:
    first = 2_000_001_300
    lease = UidPool(first, 1, tmp_path / "uids").lease()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # a child that forked without exec holds a copy of the lock descriptor
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    try:
        lease.release()
        again = UidPool(first, 1, tmp_path / "uids").lease()
        assert again.uid == first
        again.release()
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)


def test_two_pools_on_one_lock_directory_never_share_a_uid(tmp_path: Path) -> None:
    first = 2_000_001_400
    one = UidPool(first, 3, tmp_path / "uids").lease()
    two = UidPool(first, 3, tmp_path / "uids").lease()
    try:
        assert (one.uid, two.uid) == (first, first + 1)
    finally:
        one.release()
        two.release()


# --- uids: the range, the lock directory and lock files -----------------------------------


def test_the_pool_range_bounds() -> None:
    """Never uid 0 (root) nor 4294967295 (``(uid_t)-1``: "leave unchanged" to setresuid)."""
    for first, count in [(0, 1), (0, 5), (5, 0), (5, -1), (0xFFFF_FFFF, 1), (0xFFFF_FFFD, 3)]:
        with pytest.raises(ValueError, match="bad sandbox uid range"):
            UidPool(first, count)
    assert UidPool(1, 1).last == 1
    top = UidPool(0xFFFF_FFFD, 2)
    assert (top.last, top.describe()) == (0xFFFF_FFFE, "uids 4294967293-4294967294")
    pool = UidPool(7, 3)
    assert (pool.last, pool.describe()) == (9, "uids 7-9")
    assert [uid in pool for uid in (6, 7, 8, 9, 10)] == [False, True, True, True, False]
    assert "7" not in pool and 7.0 not in pool


def test_the_lock_directory_is_private_and_really_ours(guard: Guard) -> None:
    fresh = guard.top / "fresh" / "uids"
    assert UidPool(BOT, 1, fresh).lock_dir() == fresh
    assert stat.S_IMODE(os.lstat(fresh).st_mode) == 0o700
    theirs = guard.top / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, BOT, BOT)  # whoever owns it could replace a locked file
    with pytest.raises(SandboxInfrastructureError, match=re.escape(repr(str(theirs)))):
        UidPool(BOT, 1, theirs).lease()
    link = guard.top / "link"
    link.symlink_to(fresh)
    with pytest.raises(SandboxInfrastructureError, match=re.escape(repr(str(link)))):
        UidPool(BOT, 1, link).lease()
    (guard.top / "file").write_text("x")
    below_a_file = guard.top / "file" / "uids"
    with pytest.raises(SandboxInfrastructureError, match=re.escape(repr(str(below_a_file)))):
        UidPool(BOT, 1, below_a_file).lease()


def test_a_lock_file_is_private_and_a_planted_link_is_refused(tmp_path: Path) -> None:
    first = 2_000_001_500
    lock_dir = tmp_path / "uids"
    lease = UidPool(first, 1, lock_dir).lease()
    lease.release()
    assert stat.S_IMODE(os.lstat(lock_dir / f"{first}.lock").st_mode) == 0o600
    target = tmp_path / "elsewhere"
    (lock_dir / f"{first + 1}.lock").symlink_to(target)
    pool = UidPool(first + 1, 2, lock_dir)
    with pytest.raises(SandboxInfrastructureError, match=f"cannot lease sandbox uid {first + 1}"):
        pool.lease()
    assert not os.path.lexists(target)


# --- KRYT_SANDBOX_UIDS ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "first", "count"),
    [("5-5", 5, 1), (" 7 - 9 ", 7, 3), ("4294967294-4294967294", 0xFFFF_FFFE, 1)],
)
def test_a_good_range_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str, first: int, count: int
) -> None:
    monkeypatch.setenv(UIDS_ENV, setting)
    pool = default_pool()
    assert (pool.first, pool.count) == (first, count)


@pytest.mark.parametrize(
    "setting",
    ["5-10x", "x5-10", "5", "5-", "-5-10", "+5-10", "5-10-20", "10-5", "0-10", "0-0"],
)
def test_a_malformed_range_setting_is_refused_and_named(
    monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(UIDS_ENV, setting)
    with pytest.raises(SandboxInfrastructureError, match=re.escape(f"{UIDS_ENV}=")) as caught:
        default_pool()
    assert repr(setting.strip()) in str(caught.value)


@pytest.mark.parametrize("setting", ["4294967295-4294967295", "1-99999999999", "7-4294967295"])
def test_a_range_past_the_last_uid_is_refused(
    monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(UIDS_ENV, setting)
    with pytest.raises(SandboxInfrastructureError, match=UIDS_ENV):
        default_pool()


def test_a_blank_or_removed_setting_means_the_default_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(UIDS_ENV, "7-9")
    assert default_pool().first == 7
    for blank in ("   ", ""):
        monkeypatch.setenv(UIDS_ENV, blank)
        assert (default_pool().first, default_pool().count) == (DEFAULT_FIRST_UID, DEFAULT_COUNT)
    monkeypatch.setenv(UIDS_ENV, "7-9")
    assert default_pool().first == 7
    monkeypatch.delenv(UIDS_ENV)
    assert (default_pool().first, default_pool().count) == (DEFAULT_FIRST_UID, DEFAULT_COUNT)


def test_remove_tree_tolerates_another_cleaner_in_the_same_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sweeps (or the reaper and a sweep) may remove one dead runner's directory at
    once; the comment in ``_clear_one_level`` says entries may vanish meanwhile. Simulated
    at one exact point: the other cleaner removes the emptied directory this one is in."""
    tree = tmp_path / "tree"
    inner = tree / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "f").write_text("x")
    scan = hostfs._clear_one_level

    def racing(fd: int, device: int) -> str | None:
        child = scan(fd, device)
        if child is None and inner.exists() and os.path.samestat(os.fstat(fd), os.stat(inner)):
            inner.rmdir()  # the other cleaner got there first
        return child

    monkeypatch.setattr(hostfs, "_clear_one_level", racing)
    remove_tree(tree)
    assert not os.path.lexists(tree)
