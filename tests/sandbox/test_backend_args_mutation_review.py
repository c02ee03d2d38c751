"""What the bwrap and process backends hand the kernel, read from the command lines they build.

A mutation review of ``sandbox/local.py``, ``sandbox/limits.py``, ``sandbox/cgroups.py`` and
``sandbox/seccomp.py`` found many changes that the hostile-bot suites let live, because a
second layer hid the first one's loss (the seccomp filter refuses ``unshare`` without bwrap's
``--disable-userns``; a non-root uid has no capability without ``--cap-drop ALL``; bwrap is
started with an almost empty environment without ``--clearenv``) or because no hostile bot
pushes a limit just past its documented value (``--as``, ``--fsize``, ``--nproc``, the size of
``/dev``, the code tmpfs, the cgroup's ``pids.max`` and CPU quota, a build's network).

These tests check, without starting a sandbox, what ``docs/sandbox.md`` promises:

- the ``prlimit … bwrap …`` line of a Python bot, a bot of another runtime and a build:
  every rlimit and its unit, every namespace flag, what is mounted where, read-only or
  writable and how big, the exact environment and the exact command (the supervisor);
- what ``BwrapBackend.start`` and ``_build`` wire into it (the cgroup's limits, which bind is
  writable, the uid) and the process backend's rlimits and environment;
- ``SandboxLimits``' documented defaults and checks, the cgroup files a bot's cgroup gets
  (v1 and v2, on a fake cgroup file system that makes the kernel's files on ``mkdir``);
- the compiled seccomp program itself, run on a small classic-BPF interpreter: every listed
  system call, the lock commands, ``RWF_NOWAIT``, the ignored advice and foreign ABIs.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sandbox import cgroups, local, seccomp
from sandbox.backend import BOT_HOSTNAME, SANDBOX_ADDRESS, SANDBOX_SOCKET_DIR, Backend
from sandbox.cgroups import CPU_PERIOD_US, BotCgroup, CgroupLayout
from sandbox.limits import MiB, SandboxLimits
from sandbox.local import (
    BUILD_HOSTNAME,
    BUILD_NOFILE,
    DEV_NODES,
    NO_NESTED_USERNS,
    BwrapBackend,
    ProcessBackend,
)
from sandbox.runtimes import get_runtime
from sandbox.runtimes import rootfs as runtime_fs
from sandbox.submission import load_submission
from sandbox.supervisor import SUPERVISOR

LIMITS = SandboxLimits(
    memory_bytes=96 * MiB,
    pids=9,
    cpus=0.5,
    nofile=77,
    tmpfs_bytes=3 * MiB,
    fsize_bytes=5 * MiB,
    log_bytes=300 * 1024,
    address_space_slack_bytes=300 * MiB,
    shm_bytes=2 * MiB,
)
"""Limits whose every field differs from the others and from the defaults, so a field
passed in another's place, or a default passed instead, shows (the Docker backend's review
uses them too)."""

BOT_PYTHON = "/usr/bin/python3"
"""The bots' interpreter in these tests (``KRYT_SANDBOX_PYTHON``): a system one under /usr."""

ARITY = {
    "--unshare-all": 0,
    "--unshare-user": 0,
    "--disable-userns": 0,
    "--share-net": 0,
    "--seccomp": 1,
    "--as-pid-1": 0,
    "--die-with-parent": 0,
    "--new-session": 0,
    "--hostname": 1,
    "--clearenv": 0,
    "--cap-drop": 1,
    "--ro-bind": 2,
    "--bind": 2,
    "--dev-bind": 2,
    "--ro-bind-fd": 2,
    "--bind-fd": 2,
    "--symlink": 2,
    "--tmpfs": 1,
    "--remount-ro": 1,
    "--proc": 1,
    "--dir": 1,
    "--perms": 1,
    "--size": 1,
    "--setenv": 2,
    "--chdir": 1,
}
"""bwrap's options these command lines use, with their number of arguments. An option not
listed here fails the parse: a new one must be reviewed (and added) on purpose."""


@dataclass
class Mount:
    """One mount bwrap makes: its kind (the option), source, size, permissions."""

    kind: str
    source: str | None = None
    size: int | None = None
    perms: str | None = None
    read_only: bool = False


@dataclass
class BwrapLine:
    """A ``prlimit … -- bwrap … -- command`` line taken apart."""

    rlimits: dict[str, str]
    options: list[tuple[str, tuple[str, ...]]]
    command: list[str]
    mounts: dict[str, Mount] = field(default_factory=dict)
    remounted_ro: list[str] = field(default_factory=list)

    def flags(self) -> list[str]:
        return [name for name, _ in self.options]

    def values(self, name: str) -> list[tuple[str, ...]]:
        return [args for option, args in self.options if option == name]

    def env(self) -> dict[str, str]:
        return dict((key, value) for key, value in self.values("--setenv"))

    def writable(self) -> set[str]:
        """Where the bot may write files: writable mounts not remounted read-only (device
        nodes aside)."""
        return {
            dest
            for dest, mount in self.mounts.items()
            if mount.kind in {"--tmpfs", "--bind", "--bind-fd"} and not mount.read_only
        }


def parse(argv: Sequence[str], prlimit: str, bwrap: str) -> BwrapLine:
    """Take ``argv`` apart (see :class:`BwrapLine`), following bwrap's mount options."""
    assert argv[0] == prlimit, argv[:2]
    at = 1
    rlimits: dict[str, str] = {}
    while argv[at] != "--":
        name, equals, value = argv[at].removeprefix("--").partition("=")
        assert equals and name not in rlimits, argv[at]
        rlimits[name] = value
        at += 1
    assert argv[at + 1] == bwrap, argv[at : at + 2]
    at += 2
    options: list[tuple[str, tuple[str, ...]]] = []
    while argv[at] != "--":
        option = argv[at]
        assert option in ARITY, f"bwrap option {option!r} is not reviewed here (add it to ARITY)"
        count = ARITY[option]
        options.append((option, tuple(argv[at + 1 : at + 1 + count])))
        at += 1 + count
    line = BwrapLine(rlimits, options, list(argv[at + 1 :]))
    size: int | None = None
    perms: str | None = None
    for option, args in options:
        if option == "--size":
            size = int(args[0])
        elif option == "--perms":
            perms = args[0]
        elif option == "--remount-ro":
            line.remounted_ro.append(args[0])
            assert args[0] in line.mounts or args[0] == "/", f"{args[0]} remounted, not mounted"
            if args[0] in line.mounts:
                line.mounts[args[0]].read_only = True
        elif option in {"--tmpfs", "--proc", "--dir"}:
            line.mounts[args[0]] = Mount(option, None, size, perms)
            if option == "--tmpfs":
                size = None
            if option in {"--tmpfs", "--dir"}:
                perms = None
        elif option in {"--ro-bind", "--bind", "--dev-bind", "--ro-bind-fd", "--bind-fd"}:
            line.mounts[args[1]] = Mount(option, args[0], read_only=option.startswith("--ro"))
        elif option == "--symlink":
            line.mounts[args[1]] = Mount(option, args[0], read_only=True)
    return line


def bare_bwrap() -> BwrapBackend:
    """A bwrap backend whose probes all passed (nothing run): only its command lines."""
    backend = BwrapBackend.__new__(BwrapBackend)
    Backend.__init__(backend, "argument review")
    backend.bwrap, backend.prlimit = "/usr/bin/bwrap", "/usr/bin/prlimit"
    backend.uid, backend.gid = 4242, 4243
    backend.userns_problem = None
    backend._userns_flags = list(NO_NESTED_USERNS)
    backend.seccomp_problem = None
    return backend


@pytest.fixture
def system_python(monkeypatch: pytest.MonkeyPatch) -> str:
    """Bots run on ``/usr/bin/python3`` (under /usr: no prefix bind, /usr/local masked)."""
    monkeypatch.setenv("KRYT_SANDBOX_PYTHON", BOT_PYTHON)
    return BOT_PYTHON


PYTHON_BINDS = {"/opt/kryt/lib": (10, False), "/bot": (11, False), SANDBOX_SOCKET_DIR: (12, True)}


def python_line(*, cgroup: bool = True, status_fd: int | None = 5) -> BwrapLine:
    backend = bare_bwrap()
    argv = backend.argv(
        PYTHON_BINDS, "bot.py", LIMITS, cgroup=cgroup, seccomp_fd=9, status_fd=status_fd
    )
    return parse(argv, backend.prlimit, backend.bwrap)


# ------------------------------------------------------------------ a Python bot's line


def test_a_python_bots_rlimits_are_its_limits_in_bytes(system_python: str) -> None:
    """``--as`` = memory + slack, ``--nofile``, ``--fsize`` in bytes, no core; with a cgroup
    no ``--nproc`` (the cgroup bounds the tree), without one 4 × pids (docs: the old
    rlimits)."""
    address_space = str(LIMITS.memory_bytes + LIMITS.address_space_slack_bytes)
    fixed = {"as": address_space, "nofile": "77", "fsize": str(5 * MiB), "core": "0"}
    assert python_line(cgroup=True).rlimits == fixed
    assert python_line(cgroup=False).rlimits == fixed | {"nproc": str(4 * LIMITS.pids)}


def test_a_python_bot_gets_no_namespace_capability_or_name_of_the_host(system_python: str) -> None:
    line = python_line()
    flags = line.flags()
    for flag in ("--unshare-all", *NO_NESTED_USERNS, "--die-with-parent", "--new-session"):
        assert flag in flags, flag
    assert "--share-net" not in flags
    assert line.values("--cap-drop") == [("ALL",)]
    assert line.values("--hostname") == [(BOT_HOSTNAME,)]
    assert line.values("--seccomp") == [("9",)]
    # The supervisor is the sandbox's process 1 (only with a supervisor).
    assert "--as-pid-1" in flags
    assert "--as-pid-1" not in python_line(status_fd=None).flags()
    assert (
        "--seccomp"
        not in parse(
            bare_bwrap().argv(PYTHON_BINDS, "bot.py", LIMITS), "/usr/bin/prlimit", "/usr/bin/bwrap"
        ).flags()
    )


def test_a_python_bot_writes_only_to_its_sized_tmpfs_and_socket_dir(system_python: str) -> None:
    """docs/sandbox.md, *writable places*: ``/tmp``, ``/dev/shm`` and ``/run/kryt``; ``/dev``
    is read-only with four nodes; the root, ``/usr`` and the host's ``/usr/local`` too."""
    line = python_line()
    assert line.writable() == {"/tmp", "/dev/shm", SANDBOX_SOCKET_DIR}
    tmp, shm, dev = line.mounts["/tmp"], line.mounts["/dev/shm"], line.mounts["/dev"]
    assert (tmp.size, shm.size, shm.perms) == (LIMITS.tmpfs_bytes, LIMITS.shm_bytes, "1777")
    assert dev.kind == "--tmpfs" and dev.size == 65536 and dev.read_only
    assert line.mounts["/usr"] == Mount("--ro-bind", "/usr", read_only=True)
    if Path("/usr/local").is_dir():
        assert line.mounts["/usr/local"].kind == "--tmpfs"
        assert line.mounts["/usr/local"].read_only
    nodes = {
        dest: mount.source for dest, mount in line.mounts.items() if mount.kind == "--dev-bind"
    }
    assert nodes == {
        f"/dev/{node}": f"/dev/{node}" for node in ("null", "zero", "urandom", "random")
    }
    assert DEV_NODES == ("null", "zero", "urandom", "random")
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if link in line.mounts:
            assert line.mounts[link].kind in {"--symlink", "--ro-bind"}, link
    assert line.mounts["/bot"] == Mount("--ro-bind-fd", "11", read_only=True)
    assert line.mounts["/opt/kryt/lib"] == Mount("--ro-bind-fd", "10", read_only=True)
    assert line.mounts[SANDBOX_SOCKET_DIR] == Mount("--bind-fd", "12")
    # The root read-only last, once everything is mounted on it.
    assert line.options[-1] == ("--remount-ro", ("/",))


def test_a_python_bot_gets_exactly_its_environment_and_command(
    system_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--clearenv`` before the bot's six variables, nothing of the referee's (its HOME, a
    secret in its environment), and the documented command under the supervisor."""
    monkeypatch.setenv("HOME", "/root/referee-home")
    monkeypatch.setenv("KRYT_REVIEW_SECRET", "s3cret")
    line = python_line()
    assert line.env() == {
        "KRYT_BOT_ADDRESS": SANDBOX_ADDRESS,
        "PYTHONPATH": "/opt/kryt/lib",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
    }
    flags = line.flags()
    assert flags.count("--clearenv") == 1 and flags.index("--clearenv") < flags.index("--setenv")
    assert line.values("--chdir") == [("/bot",)]
    bot = ["/bin/sh", "-c", 'umask 000 && exec "$0" -u "$1"', BOT_PYTHON, "bot.py"]
    assert line.command == [BOT_PYTHON, "-I", "-S", "-c", SUPERVISOR, "5", *bot]
    assert python_line(status_fd=None).command == bot


# ------------------------------------------------------------------ other runtimes, builds

RUNTIME_BINDS = {
    "/": (20, False),
    "/bot": (21, False),
    "/artifact": (22, False),
    SANDBOX_SOCKET_DIR: (23, True),
}


def runtime_line(**options: Any) -> BwrapLine:
    backend = bare_bwrap()
    options.setdefault("status_fd", 5)
    argv = backend.runtime_argv(
        RUNTIME_BINDS, ["/bin/sh", "-c", "exec node bot.js"], get_runtime("node"), LIMITS, **options
    )
    return parse(argv, backend.prlimit, backend.bwrap)


def test_a_runtime_bots_rlimits_and_mounts() -> None:
    address_space = str(LIMITS.memory_bytes + LIMITS.address_space_slack_bytes)
    fixed = {"nofile": "77", "fsize": str(5 * MiB), "core": "0"}
    assert runtime_line(cgroup=True).rlimits == fixed | {"as": address_space}
    assert runtime_line(cgroup=False).rlimits == fixed | {
        "as": address_space,
        "nproc": str(4 * LIMITS.pids),
    }
    assert runtime_line(cgroup=True, address_space=False).rlimits == fixed
    line = runtime_line(cgroup=True)
    assert line.writable() == {"/tmp", "/dev/shm", SANDBOX_SOCKET_DIR}
    assert line.options[-1] == ("--remount-ro", ("/",))
    assert ("--ro-bind-fd", ("20", "/")) in line.options
    assert line.mounts["/bot"] == Mount("--ro-bind-fd", "21", read_only=True)
    assert line.mounts["/artifact"] == Mount("--ro-bind-fd", "22", read_only=True)
    assert line.mounts[SANDBOX_SOCKET_DIR] == Mount("--bind-fd", "23")
    assert (line.mounts["/tmp"].size, line.mounts["/dev/shm"].size) == (3 * MiB, 2 * MiB)
    assert line.mounts["/dev"].size == 65536 and line.mounts["/dev"].read_only
    flags = line.flags()
    for flag in ("--unshare-all", *NO_NESTED_USERNS, "--die-with-parent", "--new-session"):
        assert flag in flags, flag
    assert line.values("--cap-drop") == [("ALL",)]


def test_a_runtime_bot_has_no_network_and_only_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KRYT_REVIEW_SECRET", "s3cret")
    line = runtime_line()
    assert "--share-net" not in line.flags()
    assert "/etc/resolv.conf" not in line.mounts
    assert line.env() == {
        "KRYT_BOT_ADDRESS": SANDBOX_ADDRESS,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "NODE_PATH": "/opt/kryt/node/node_modules",
    }
    flags = line.flags()
    assert flags.count("--clearenv") == 1 and flags.index("--clearenv") < flags.index("--setenv")
    assert line.values("--chdir") == [("/bot",)]
    assert line.command[:6] == ["/usr/bin/python3", "-I", "-S", "-c", SUPERVISOR, "5"]
    online = runtime_line(network=True, workdir="/src", status_fd=None)
    assert "--share-net" in online.flags()
    assert online.values("--chdir") == [("/src",)]
    if Path("/etc/resolv.conf").is_file():
        assert online.mounts["/etc/resolv.conf"].kind == "--ro-bind"


def test_a_running_bot_of_another_runtime_is_named_bot() -> None:
    """docs/sandbox.md: a bot is named ``bot`` whatever its runtime (a build ``build``: see
    ``test_a_build_gets_its_cgroup_output_bound_and_no_network``)."""
    assert runtime_line().values("--hostname") == [(BOT_HOSTNAME,)]


# ------------------------------------------------------------------ what start() wires in


class Captured(Exception):
    """Raised by the stand-in for LocalBot once it has seen what it would have run."""


@dataclass
class FakeCgroup:
    """What ``BotCgroup.create`` was asked for (nothing created)."""

    created: list[dict[str, Any]] = field(default_factory=list)
    removed: int = 0

    def create(self, layout: CgroupLayout, name: str, **limits: Any) -> FakeCgroup:
        self.created.append(limits)
        return self

    def remove(self) -> None:
        self.removed += 1


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """LocalBot replaced: the keywords it got, and where each passed descriptor leads."""
    seen: dict[str, Any] = {}

    def fake_local_bot(**kwargs: Any) -> None:
        seen.update(kwargs)
        fds = kwargs["popen"].get("pass_fds", [])
        seen["fd_paths"] = {str(fd): os.readlink(f"/proc/self/fd/{fd}") for fd in fds}
        if kwargs.get("status_fd") is not None:
            os.close(kwargs["status_fd"])  # the bot's own from here
        raise Captured

    monkeypatch.setattr(local, "LocalBot", fake_local_bot)
    return seen


def python_bot(root: Path) -> Path:
    root.mkdir()
    (root / "bot.toml").write_text(
        'name = "review"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (root / "bot.py").write_text("print('hi')\n")
    return root


def test_bwrap_start_gives_the_cgroup_the_bots_limits_and_binds_only_the_socket_writable(
    system_python: str,
    capture: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    cgroup = FakeCgroup()
    monkeypatch.setattr(local, "BotCgroup", cgroup)
    layout = CgroupLayout(2, (("unified", tmp_path / "cgroup"),))
    monkeypatch.setattr(local, "cgroup_layout", lambda: layout)
    backend = bare_bwrap()
    with pytest.raises(Captured):
        backend.start(
            python_bot(tmp_path / "bot"), LIMITS, "argsreview", trusted=True, connect=False
        )
    assert cgroup.created == [{"memory_bytes": 96 * MiB, "pids": 9, "cpus": 0.5}]
    assert cgroup.removed == 1
    line = parse(capture["argv"], backend.prlimit, backend.bwrap)
    assert "nproc" not in line.rlimits  # the cgroup bounds the tree
    paths = capture["fd_paths"]
    writable = {dest for dest, mount in line.mounts.items() if mount.kind == "--bind-fd"}
    assert writable == {SANDBOX_SOCKET_DIR}
    assert paths[line.mounts[SANDBOX_SOCKET_DIR].source or ""].endswith("/sock")
    assert paths[line.mounts["/bot"].source or ""].endswith("/code")
    popen = capture["popen"]
    assert popen["env"] == {"PATH": "/usr/bin:/bin"} and popen["cwd"] == "/"
    if os.geteuid() == 0:
        assert popen["user"] == capture["expected_uid"] != 0
        assert popen["group"] != 0 and popen["extra_groups"] == []
    assert capture["limits"] == LIMITS


def test_bwrap_start_without_a_cgroup_bounds_the_uids_processes(
    system_python: str,
    capture: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(local, "cgroup_layout", lambda: "no cgroup here (test)")
    backend = bare_bwrap()
    with pytest.raises(Captured):
        backend.start(
            python_bot(tmp_path / "bot"), LIMITS, "argsreview", trusted=True, connect=False
        )
    line = parse(capture["argv"], backend.prlimit, backend.bwrap)
    assert line.rlimits["nproc"] == str(4 * LIMITS.pids)
    assert capture["cgroup"] is None


def test_a_compiled_bot_gets_its_floors_and_a_read_only_artifact(
    capture: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A ``cpp`` bot (its build and its runtime's file system stood in for): the runtime's
    floors in its cgroup (128 pids), its own copy of the build's output read-only at
    ``/artifact``, the code read-only at ``/bot``, only the socket directory writable."""
    cgroup = FakeCgroup()
    monkeypatch.setattr(local, "BotCgroup", cgroup)
    layout = CgroupLayout(2, (("unified", tmp_path / "cgroup"),))
    monkeypatch.setattr(local, "cgroup_layout", lambda: layout)
    rootfs, artifact = tmp_path / "rootfs", tmp_path / "artifact"
    rootfs.mkdir()
    artifact.mkdir()
    (artifact / "bot").write_text("an executable\n")
    monkeypatch.setattr(runtime_fs, "runtime_rootfs", lambda runtime: rootfs)
    backend = bare_bwrap()
    monkeypatch.setattr(backend, "artifact_for", lambda sub, trusted=False: artifact)
    source = tmp_path / "cppbot"
    source.mkdir()
    (source / "bot.toml").write_text(
        'name = "review"\nversion = "1.0.0"\nruntime = "cpp"\nentry = "main.cpp"\n'
    )
    (source / "main.cpp").write_text("int main() { return 0; }\n")
    with pytest.raises(Captured):
        backend.start(source, LIMITS, "argsreview", trusted=True, connect=False)
    cpp = get_runtime("cpp")
    assert cgroup.created == [{"memory_bytes": 96 * MiB, "pids": cpp.min_pids, "cpus": 0.5}]
    line = parse(capture["argv"], backend.prlimit, backend.bwrap)
    paths = capture["fd_paths"]
    assert paths[line.mounts["/artifact"].source or ""].endswith("/artifact")
    assert paths[line.mounts["/artifact"].source or ""] != str(artifact)  # the bot's copy
    assert line.mounts["/artifact"].kind == "--ro-bind-fd"
    assert line.mounts["/bot"].kind == "--ro-bind-fd"
    assert line.mounts["/"].kind == "--ro-bind-fd"
    assert paths[line.mounts["/"].source or ""] == str(rootfs)
    assert line.writable() == {"/tmp", "/dev/shm", SANDBOX_SOCKET_DIR}


def test_the_code_tmpfs_is_sized_to_the_submission(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs: the submission plus a page per file and 1 MiB (here: 3 entries, 1000 bytes)."""
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(local, "mount_tmpfs", lambda path, **kw: asked.append(kw))
    local._mount_sized_tmpfs(tmp_path / "code", 1000, 3, what="bot code")
    assert [(kw["size_bytes"], kw["inodes"]) for kw in asked] == [(1000 + 4096 * 4 + MiB, 3 + 16)]


def test_a_build_gets_its_cgroup_output_bound_and_no_network(
    capture: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs (*The build*): no network unless ``KRYT_BUILD_NETWORK``, sources read-only at
    ``/src``, ``/artifact`` writable, a memory + pids + CPU cgroup of ``BuildLimits``, the
    output's bound as the file-size limit, named ``build``."""
    monkeypatch.delenv("KRYT_BUILD_NETWORK", raising=False)
    cgroup = FakeCgroup()
    monkeypatch.setattr(local, "BotCgroup", cgroup)
    layout = CgroupLayout(2, (("unified", tmp_path / "cgroup"),))
    monkeypatch.setattr(local, "cgroup_layout", lambda: layout)
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    monkeypatch.setattr(runtime_fs, "runtime_rootfs", lambda runtime: rootfs)
    source = tmp_path / "cppbot"
    source.mkdir()
    (source / "bot.toml").write_text(
        'name = "review"\nversion = "1.0.0"\nruntime = "cpp"\nentry = "main.cpp"\n'
    )
    (source / "main.cpp").write_text("int main() { return 0; }\n")
    runtime = get_runtime("cpp")
    build = runtime.build_limits
    backend = bare_bwrap()
    with pytest.raises(Captured):
        backend._build(load_submission(source), runtime, tmp_path / "final", bounded=False)
    assert cgroup.created == [
        {"memory_bytes": build.memory_bytes, "pids": build.processes, "cpus": build.cpus}
    ]
    line = parse(capture["argv"], backend.prlimit, backend.bwrap)
    assert line.rlimits == {
        "nofile": str(BUILD_NOFILE),
        "fsize": str(build.output_bytes),
        "core": "0",
    }
    assert "--share-net" not in line.flags() and "/etc/resolv.conf" not in line.mounts
    assert line.values("--hostname") == [(BUILD_HOSTNAME,)]
    assert line.mounts["/src"].kind == "--ro-bind-fd"
    assert line.mounts["/artifact"].kind == "--bind-fd"
    assert line.writable() == {"/tmp", "/dev/shm", "/artifact"}
    assert capture["limits"].fsize_bytes == build.output_bytes


# ------------------------------------------------------------------ the process backend


def test_the_process_backend_sets_every_rlimit_and_passes_no_secret(
    capture: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KRYT_REVIEW_SECRET", "s3cret")
    backend = ProcessBackend(trusted_roots=[tmp_path])
    with pytest.raises(Captured):
        backend.start(python_bot(tmp_path / "bot"), LIMITS, "argsreview", connect=False)
    env = capture["popen"]["env"]
    rlimits = dict(item.split("=") for item in env["KRYT_RLIMITS"].split(","))
    assert rlimits == {
        "RLIMIT_AS": str(LIMITS.memory_bytes + LIMITS.address_space_slack_bytes),
        "RLIMIT_NOFILE": "77",
        "RLIMIT_FSIZE": str(5 * MiB),
        "RLIMIT_CORE": "0",
    }
    assert "KRYT_REVIEW_SECRET" not in env
    assert set(env) == {
        "KRYT_BOT_ADDRESS",
        "KRYT_RLIMITS",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PATH",
        "HOME",
        "LANG",
    }


# ------------------------------------------------------------------ SandboxLimits


def test_the_documented_defaults_in_bytes() -> None:
    """docs/sandbox.md, *Limits*: 256 MiB, 64 pids, 1 CPU, 256 files, /tmp 16 MiB, /dev/shm
    1 MiB, files 8 MiB, logs 1 MiB, /run/kryt 64 KiB and 16 entries, 1 GiB of slack, 15 s."""
    assert MiB == 1 << 20
    assert SandboxLimits() == SandboxLimits(
        memory_bytes=256 << 20,
        pids=64,
        cpus=1.0,
        nofile=256,
        tmpfs_bytes=16 << 20,
        fsize_bytes=8 << 20,
        log_bytes=1 << 20,
        startup_timeout=15.0,
        address_space_slack_bytes=1 << 30,
        socket_dir_bytes=64 << 10,
        socket_dir_inodes=16,
        shm_bytes=1 << 20,
    )


@pytest.mark.parametrize(
    "fields",
    [{"memory_bytes": 0}, {"nofile": -1}, {"cpus": 0.0}, {"fsize_bytes": True}, {"pids": 3}],
)
def test_limits_that_give_nothing_or_are_not_numbers_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SandboxLimits(**fields)


def test_four_pids_are_enough() -> None:
    assert SandboxLimits(pids=4).pids == 4


# ------------------------------------------------------------------ the cgroup's files

V2_FILES = ("memory.max", "memory.swap.max", "memory.oom.group", "pids.max", "cpu.max")
V1_FILES = {
    "memory": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
    "pids": ("pids.max",),
    "cpu": ("cpu.cfs_period_us", "cpu.cfs_quota_us"),
    "cpuacct": ("cpuacct.usage",),
}


class KernelDir(type(Path())):  # type: ignore[misc]
    """A directory of a fake cgroup file system: ``mkdir`` makes the interface files the
    kernel would (of the hierarchy named by the grandparent: ``unified`` for v2)."""

    def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        super().mkdir(mode, parents, exist_ok)
        hierarchy = self.parent.parent.name
        for name in V2_FILES if hierarchy == "unified" else V1_FILES.get(hierarchy, ()):
            (self / name).write_text("max\n" if hierarchy == "unified" else "-1\n")


def fake_layout(root: Path, version: int, controllers: Sequence[str]) -> CgroupLayout:
    parents = []
    for name in controllers:
        parent = KernelDir(root / name / "kryt")
        parent.mkdir(parents=True)
        parents.append((name, parent))
    return CgroupLayout(version, tuple(parents))


def read(group: BotCgroup, controller: str, name: str) -> str:
    return (group._dir(controller) / name).read_text().strip()


def test_a_v2_cgroup_gets_the_memory_without_swap_the_pids_and_the_cpu_quota(
    tmp_path: Path,
) -> None:
    layout = fake_layout(tmp_path, 2, ["unified"])
    group = BotCgroup.create(layout, "bot.x.y", memory_bytes=96 * MiB, pids=9, cpus=0.5)
    assert {name: read(group, "unified", name) for name in V2_FILES} == {
        "memory.max": str(96 * MiB),
        "memory.swap.max": "0",
        "memory.oom.group": "1",
        "pids.max": "9",
        "cpu.max": f"50000 {CPU_PERIOD_US}",
    }
    assert CPU_PERIOD_US == 100_000
    assert group.cpu_quota() == 0.5


def test_a_v1_cgroup_gets_the_same_limits(tmp_path: Path) -> None:
    layout = fake_layout(tmp_path, 1, ["memory", "pids", "cpuacct", "cpu"])
    group = BotCgroup.create(layout, "bot.x.y", memory_bytes=96 * MiB, pids=9, cpus=0.5)
    assert read(group, "memory", "memory.limit_in_bytes") == str(96 * MiB)
    assert read(group, "memory", "memory.memsw.limit_in_bytes") == str(96 * MiB)
    assert read(group, "pids", "pids.max") == "9"
    assert read(group, "cpu", "cpu.cfs_period_us") == str(CPU_PERIOD_US)
    assert read(group, "cpu", "cpu.cfs_quota_us") == "50000"
    assert group.cpu_quota() == 0.5


@pytest.mark.parametrize(("cpus", "quota"), [(0.5, 50_000), (2.0, 200_000), (0.001, 1000)])
def test_the_cpu_quota_is_microseconds_a_period_at_least_one_millisecond(
    cpus: float, quota: int
) -> None:
    assert cgroups._quota(cpus) == quota


# ------------------------------------------------------------------ the seccomp program

DOCUMENTED_DENIED = (
    *("io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open"),
    *("keyctl", "add_key", "request_key", "userfaultfd", "ptrace", "process_vm_readv"),
    *("process_vm_writev", "kcmp", "setns", "unshare", "mount", "umount2", "pivot_root"),
    *("fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr"),
    *("open_by_handle_at", "name_to_handle_at", "init_module", "finit_module"),
    *("delete_module", "kexec_load", "kexec_file_load", "reboot", "clock_settime"),
    *("clock_adjtime", "settimeofday", "adjtimex", "swapon", "swapoff", "quotactl"),
    *("quotactl_fd", "syslog", "acct", "ioperm", "iopl", "modify_ldt", "memfd_secret"),
    *("mbind", "set_mempolicy", "move_pages", "migrate_pages", "io_setup", "io_destroy"),
    *("io_submit", "io_getevents", "io_pgetevents", "io_cancel", "cachestat"),
    *("inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init"),
)
"""The system calls docs/sandbox.md says the filter refuses with ``EPERM``."""

AUDIT_ARCH = {"x86_64": 0xC000_003E, "aarch64": 0xC000_00B7}
FOREIGN_ARCH = {"x86_64": 0x4000_0003, "aarch64": 0x4000_0028}  # i386, arm
X32_SYSCALL_BIT = 0x4000_0000
ALLOW = 0x7FFF_0000
ERRNO = 0x0005_0000


def bpf_verdict(program: bytes, nr: int, arch: int, args: Sequence[int] = ()) -> int:
    """What the classic BPF seccomp ``program`` answers to system call ``nr`` of ABI ``arch``
    with ``args`` (a small interpreter of the instructions libseccomp emits)."""
    padded = [*args, *[0] * (6 - len(args))]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *padded)
    code = [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]
    acc = index = 0
    scratch = [0] * 16
    pc = 0
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        kind = op & 0x07
        if kind == 0x00:  # LD
            mode = op & 0xE0
            acc = (
                struct.unpack_from("<I", data, k)[0]
                if mode == 0x20
                else (scratch[k] if mode == 0x60 else k)
            )
        elif kind == 0x01:  # LDX
            index = scratch[k] if op & 0xE0 == 0x60 else k
        elif kind == 0x02:  # ST
            scratch[k] = acc
        elif kind == 0x03:  # STX
            scratch[k] = index
        elif kind == 0x04:  # ALU
            source = index if op & 0x08 else k
            alu = op & 0xF0
            assert alu in (0x40, 0x50), f"ALU op {op:#x}"
            acc = (acc | source if alu == 0x40 else acc & source) & 0xFFFF_FFFF
        elif kind == 0x05:  # JMP
            source = index if op & 0x08 else k
            jump = op & 0xF0
            if jump == 0x00:
                pc += k
                continue
            taken = {0x10: acc == source, 0x20: acc > source, 0x30: acc >= source}.get(
                jump, bool(acc & source)
            )
            pc += jt if taken else jf
        elif kind == 0x06:  # RET
            return acc if op & 0x18 == 0x10 else k
        else:  # MISC: TAX / TXA
            acc, index = (acc, acc) if op & 0xF8 == 0 else (index, index)


@pytest.fixture(scope="module")
def programs() -> dict[str, bytes]:
    """The running bot's and the build's programs (skipped where there is no filter)."""
    if platform.machine() not in AUDIT_ARCH:
        pytest.skip(f"no audit arch known here for {platform.machine()}")
    made = {"bot": seccomp.compiled_filter(), "build": seccomp.compiled_filter(build=True)}
    for kind, program in made.items():
        if isinstance(program, str):
            pytest.skip(f"{kind}: {program}")
    return {kind: program for kind, program in made.items() if isinstance(program, bytes)}


def syscall(name: str) -> int:
    import pyseccomp

    number: int = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    return number


def verdict(program: bytes, name: str, *args: int) -> int:
    return bpf_verdict(program, syscall(name), AUDIT_ARCH[platform.machine()], args)


def resolvable(names: Sequence[str]) -> Iterator[str]:
    for name in names:
        try:
            if syscall(name) >= 0:
                yield name
        except (OSError, ValueError):
            continue


@pytest.mark.parametrize("kind", ["bot", "build"])
def test_every_listed_call_is_refused_with_eperm_and_ordinary_calls_pass(
    programs: dict[str, bytes], kind: str
) -> None:
    program = programs[kind]
    assert set(DOCUMENTED_DENIED) <= set(seccomp.DENIED)
    for name in resolvable([*DOCUMENTED_DENIED, *seccomp.DENIED]):
        assert verdict(program, name) == ERRNO | errno.EPERM, name
    for name in resolvable(("read", "write", "openat", "mmap", "clone", "futex", "fcntl")):
        assert verdict(program, name) == ALLOW, name


@pytest.mark.parametrize("kind", ["bot", "build"])
def test_another_abi_answers_enosys(programs: dict[str, bytes], kind: str) -> None:
    program = programs[kind]
    machine = platform.machine()
    foreign = bpf_verdict(program, 26, FOREIGN_ARCH[machine])  # i386 ptrace
    assert foreign == ERRNO | errno.ENOSYS
    if machine == "x86_64":
        x32 = bpf_verdict(program, X32_SYSCALL_BIT | 0, AUDIT_ARCH[machine])
        assert x32 == ERRNO | errno.ENOSYS


def test_a_running_bot_gets_no_file_lock_and_a_build_does(programs: dict[str, bytes]) -> None:
    """Every lock command, even with the upper half of the register set, and ``flock``: a
    bot's ``EPERM``, a build's allowed; other ``fcntl`` commands allowed to both."""
    upper = 0xABCD_0000_0000_0000
    assert seccomp.LOCK_COMMANDS == (5, 6, 7, 36, 37, 38)
    for command in seccomp.LOCK_COMMANDS:
        for register in (command, command | upper):
            assert verdict(programs["bot"], "fcntl", 3, register) == ERRNO | errno.EPERM
            assert verdict(programs["build"], "fcntl", 3, register) == ALLOW
    assert verdict(programs["bot"], "flock", 3, 2) == ERRNO | errno.EPERM
    assert verdict(programs["build"], "flock", 3, 2) == ALLOW
    for command in (0, 1, 2, 3, 4):  # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL
        assert verdict(programs["bot"], "fcntl", 3, command) == ALLOW


@pytest.mark.parametrize("kind", ["bot", "build"])
def test_rwf_nowait_answers_eopnotsupp_and_advice_is_ignored(
    programs: dict[str, bytes], kind: str
) -> None:
    program = programs[kind]
    nowait = 0x8
    for name in ("preadv2", "pwritev2"):
        for flags in (nowait, nowait | 0x1, nowait | 0xFFFF_0000_0000_0000):
            assert verdict(program, name, 3, 0, 1, 0, 0, flags) == ERRNO | errno.EOPNOTSUPP
        assert verdict(program, name, 3, 0, 1, 0, 0, 0x1) == ALLOW  # RWF_HIPRI alone
        assert verdict(program, name, 3, 0, 1, 0, nowait, 0) == ALLOW  # an offset's half
    for name in resolvable(seccomp.IGNORED_ADVICE):
        assert verdict(program, name) == ERRNO | 0, name
    assert set(resolvable(("fadvise64", "readahead"))) <= set(seccomp.IGNORED_ADVICE)
