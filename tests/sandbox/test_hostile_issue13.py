"""The attacks of issue 13, each as a hostile bot under Docker and bwrap.

Every test asserts the verdict for the hostile bot, that the host and other bots are
unaffected, and that nothing (process, container, mount, cgroup, directory) stays behind.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from sandbox.backend import Backend, RunningBot
from sandbox.errors import BotCrashedError, LimitsUnavailableError
from sandbox.hostfs import mounts_under
from sandbox.limits import MiB
from sandbox.supervisor import TOKEN_SUPERVISOR
from tests.sandbox.conftest import MakeBot, roomy
from tests.sandbox.procs import bot_processes, container_gone, survivors
from tests.sandbox.test_hostile import leftover_containers, report, wait_death

pytestmark = pytest.mark.timeout(300)


def _mount_line(path: Path) -> str | None:
    """The /proc/self/mountinfo line of the mount at ``path``, if it is a mount point."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if line.split(" ")[4] == str(path):
            return line
    return None


def _cgroup_dirs(bot: RunningBot) -> list[Path]:
    cgroup = getattr(bot, "cgroup", None)
    return [path for _, path in cgroup.dirs] if cgroup is not None else []


def stop_and_assert_gone(bot: RunningBot) -> None:
    """Stop the bot; no process, container, mount, cgroup or directory may remain."""
    processes = bot_processes(bot)
    cgroups = _cgroup_dirs(bot)
    bot.stop()
    assert container_gone(bot)
    deadline = time.monotonic() + 30  # a busy machine may reap them late
    while survivors(processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivors(processes) == []
    assert not bot.work_dir.exists()
    assert mounts_under(bot.work_dir) == []
    assert [path for path in cgroups if path.exists()] == []


def wait_for_output(bot: RunningBot, text: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        logs = bot.logs()
        if text in logs:
            return logs
        time.sleep(0.1)
    raise AssertionError(f"bot {bot.label} never wrote {text!r}: {bot.logs()[-500:]!r}")


def test_process_filler_cannot_starve_the_next_bot(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    limits = roomy(pids=32)
    filler = sandbox_backend.start(make_bot("nprocfill"), limits, "t13-nprocfill")
    try:
        logs = wait_for_output(filler, "children ", 60)
        assert "Resource temporarily unavailable" in logs
        assert len(bot_processes(filler)) <= limits.pids
        # The attack: with every process of the shared uid taken, the next sandbox could
        # not even be created. Now the filler only exhausts its own cgroup.
        victim = sandbox_backend.start(make_bot("healthy"), roomy(), "t13-victim")
        try:
            assert victim.alive()
            assert report(victim)["cwd"] == "/bot"
        finally:
            stop_and_assert_gone(victim)
        assert filler.alive()
    finally:
        stop_and_assert_gone(filler)


def _memory_peak(bot: RunningBot) -> int:
    container = getattr(bot, "container", None)
    if container is None:
        peak = bot.memory_peak()  # type: ignore[attr-defined]
        assert peak is not None, "bwrap runs untrusted bots in a memory cgroup"
        return int(peak)
    stats = container.stats(stream=False)
    return int(stats["memory_stats"]["max_usage"])


def test_memory_limit_holds_for_the_whole_process_tree(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    limits = roomy(memory_bytes=128 * MiB, address_space_slack_bytes=512 * MiB)
    bot = sandbox_backend.start(make_bot("memtree"), limits, "t13-memtree")
    try:
        try:
            endings = report(bot)["endings"]
        except grpc.RpcError:
            endings = None  # the OOM killer chose the main process: then it is dead
        peak = _memory_peak(bot) if bot.alive() else None
        if endings is None:
            # Its sandbox ends a moment after the main process died: wait for it.
            death = wait_death(bot, 60)
            assert death.cause.value == "out_of_memory", death
        else:
            # Four children of 100 MiB each cannot all fit in 128 MiB: some were killed
            # (signal 9) or got MemoryError (exit 3).
            assert sum(e in {"signal 9", "exit 3"} for e in endings) >= 2, endings
        if peak is not None:
            assert peak <= limits.memory_bytes, f"peak {peak / MiB:.0f} MiB"
    finally:
        stop_and_assert_gone(bot)


def test_dev_is_read_only_and_dev_shm_is_small(sandbox_backend: Backend, make_bot: MakeBot) -> None:
    limits = roomy(shm_bytes=1 * MiB)
    bot = sandbox_backend.start(make_bot("devfill"), limits, "t13-devfill")
    try:
        result = report(bot)
        assert result["dev_write"] != "ok"
        assert result["shm_written"] <= limits.shm_bytes
        assert result.get("shm_error") == "No space left on device"
        if sandbox_backend.name == "bwrap":
            nodes = {"null", "zero", "urandom", "random", "shm", "fd"}
            assert set(result["dev"]) <= nodes | {"stdin", "stdout", "stderr"}
    finally:
        stop_and_assert_gone(bot)


def test_socket_dir_is_a_small_tmpfs_and_leaves_nothing(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    limits = roomy()
    bot = sandbox_backend.start(make_bot("sockfill"), limits, "t13-sockfill")
    try:
        line = _mount_line(bot.sock_dir)
        assert line is not None and " - tmpfs " in line, line
        assert f"size={limits.socket_dir_bytes // 1024}k" in line
        result: dict[str, Any] = report(bot)
        depth, depth_error = result["depth"]
        files, files_error = result["files"]
        written, bytes_error = result["bytes"]
        assert depth < limits.socket_dir_inodes and depth_error == "No space left on device"
        assert files < limits.socket_dir_inodes and files_error == "No space left on device"
        assert written <= limits.socket_dir_bytes and bytes_error == "No space left on device"
        assert bot.alive()
    finally:
        stop_and_assert_gone(bot)


def test_escape_sequences_in_crash_output_are_made_visible(
    sandbox_backend: Backend, make_bot: MakeBot
) -> None:
    with pytest.raises(BotCrashedError) as caught:
        sandbox_backend.start(make_bot("escapes"), roomy(), "t13-escapes")
    message = str(caught.value)
    assert "tournament won by escapes" in message
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
        assert raw not in message
    assert "\\x1b]0;pwned\\x07" in message
    assert "\\u202e" in message
    assert leftover_containers(sandbox_backend, "t13-escapes") == []


def test_bwrap_refuses_untrusted_bots_without_per_bot_limits(
    bwrap_backend: Backend, make_bot: MakeBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sandbox.local

    reason = "no cgroup v2 and no cgroup v1 memory controller mounted"
    monkeypatch.setattr(sandbox.local, "cgroup_layout", lambda: reason)
    assert reason in str(bwrap_backend.untrusted_problem())
    folder = make_bot("healthy")
    with pytest.raises(LimitsUnavailableError, match=reason) as caught:
        bwrap_backend.start(folder, roomy(), "t13-refused")
    assert "\n" not in str(caught.value)
    # A trusted (bundled) bot still runs, with rlimits only.
    bot = bwrap_backend.start(folder, roomy(), "t13-trusted", trusted=True)
    try:
        assert bot.alive()
        assert getattr(bot, "cgroup", None) is None
    finally:
        stop_and_assert_gone(bot)


@pytest.mark.docker
def test_docker_refuses_untrusted_bots_without_a_socket_tmpfs(
    docker_backend: Backend, make_bot: MakeBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sandbox.docker_backend

    reason = "the socket directory tmpfs needs root (CAP_SYS_ADMIN) to mount"
    monkeypatch.setattr(sandbox.docker_backend, "socket_tmpfs_problem", lambda: reason)
    with pytest.raises(LimitsUnavailableError, match="needs root"):
        docker_backend.start(make_bot("healthy"), roomy(), "t13-refused-docker")
    assert leftover_containers(docker_backend, "t13-refused-docker") == []


@pytest.mark.docker
def test_docker_without_a_seccomp_filter_refuses_untrusted_bots(
    docker_backend: Backend, make_bot: MakeBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Docker's bots run under the filter stacked on the engine's profile; where libseccomp
    cannot make it, untrusted bots are refused (one line), trusted ones run on Docker's
    profile alone."""
    import sandbox.docker_backend

    assert docker_backend.untrusted_problem() is None
    problem = "no seccomp filter: libseccomp is not available (test)"
    monkeypatch.setattr(sandbox.docker_backend, "filter_problem", lambda: problem)
    assert "cannot filter bots' system calls" in str(docker_backend.untrusted_problem())
    healthy = make_bot("healthy")
    with pytest.raises(LimitsUnavailableError, match="libseccomp"):
        docker_backend.start(healthy, roomy(), "t13-unfiltered-docker")
    assert leftover_containers(docker_backend, "t13-unfiltered-docker") == []
    bot = docker_backend.start(healthy, roomy(), "t13-trusted-docker", trusted=True)
    try:
        assert bot.alive()
        # Supervised (sandbox.supervisor), without the filter's launcher.
        command = bot.container.attrs["Config"]["Cmd"]  # type: ignore[attr-defined]
        assert command[:5] == ["python3", "-I", "-S", "-c", TOKEN_SUPERVISOR]
        assert command[5] == "/bin/sh"
    finally:
        stop_and_assert_gone(bot)
    monkeypatch.undo()
    bot = docker_backend.start(healthy, roomy(), "t13-filtered-docker")
    try:
        command = bot.container.attrs["Config"]["Cmd"]  # type: ignore[attr-defined]
        assert command[:4] == ["python3", "-I", "-S", "-c"]
        assert command[6:8] == ["/bin/sh", "-c"]
    finally:
        stop_and_assert_gone(bot)


def test_bwrap_reports_cpu_time_of_the_whole_tree(
    bwrap_backend: Backend, make_bot: MakeBot
) -> None:
    bot = bwrap_backend.start(make_bot("busy"), roomy(), "t13-cpu")
    try:
        first = bot.cpu_seconds()
        if first is None:
            pytest.skip("no CPU accounting controller here")
        started = time.monotonic()
        time.sleep(1.5)
        now = bot.cpu_seconds()
        assert now is not None
        used = now - first
        # The upper bound is the point (the tree's CPU, at most all cores of the wall time);
        # on a loaded machine the busy tree may get little CPU, so the lower one only checks
        # that it was counted at all.
        assert 0.0 < used <= (time.monotonic() - started) * 4 + 0.5
    finally:
        stop_and_assert_gone(bot)


def test_concurrent_stops_of_many_bots_leave_nothing(
    bwrap_backend: Backend, make_bot: MakeBot
) -> None:
    folder = make_bot("healthy")
    bots = [bwrap_backend.start(folder, roomy(), f"t13-many-{i}") for i in range(3)]
    errors: list[BaseException] = []

    def stop(bot: RunningBot) -> None:
        try:
            stop_and_assert_gone(bot)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=stop, args=(bot,)) for bot in bots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []


def test_mount_table_shows_no_host_path(sandbox_backend: Backend, make_bot: MakeBot) -> None:
    """Issue 13.10: a bot reading /proc/self/mountinfo learns no host path of ours (runtime
    directory, its work directory, its label, the runner token, the submission's folder)."""
    from sandbox.backend import runtime_dir
    from sandbox.runner import current_runner

    folder = make_bot("mountspy")
    bot = sandbox_backend.start(folder, roomy(), "t13-mountspy")
    try:
        result = report(bot)
        seen = result["mountinfo"] + result["cgroup"]
        secrets = [
            str(runtime_dir()),
            bot.work_dir.name,
            "t13-mountspy",
            current_runner().token,
            str(folder),
            str(Path(__file__).resolve().parents[2]),  # the project's source tree
        ]
        assert [s for s in secrets if s in seen] == [], seen
        if sandbox_backend.name == "bwrap":
            # Each of our binds is the root of its own tmpfs: root field "/", source tmpfs.
            for point in ("/bot", "/opt/kryt/lib", "/run/kryt"):
                (line,) = [
                    line for line in result["mountinfo"].splitlines()
                    if line.split(" ")[4] == point
                ]  # fmt: skip
                fields = line.split(" ")
                assert fields[3] == "/" and " - tmpfs " in line, line
                # The code and the runtime are read-only; only the socket dir is writable.
                assert fields[5].split(",")[0] == ("rw" if point == "/run/kryt" else "ro"), line
    finally:
        stop_and_assert_gone(bot)


def test_bwrap_that_cannot_disable_user_namespaces_refuses_untrusted_bots(
    bwrap_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe names what failed (a bwrap without --disable-userns, here a command that
    always fails), and untrusted bots are then refused, as without per-bot limits."""
    from sandbox.local import BwrapBackend, nested_userns_problem

    false = shutil.which("false")
    assert false is not None
    problem = nested_userns_problem(false, os.getuid(), os.getgid())
    assert problem is not None and "--disable-userns" in problem and "\n" not in problem
    assert isinstance(bwrap_backend, BwrapBackend)
    assert bwrap_backend.userns_problem is None  # this machine's bwrap can
    monkeypatch.setattr(bwrap_backend, "userns_problem", problem)  # a session's backend
    assert "cannot keep bots from creating user namespaces" in str(
        bwrap_backend.untrusted_problem()
    )


def test_bwrap_without_a_seccomp_filter_refuses_untrusted_bots(
    bwrap_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where libseccomp cannot make the filter, the reason is one line and untrusted bots
    are refused; where it can, every bwrap command line loads it (``--seccomp FD``)."""
    import builtins

    from sandbox import seccomp
    from sandbox.limits import SandboxLimits
    from sandbox.local import BwrapBackend

    assert isinstance(bwrap_backend, BwrapBackend)
    assert bwrap_backend.seccomp_problem is None  # this machine's libseccomp can
    assert "--seccomp" in bwrap_backend.argv({}, "bot.py", SandboxLimits(), seccomp_fd=7)
    assert "--seccomp" not in bwrap_backend.argv({}, "bot.py", SandboxLimits())

    real_import = builtins.__import__

    def no_pyseccomp(name: str, *args: object, **kwargs: object) -> object:
        if name == "pyseccomp":
            raise RuntimeError("Unable to find libseccomp")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    seccomp.compiled_filter.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_pyseccomp)
    try:
        problem = seccomp.filter_problem()
    finally:
        monkeypatch.undo()
        seccomp.compiled_filter.cache_clear()
    assert problem is not None and "libseccomp" in problem and "\n" not in problem
    with pytest.raises(RuntimeError, match="libseccomp"):
        monkeypatch.setattr(seccomp, "compiled_filter", lambda build=False: problem)
        seccomp.filter_fd()
    monkeypatch.setattr(bwrap_backend, "seccomp_problem", problem)
    assert "cannot filter bots' system calls" in str(bwrap_backend.untrusted_problem())
