"""Every running bot has a uid of its own (sandbox.uids): per-uid kernel quotas are not
shared, leases are unique across processes, released on stop and reused."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.backend import Backend
from sandbox.errors import SandboxInfrastructureError
from sandbox.uids import MACHINE_LOCK_DIR, UidPool, default_pool
from tests.sandbox.conftest import MakeBot, roomy
from tests.sandbox.test_hostile import report, stop_and_check_clean

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]


def _locked(pool: UidPool, uid: int) -> bool:
    """Whether some process holds ``uid``'s lease (its lock file is locked)."""
    fd = os.open(pool.lock_dir() / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing our own description drops a lock we took
    return False


def test_two_running_bots_have_uids_of_their_own(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    folder = make_bot("healthy")
    first = sandbox_backend.start(folder, roomy(), "test-uid-a")
    try:
        second = sandbox_backend.start(folder, roomy(), "test-uid-b")
        try:
            uids = [report(first)["uid"], report(second)["uid"]]
            assert uids[0] != uids[1]
            assert all(uid in default_pool() and uid != 0 for uid in uids), uids
            assert _locked(default_pool(), uids[0]) and _locked(default_pool(), uids[1])
        finally:
            stop_and_check_clean(second)
        # Released on stop (once its processes are gone); the other one is still held.
        assert not _locked(default_pool(), uids[1])
        assert _locked(default_pool(), uids[0])
    finally:
        stop_and_check_clean(first)
    assert not _locked(default_pool(), uids[0])


def test_no_bot_can_hold_inotify_instances_and_each_has_a_uid_of_its_own(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    """inotify instances are a per-uid quota (128 by default): a bot that took all of its
    uid's used to make every other bot's ``inotify_init`` fail ("Too many open files"). A
    uid per bot ended that; inotify is now refused outright (sandbox.seccomp), which also
    keeps a bot from watching the files every sandbox shares."""
    folder = make_bot("inotifyhog")
    calm = folder.parent / "calm"
    shutil.copytree(folder, calm)
    (folder / "hog.txt").write_text("1")
    (folder / "hog.txt").chmod(0o644)
    hog = sandbox_backend.start(folder, roomy(), "test-ino-hog")
    try:
        took = report(hog)
        assert took["held"] == 0 and took["stopped_by"] == os.strerror(errno.EPERM), took
        other = sandbox_backend.start(calm, roomy(), "test-ino-other")
        try:
            mine = report(other)
            assert mine["uid"] != took["uid"]
            assert mine["one_more"] == os.strerror(errno.EPERM), mine
        finally:
            stop_and_check_clean(other)
    finally:
        stop_and_check_clean(hog)


def test_a_released_uid_is_leased_again(tmp_path: Path) -> None:
    pool = UidPool(2_000_000_000, 1, tmp_path / "uids")
    lease = pool.lease()
    assert lease.uid == lease.gid == 2_000_000_000
    with pytest.raises(SandboxInfrastructureError, match="no free sandbox uid"):
        pool.lease()
    lease.release()
    lease.release()  # idempotent
    again = pool.lease()
    assert again.uid == 2_000_000_000
    again.release()


def test_a_uid_some_process_still_runs_as_is_not_handed_out(tmp_path: Path) -> None:
    """A bot whose processes outlived it (or a dead runner's container) keeps its uid out
    of the pool until they are gone."""
    if os.geteuid() != 0:
        pytest.skip("running a process as another uid needs root")
    first = 2_000_000_100
    leftover = subprocess.Popen(
        ["sleep", "300"], user=first, group=first, extra_groups=[], start_new_session=True
    )
    try:
        pool = UidPool(first, 2, tmp_path / "uids")
        lease = pool.lease()
        assert lease.uid == first + 1
        lease.release()
    finally:
        leftover.kill()
        leftover.wait()
    lease = pool.lease()
    assert lease.uid == first
    lease.release()


_HOLDER = """
import sys, time
from pathlib import Path
from sandbox.uids import UidPool
pool = UidPool(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
lease = pool.lease()
print(lease.uid, flush=True)
sys.stdin.read()  # hold it until the test closes our stdin
"""


def test_concurrent_leases_from_several_processes_never_share_a_uid(tmp_path: Path) -> None:
    first, count, lock_dir = 2_000_000_200, 6, tmp_path / "uids"
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(first), str(count), str(lock_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(count - 1)
    ]
    try:
        mine = UidPool(first, count, lock_dir).lease()
        uids = [mine.uid]
        for holder in holders:
            assert holder.stdout is not None
            uids.append(int(holder.stdout.readline()))
        assert sorted(uids) == list(range(first, first + count))
        with pytest.raises(SandboxInfrastructureError):
            UidPool(first, count, lock_dir).lease()
        # A holder that dies (kill -9) gives its uid back: the lock dies with it.
        victim = holders[0]
        victim.kill()
        victim.wait()
        mine.release()
        deadline = time.monotonic() + 60
        while True:
            try:
                lease = UidPool(first, count, lock_dir).lease()
                break
            except SandboxInfrastructureError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert lease.uid in uids
        lease.release()
    finally:
        for holder in holders:
            if holder.poll() is None:
                assert holder.stdin is not None
                holder.stdin.close()
                holder.wait(timeout=60)


def test_root_leases_from_one_directory_whatever_the_runtime_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runners given different runtime directories still never hand out one uid."""
    if os.geteuid() != 0:
        pytest.skip("the machine-wide lock directory is root's (others lease per user)")
    first = 2_000_000_300
    monkeypatch.setenv("KRYT_SANDBOX_RUNTIME_DIR", str(tmp_path / "one"))
    one = UidPool(first, 2)
    held = one.lease()
    try:
        monkeypatch.setenv("KRYT_SANDBOX_RUNTIME_DIR", str(tmp_path / "two"))
        other = UidPool(first, 2)
        assert other.lock_dir() == one.lock_dir() == MACHINE_LOCK_DIR
        second = other.lease()
        assert second.uid != held.uid
        second.release()
    finally:
        held.release()


def test_the_pool_range_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRYT_SANDBOX_UIDS", "3000000-3000009")
    pool = default_pool()
    assert (pool.first, pool.count, pool.last) == (3_000_000, 10, 3_000_009)
    assert 3_000_009 in pool and 3_000_010 not in pool
    monkeypatch.setenv("KRYT_SANDBOX_UIDS", "10-5")
    with pytest.raises(SandboxInfrastructureError, match="KRYT_SANDBOX_UIDS"):
        default_pool()
