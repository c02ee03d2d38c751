"""The seccomp filter's launcher (Docker's bots and builds run through it): it loads the
filter before any code of the bot's runs, then runs the bot's command unchanged."""

from __future__ import annotations

import errno
import json
import platform
import subprocess
import tarfile
from pathlib import Path

import pytest

from sandbox import seccomp
from sandbox.runtimes import REGISTRY, containers
from sandbox.runtimes.images import SANDBOX_DEBS, root_debs

pytestmark = pytest.mark.skipif(
    not Path("/usr/bin/python3").is_file() or seccomp.filter_problem() is not None,
    reason="needs /usr/bin/python3 (what the launcher runs on) and libseccomp",
)

PROBE = """\
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = {}
for name, number, args in (("io_uring_setup", 425, (1, 0)), ("ptrace", 101, (0x4206, 1, 0, 0))):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    found[name] = 0 if result >= 0 else ctypes.get_errno()
found["argv"] = sys.argv[1:]
found["env"] = {k: v for k, v in os.environ.items() if k in ("LANG", "PROBE", "LC_CTYPE")}
print(json.dumps(found))
"""


def run_confined(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        seccomp.confined_command(argv),
        cwd=cwd,
        env={"LANG": "C.UTF-8", "PROBE": "a b", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe's numbers are x86-64's")
def test_the_launcher_filters_then_runs_the_command_unchanged(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = run_confined(["/usr/bin/python3", str(probe), "one", "two words", ""], tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["io_uring_setup"] == errno.EPERM
    assert found["ptrace"] == errno.EPERM
    assert found["argv"] == ["one", "two words", ""]
    assert found["env"] == {"LANG": "C.UTF-8", "PROBE": "a b"}  # nothing added, nothing lost


def test_a_bots_own_modules_never_run_before_the_filter(tmp_path: Path) -> None:
    """The container starts in the bot's directory: the launcher's imports must not find
    a ``base64.py`` or ``ctypes`` shipped with the bot (``python3 -I``)."""
    marker = tmp_path / "ran"
    for name in ("base64.py", "os.py", "sitecustomize.py"):
        (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').write('{name}')\n")
    (tmp_path / "ctypes").mkdir()
    (tmp_path / "ctypes" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('c')\n")
    done = run_confined(["/bin/true"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_a_filter_the_kernel_refuses_stops_the_start_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot never runs unfiltered: the launcher exits 125 with one line instead."""
    marker = tmp_path / "ran"
    # One BPF instruction that is not a return: the kernel refuses the program (EINVAL).
    monkeypatch.setattr(seccomp, "compiled_filter", lambda build=False: b"\x00" * 8)
    done = run_confined(["/bin/sh", "-c", f"touch {marker}"], tmp_path)
    assert done.returncode == seccomp.LAUNCHER_FAILED
    assert done.stderr.strip().count("\n") == 0
    assert "could not load its seccomp filter" in done.stderr
    assert not marker.exists()


def test_no_filter_no_confined_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        seccomp, "compiled_filter", lambda build=False: "no seccomp filter: libseccomp"
    )
    with pytest.raises(RuntimeError, match="libseccomp"):
        seccomp.confined_command(["/bin/true"])


def test_every_runtime_image_has_the_launchers_python() -> None:
    assert SANDBOX_DEBS == ("python3",)
    for runtime in REGISTRY.values():
        assert "python3" in root_debs(runtime), runtime.name


def test_docker_builds_run_confined() -> None:
    """The build stage's command is the confined one (the author's build runs their code)."""
    text = containers.dockerfile(REGISTRY["go"], "g:1", "main.go", confine=seccomp.confined_command)
    run = next(line for line in text.splitlines() if "kryt-build.sh" in line and "RUN" in line)
    argv = json.loads(run.removeprefix("RUN "))
    assert argv == seccomp.confined_command(["/bin/sh", "/kryt-build.sh"])
    assert argv[:4] == ["python3", "-I", "-S", "-c"]


def test_a_kernel_that_refuses_the_filter_is_known_before_any_bot_starts() -> None:
    """The filter is tried once a process: a refusal is a reason (one line) that keeps
    untrusted bots from starting, not a crash blamed on every bot."""
    made = seccomp.compiled_filter()
    assert isinstance(made, bytes)
    assert seccomp.kernel_refusal(made) is None
    refusal = seccomp.kernel_refusal(b"\x00" * 8)
    assert refusal is not None and "\n" not in refusal
    assert "kernel refuses it" in refusal and "could not load its seccomp filter" in refusal


LOCKS = """\
import ctypes, errno, fcntl, json, os, struct
FLOCK = "hhqqi4x"  # struct flock: type, whence, (padding), start, len, pid, (padding)
found = {}
with open(os.path.realpath(os.__file__), "rb") as shared:  # a read-only file of /usr
    for name, lock in (
        ("flock", lambda: fcntl.flock(shared, fcntl.LOCK_SH | fcntl.LOCK_NB)),
        ("setlk", lambda: fcntl.lockf(shared, fcntl.LOCK_SH | fcntl.LOCK_NB)),
        ("getlk", lambda: fcntl.fcntl(shared, fcntl.F_GETLK, struct.pack(FLOCK, 1, 0, 0, 0, 0))),
        ("ofd", lambda: fcntl.fcntl(shared, 37, struct.pack(FLOCK, 0, 0, 0, 0, 0))),
    ):
        try:
            lock()
            found[name] = 0
        except OSError as exc:
            found[name] = exc.errno
    # The same command with the upper half of the register set: the kernel reads an int.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    flock = ctypes.create_string_buffer(struct.pack(FLOCK, 0, 0, 0, 0, 0))
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(72), ctypes.c_long(shared.fileno()),
                          ctypes.c_long((1 << 32) | fcntl.F_SETLK), flock)
    found["setlk_high_bits"] = 0 if result >= 0 else ctypes.get_errno()
    found["plain_fcntl"] = fcntl.fcntl(shared, fcntl.F_GETFD) >= 0
print(json.dumps(found))
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe's numbers are x86-64's")
@pytest.mark.parametrize("build", [False, True])
def test_a_running_bot_gets_no_file_lock_and_a_build_does(tmp_path: Path, build: bool) -> None:
    """A lock on a file every sandbox shares was a channel between two running bots: their
    filter refuses flock() and fcntl()'s lock commands (also with the register's upper half
    set), and nothing else of fcntl; a build (Go's cache locks its files) keeps them."""
    probe = tmp_path / "locks.py"
    probe.write_text(LOCKS)
    done = subprocess.run(
        seccomp.confined_command(["/usr/bin/python3", str(probe)], build=build),
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["plain_fcntl"] is True
    expected = 0 if build else errno.EPERM
    assert found == {
        "flock": expected,
        "setlk": expected,
        "getlk": expected,
        "ofd": expected,
        "setlk_high_bits": expected,
        "plain_fcntl": True,
    }, found


def test_docker_builds_run_under_the_builds_filter(tmp_path: Path) -> None:
    """The backend's build stage is confined by the build's program (locks allowed), its
    bots by the running bots' (no locks): two different programs."""
    from sandbox.docker_backend import _build_context  # needs the docker package
    from sandbox.submission import load_submission

    folder = tmp_path / "gobot"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "gobot"\nversion = "1"\nruntime = "go"\nentry = "main.go"\n'
    )
    (folder / "main.go").write_text("package main\nfunc main() {}\n")
    context = _build_context(load_submission(folder), "base:1", REGISTRY["go"])
    with tarfile.open(fileobj=context) as tar:
        member = tar.extractfile("Dockerfile")
        assert member is not None
        text = member.read().decode()
    run = next(line for line in text.splitlines() if "kryt-build.sh" in line and "RUN" in line)
    argv = json.loads(run.removeprefix("RUN "))
    assert argv == seccomp.confined_command(["/bin/sh", "/kryt-build.sh"], build=True)
    assert argv != seccomp.confined_command(["/bin/sh", "/kryt-build.sh"])
