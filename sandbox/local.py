"""Local backends: bubblewrap under a dedicated uid, and a plain process for trusted bots.

Both run a ``python`` bot with the referee's Python (``/usr/bin/python3.X`` of the same
version when there is one) and the referee's grpcio/protobuf and the SDK packages (bwrap: a
staged, world-readable copy of just those), so no image is needed. bwrap runs a bot of any
other runtime in a read-only copy of its runtime image's file system
(:mod:`sandbox.runtimes.rootfs`), after building a compiled submission there under bwrap
(:meth:`BwrapBackend.artifact_for`); the process backend runs ``python`` only. Output goes
through a pipe into a bounded in-memory tail. Each bot is started in its own process group;
:meth:`LocalBot.stop` kills the whole process tree and waits until it is gone.

- :class:`BwrapBackend` (``bwrap --unshare-all --unshare-user --disable-userns
  --die-with-parent --new-session --clearenv --cap-drop ALL``: no namespace of its own, no
  capability), read-only binds of ``/usr``, the staged runtime and the bot, a
  size-limited tmpfs ``/tmp``, the root remounted read-only) launched through ``prlimit``
  (address space, nofile, fsize, core, nproc) as a non-root uid of its own when the referee
  runs as root (:mod:`sandbox.uids`; builds run as ``KRYT_SANDBOX_USER``, default
  ``kryt-sandbox``). Never as root itself: ``RLIMIT_NPROC`` does not bind root, so a fork
  bomb would reach 32k processes.
- :class:`ProcessBackend`: a plain subprocess with rlimits. No isolation at all, so it only
  runs trusted bots (the bundled examples or ``trusted=True``) unless ``allow_unsafe``.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import functools
import importlib.util
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from sandbox import seccomp
from sandbox.backend import (
    BOT_HOSTNAME,
    SANDBOX_ADDRESS,
    SANDBOX_SOCKET_DIR,
    Backend,
    OutputSince,
    RunningBot,
    SubmissionLike,
    make_socket_dir,
    make_work_dir,
    prepare_socket_dir,
    resolve_submission,
    runtime_dir,
    socket_tmpfs_problem,
    sweep_socket_dirs,
)
from sandbox.bot_runtime import runtime_files
from sandbox.cgroups import BotCgroup, cgroup_layout
from sandbox.death import DeathReport, classify_exit, tail_lines
from sandbox.dial import MAX_SUN_PATH, SOCKET_NAME
from sandbox.errors import (
    BackendUnavailableError,
    CleanupError,
    InvalidSubmissionError,
    LimitsUnavailableError,
    SandboxInfrastructureError,
    UnsafeBackendError,
)
from sandbox.hostfs import mount_tmpfs, remount_read_only, remove_tree
from sandbox.limits import SandboxLimits
from sandbox.reaper import start_reaper
from sandbox.runtimes import (
    ARTIFACT_DIR,
    Runtime,
    RuntimeBuildError,
    UnknownRuntimeError,
    containers,
    get_runtime,
)
from sandbox.runtimes import rootfs as runtime_fs
from sandbox.submission import Submission
from sandbox.supervisor import SUPERVISOR, Report, host_report, parse_report, proven_signal
from sandbox.uids import UidLease, default_pool

__all__ = [
    "DEFAULT_SANDBOX_USER",
    "BwrapBackend",
    "LocalBot",
    "ProcessBackend",
    "UnsafeSandboxWarning",
    "bot_python",
    "project_package_dirs",
]

DEFAULT_SANDBOX_USER = "kryt-sandbox"
#: Packages of this project a bot may import (the SDK and what it needs).
BOT_PACKAGES = ("sdk", "kryt_proto", "referee")
LOG_TAIL_BYTES = 16 * 1024

KILL_WAIT_SECONDS = 60.0
"""How long a killed bot's processes may take to be gone before it counts as our failure. A
normal one is gone in milliseconds; one the kernel is thrashing at its memory limit (paging
its code back in, docs/sandbox.md) answers nothing for seconds on a loaded machine, and
SIGKILL waits for its page faults too."""

#: Open files of one build and the entries its output tmpfs may hold (its processes:
#: ``BuildLimits.processes``, its build cgroup's ``pids.max``).
BUILD_NOFILE = 4096
BUILD_INODES = 100_000
#: Seconds past the build script's own deadline before the build is killed from outside.
BUILD_GRACE_SECONDS = 30
#: Caches a runtime's build writes to (its env names them): copied to /tmp for the build.
WRITABLE_CACHES = ("GOCACHE",)

# Runs inside the process backend's child: limits first, then the bot as __main__, under a
# supervisor when the kernel allows one. The supervisor is a child subreaper: what the bot
# orphans (a grandchild double-forked into a session of its own) is re-parented to it instead
# of to init, so it stays in the bot's process tree, where stopping the bot finds it; and when
# the bot exits on its own, the supervisor kills whatever the bot left, then exits with the
# bot's own status (its signal, re-raised) so a crash is classified as before.
_LAUNCHER = """
import ctypes, os, resource, runpy, signal, sys
for item in os.environ.pop("KRYT_RLIMITS").split(","):
    name, value = item.split("=")
    resource.setrlimit(getattr(resource, name), (int(value), int(value)))
libc = ctypes.CDLL(None, use_errno=True)
def prctl(option, value):
    try:
        return libc.prctl(option, value, 0, 0, 0) == 0
    except Exception:
        return False
def children():
    me, found = str(os.getpid()), []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/" + name + "/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[1] == me:
                    found.append(int(name))
        except (OSError, IndexError, ValueError):
            pass
    return found
def supervise(bot):
    status = None
    while status is None:
        pid, code = os.waitpid(-1, 0)
        if pid == bot:
            status = code
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))
prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the referee
if prctl(36, 1):  # PR_SET_CHILD_SUBREAPER
    supervisor = os.getpid()
    bot = os.fork()
    if bot:
        supervise(bot)
    prctl(1, signal.SIGKILL)  # the bot dies with its supervisor
    if os.getppid() != supervisor:  # it died before the line above
        os._exit(1)
os.umask(0o077)
entry = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
runpy.run_path(entry, run_name="__main__")
"""


class UnsafeSandboxWarning(UserWarning):
    """An untrusted bot runs without any isolation (process backend with allow_unsafe)."""


def _usr_local_mask(python: str) -> list[str]:
    """bwrap options hiding the host's ``/usr/local`` behind an empty read-only tmpfs: the
    operator's own programs and files live there (scripts in ``/usr/local/bin``, settings in
    ``/usr/local/etc``), and a Python bot needs none of it (its packages are the staged
    runtime's). Not when the bots' interpreter itself lives there."""
    local = Path("/usr/local")
    if not local.is_dir() or Path(os.path.realpath(python)).is_relative_to(local):
        return []
    return ["--tmpfs", str(local), "--remount-ro", str(local)]


def bot_python() -> str:
    """The interpreter bots run with: ``KRYT_SANDBOX_PYTHON``, else the system's
    ``/usr/bin/python3.X`` of our version (readable by the sandbox uid), else ours."""
    configured = os.environ.get("KRYT_SANDBOX_PYTHON")
    if configured:
        return configured
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if system.exists():
        return str(system)
    return os.path.realpath(sys.executable)


def project_package_dirs() -> dict[str, Path]:
    """Directories of the project packages bots may import, by package name."""
    found: dict[str, Path] = {}
    for name in BOT_PACKAGES:
        spec = importlib.util.find_spec(name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if locations:
            found[name] = Path(locations[0]).resolve()
    return found


def project_root() -> Path:
    """The folder that holds the project's packages (where ``sdk`` is imported from)."""
    sdk = project_package_dirs().get("sdk")
    if sdk is None:
        raise RuntimeError("the sdk package cannot be found: is Kryt Arena installed?")
    return sdk.parent


def _site_packages() -> list[Path]:
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    return [Path(p).resolve() for p in sorted(paths) if Path(p).is_dir()]


#: What a bot needs from the referee's site-packages (the same set as the Docker image).
RUNTIME_MODULES = ("grpc", "grpc_health", "google/protobuf", "google/_upb", "typing_extensions.py")
_stage_lock = threading.Lock()


#: Caps of the shared runtime's tmpfs while it is staged (about 20 MB in 200 files here);
#: it is read-only afterwards.
LIB_TMPFS_BYTES = 256 * 1024 * 1024
LIB_TMPFS_INODES = 20_000
#: Written last into a staged runtime tmpfs: a mount without it is a stager that died.
STAGED_MARKER = ".staged"


def stage_runtime() -> Path:
    """A world-readable copy of grpc, protobuf and the project's bot packages.

    bwrap binds it read-only at ``/opt/kryt/lib``. Copying (once per content key, under the
    runtime directory) means the sandbox uid never needs to reach the referee's virtualenv
    or source tree, which may live under a private home directory, and that bots see only
    what the Docker image would give them.

    As root (where the socket tmpfs can be mounted) the copy is the root of its own
    read-only tmpfs (``libfs-<key>``), so a bot's ``/proc/self/mountinfo`` shows no host
    path for it; otherwise (trusted bots only) a plain directory ``lib-<key>``.
    """
    from sandbox.base_image import BaseImageSpec

    key = BaseImageSpec().project_key()
    with _stage_lock:
        if os.geteuid() == 0 and socket_tmpfs_problem() is None:
            return _stage_on_tmpfs(runtime_dir() / f"libfs-{key}")
        final = runtime_dir() / f"lib-{key}"
        if final.is_dir():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=".lib-", dir=runtime_dir()))
        try:
            _stage_files(tmp)
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not final.is_dir():
                raise
    return final


def _stage_files(dest: Path) -> None:
    """Copy the runtime modules and the project's bot packages into ``dest``."""
    for site in _site_packages():
        for rel in RUNTIME_MODULES:
            src = site / rel
            if src.is_dir() and not (dest / rel).exists():
                shutil.copytree(src, dest / rel, ignore=_IGNORE)
            elif src.is_file():
                shutil.copyfile(src, dest / rel)
    root = project_root()
    for path in runtime_files(root):
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    for path in [dest, *dest.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def _stage_on_tmpfs(final: Path) -> Path:
    """Stage the runtime into a tmpfs mounted at ``final`` (once per key, across processes:
    an ``flock`` serialises runners; a mount left without its marker is staged again)."""
    lock = os.open(final.with_name(f".{final.name}.lock"), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.ismount(final) and (final / STAGED_MARKER).is_file():
            return final
        remove_tree(final)  # a stager that died half-way (detaches its mount first)
        final.mkdir(mode=0o755)
        try:
            mount_tmpfs(
                final,
                size_bytes=LIB_TMPFS_BYTES,
                inodes=LIB_TMPFS_INODES,
                uid=0,
                gid=0,
                mode=0o755,
                executable=True,  # grpc's extension module is mapped executable
            )
            _stage_files(final)
            (final / STAGED_MARKER).write_text(final.name)
            remount_read_only(final, executable=True)
        except BaseException:
            with contextlib.suppress(CleanupError):
                remove_tree(final)
            raise
        return final
    except OSError as exc:
        raise SandboxInfrastructureError(f"cannot stage the bot runtime in {final}: {exc}") from exc
    finally:
        os.close(lock)


_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def _start_time(pid: int) -> str | None:
    """The start time of ``pid`` (guards against pid reuse), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # A zombie is as good as gone: it holds no resources and is reaped by its parent.
    return None if fields[0] == "Z" else fields[19]


def _descendants(root: int) -> dict[int, str | None]:
    """``root`` and every process below it, with their start times."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    tree: dict[int, str | None] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        tree[pid] = _start_time(pid)
        todo.extend(children.get(pid, []))
    return tree


def _copy_readable(submission: Submission, dest: Path) -> None:
    """Copy a validated submission to ``dest``, world-readable, symlinks kept as links."""
    dest.mkdir(mode=0o755, exist_ok=True)
    for rel in submission.files:
        src, target = submission.root / rel, dest / rel
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        elif src.is_dir():
            target.mkdir(mode=0o755)
        else:
            shutil.copyfile(src, target)
            os.chmod(target, 0o755 if os.access(src, os.X_OK) else 0o644)


def _reachable_by_others(path: Path) -> bool:
    """True when every directory up to ``path`` is searchable by any uid (o+x)."""
    for part in [path, *path.parents]:
        try:
            mode = os.stat(part).st_mode
        except OSError:
            return False
        if not mode & 0o001:
            return False
    return True


class _Tail:
    """Reads a pipe, keeping only the last ``limit`` bytes (and counting all of them).

    A thread reads as output arrives; :meth:`since` first reads what is still waiting in the
    pipe itself, so everything the bot wrote before it answered the referee is counted by
    the time the referee asks. Reads and appends happen under one lock, in pipe order.

    The thread reads at most :attr:`READ_RATE` bytes a second on average (after a burst of
    :attr:`READ_BURST`): moving a bot's output costs this process CPU outside the bot's
    limits, so a bot writing faster waits on its own full pipe, on its own clock."""

    READ_RATE = 1024 * 1024
    """Bytes a second the reader thread takes from a bot's output pipe, on average."""
    READ_BURST = 4 * 1024 * 1024
    """Bytes the reader takes at once before :attr:`READ_RATE` applies (start-up logs)."""

    DRAIN_READS = 32
    """Most reads of what is waiting that one :meth:`since` makes (a bot writing without end
    cannot hold it up)."""

    def __init__(self, stream: IO[bytes], limit: int, head: int = 0) -> None:
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._total = 0
        self._limit = limit
        # The first ``head`` bytes too, and the line ends of all (a build's first error).
        self._head_limit = head
        self._head = bytearray()
        self._newlines = 0
        self._lock = threading.Lock()
        self._stream = stream
        self._fd: int | None = stream.fileno()
        os.set_blocking(self._fd, False)
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        poller = select.poll()
        assert self._fd is not None
        poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        allowance, last = float(self.READ_BURST), time.monotonic()
        try:
            while True:
                poller.poll()
                with self._lock:
                    chunk = self._read_once()
                if chunk is None:
                    return
                now = time.monotonic()
                allowance = min(self.READ_BURST, allowance + (now - last) * self.READ_RATE)
                allowance -= len(chunk)
                last = now
                if allowance < 0:
                    time.sleep(-allowance / self.READ_RATE)
        finally:
            with self._lock:
                self._fd = None
                self._stream.close()

    def _read_once(self) -> bytes | None:
        """One read of what is waiting (b"" if nothing; None at the end); lock held."""
        if self._fd is None:
            return None
        try:
            chunk = os.read(self._fd, 65536)
        except BlockingIOError:
            return b""
        except OSError:
            return None
        if not chunk:
            return None
        self._chunks.append(chunk)
        self._size += len(chunk)
        self._total += len(chunk)
        if self._head_limit:
            self._newlines += chunk.count(b"\n")
            if len(self._head) < self._head_limit:
                self._head += chunk[: self._head_limit - len(self._head)]
        while self._size - len(self._chunks[0]) >= self._limit:
            self._size -= len(self._chunks.popleft())
        return chunk

    def _drain(self) -> None:
        """Read what is waiting in the pipe (lock held)."""
        for _ in range(self.DRAIN_READS):
            if not self._read_once():
                return

    def text(self) -> str:
        with self._lock:
            self._drain()
            data = b"".join(self._chunks)
        return data[-self._limit :].decode(errors="replace")

    def excerpt(self) -> str:
        """The kept head and tail as one text, marking what was dropped between them
        (:func:`sandbox.runtimes.containers.joined_log`); the tail alone without a head."""
        with self._lock:
            self._drain()
            tail, total = b"".join(self._chunks)[-self._limit :], self._total
            head, newlines = bytes(self._head), self._newlines
        if not self._head_limit:
            return tail.decode(errors="replace")
        rest = total - len(head)
        if rest <= len(tail):
            return (head + (tail[len(tail) - rest :] if rest > 0 else b"")).decode(errors="replace")
        # Line ends in the dropped part, less the one ending the head's last line (shown).
        skipped = newlines - head.count(b"\n") - tail.count(b"\n")
        skipped = max(skipped - (0 if head.endswith(b"\n") else 1), 0)
        return containers.joined_log(
            head.decode(errors="replace"), tail.decode(errors="replace"), skipped
        )

    def since(self, position: int) -> OutputSince:
        """The bytes written after the first ``position`` ones, as far as the tail keeps them
        (what is waiting in the pipe is read first)."""
        with self._lock:
            self._drain()
            data, total = b"".join(self._chunks)[-self._limit :], self._total
        wanted = max(total - position, 0)
        return OutputSince(
            data[-wanted:].decode(errors="replace") if wanted else "", wanted > len(data), total
        )

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


#: Runs first inside the launched process: waits until the runner has moved it into the
#: bot's cgroup (one line on stdin), so no bot code ever runs outside it.
_GATE = ["/bin/sh", "-c", 'read -r _ && exec "$0" "$@" </dev/null']


class LocalBot(RunningBot):
    """A bot running as a local process group (bwrap or plain), optionally in a cgroup."""

    def __init__(
        self,
        *,
        backend_name: str,
        argv: list[str],
        popen: dict[str, Any],
        cgroup: BotCgroup | None = None,
        log_head_bytes: int = 0,
        status_fd: int | None = None,
        fsize_places: tuple[str, ...] = (),
        **kwargs: Any,
    ):
        """``log_head_bytes``: keep that much of the start of the output too (a build's
        first errors), for :meth:`log_excerpt`. ``status_fd``: the read end of the pipe the
        bot's supervisor reports its wait status on (:mod:`sandbox.supervisor`); the bot
        owns it from here (closed when read or at stop). ``fsize_places``: where to look
        for the file-size limit's evidence after a SIGXFSZ in our own child's wait status
        (the process backend: :func:`sandbox.supervisor.host_report`)."""
        super().__init__(**kwargs)
        self.backend_name = backend_name  # type: ignore[misc]
        self.cgroup = cgroup
        self._status_fd = status_fd
        self._fsize_places = fsize_places
        self._tree: dict[int, str | None] = {}
        self._started = time.time()
        try:
            self.process = subprocess.Popen(
                [*_GATE, *argv] if cgroup else argv,
                stdin=subprocess.PIPE if cgroup else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                process_group=0,
                close_fds=True,
                **popen,
            )
        except OSError as exc:
            self._close_status()
            raise SandboxInfrastructureError(f"could not launch {argv[0]}: {exc}") from exc
        assert self.process.stdout is not None
        self._tail = _Tail(
            self.process.stdout, min(self.limits.log_bytes, LOG_TAIL_BYTES), log_head_bytes
        )
        if cgroup is not None:
            self._open_gate(cgroup)

    def _open_gate(self, cgroup: BotCgroup) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            cgroup.join(self.process.pid)
            stdin.write(b"go\n")
            stdin.close()
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self.stop()
            if isinstance(exc, OSError):
                code = self.process.poll()
                raise SandboxInfrastructureError(
                    f"could not release bot {self.label!r} into its cgroup: {exc}"
                    f" (launcher exit status {code}; output: {tail_lines(self.logs(), 3)!r})"
                ) from exc
            raise

    @property
    def pid(self) -> int:
        """Process id (and process group id) of the launched process."""
        return self.process.pid

    def cpu_seconds(self) -> float | None:
        """CPU time of the bot's whole tree so far (cgroup accounting), if measured."""
        return self.cgroup.cpu_seconds() if self.cgroup else None

    def memory_peak(self) -> int | None:
        """Highest memory charge of the bot's tree so far (bytes), if measured."""
        return self.cgroup.memory_peak() if self.cgroup else None

    def _poll(self) -> DeathReport | None:
        code = self.process.poll()
        if code is None:
            return None
        self._tail.join(0.5)
        cgroup = self.cgroup
        oom = cgroup is not None and cgroup.oom_kills() > 0
        full = cgroup is not None and cgroup.memory_limit_hits() > 0
        refused = cgroup is not None and cgroup.process_refusals() > 0
        # bwrap exits 128 + N for a signal, as for a bot's own exit(128 + N): only the
        # supervisor's report (or a negative code, the wait status of our own child) says
        # a signal killed the bot, and SIGXFSZ only with a file at the limit.
        report = self._reported_signal()
        if report is None:  # our own child's wait status, judged on the same evidence
            limit, since = self.limits.fsize_bytes, self._started - 1.0
            report = host_report(code, self._fsize_places, limit, since)
        sig, detail = proven_signal(report, self.limits.fsize_bytes)
        if detail and code < 0:
            code = 128 - code  # no signal to classify on: the status a sandbox would give
        return classify_exit(
            code,
            signal_number=sig,
            oom_killed=oom,
            memory_limit_hit=full,
            process_limit_hit=refused,
            log_tail=self.logs(),
            detail=detail,
        )

    def _reported_signal(self) -> Report | None:
        """The signal death the supervisor reported (once: the pipe is closed after)."""
        fd, self._status_fd = self._status_fd, None
        if fd is None:
            return None
        try:
            os.set_blocking(fd, False)
            data = os.read(fd, 64)
        except OSError:
            data = b""  # nothing written: no report, no evidence
        finally:
            os.close(fd)
        return parse_report(data)

    def _close_status(self) -> None:
        fd, self._status_fd = self._status_fd, None
        if fd is not None:
            os.close(fd)

    def _kill(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        # Snapshot the whole tree first: processes that left the group (setsid, bwrap's
        # --new-session) are still descendants, and are killed one by one.
        self._tree.update(_descendants(self.process.pid))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid, start in self._tree.items():
            if start is not None and _start_time(pid) == start:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def _cleanup(self) -> None:
        # The main process may have exited while children of its group live on.
        self._kill()
        try:
            self.process.wait(timeout=KILL_WAIT_SECONDS)
        except subprocess.TimeoutExpired as exc:
            raise CleanupError(f"bot {self.label!r} survived SIGKILL") from exc
        # Processes in bwrap's pid namespace die asynchronously once its init is gone.
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while any(s is not None and _start_time(p) == s for p, s in self._tree.items()):
            if time.monotonic() > deadline:
                raise CleanupError(f"processes of bot {self.label!r} survived")
            time.sleep(0.01)
        self._tail.join(2.0)
        self._close_status()
        if self.cgroup is not None:
            self.cgroup.remove()

    def logs(self) -> str:
        """The last bytes the bot wrote to stdout/stderr."""
        return self._tail.text()

    def log_excerpt(self) -> str:
        """The first ``log_head_bytes`` and the last bytes of the output, marking what was
        dropped between (:func:`sandbox.runtimes.containers.joined_log`)."""
        return self._tail.excerpt()

    def output_since(self, position: int) -> OutputSince:
        """What the bot wrote after its first ``position`` bytes of output."""
        return self._tail.since(position)


def _mount_code_tmpfs(submission: Submission, code_dir: Path) -> None:
    """A tmpfs at ``code_dir`` just big enough for the submission's copy.

    Its root is what bwrap binds at ``/bot``, so the bot's ``/proc/self/mountinfo`` shows
    ``/`` instead of the host path of its work directory (runtime directory, label and
    runner token). Executable: a Python bot may ship an extension module.
    """
    files = [submission.root / rel for rel in submission.files]
    size = sum(p.stat().st_size for p in files if p.is_file() and not p.is_symlink())
    _mount_sized_tmpfs(code_dir, size, len(files) + 1, what="bot code")


def _mount_sized_tmpfs(path: Path, size: int, entries: int, *, what: str) -> None:
    """A read-write tmpfs at the new directory ``path`` for ``entries`` entries of ``size``
    bytes in all (plus room for their blocks), owned by us; executable."""
    path.mkdir(mode=0o755)
    try:
        mount_tmpfs(
            path,
            size_bytes=size + 4096 * (entries + 1) + (1 << 20),
            inodes=entries + 16,
            uid=0,
            gid=0,
            mode=0o755,
            executable=True,
        )
    except OSError as exc:
        raise SandboxInfrastructureError(f"{what} tmpfs failed: {exc}") from exc


def _tree_size(root: Path) -> tuple[int, int]:
    """(bytes of regular files, entries) below ``root`` (not following links)."""
    size = count = 0
    for path in root.rglob("*"):
        count += 1
        if path.is_file() and not path.is_symlink():
            size += path.stat().st_size
    return size, count


#: Device nodes a bot gets in its read-only /dev (bound from the host's).
DEV_NODES = ("null", "zero", "urandom", "random")


BUILD_HOSTNAME = "build"
"""The host name a build sees: never the machine's."""

NO_NESTED_USERNS = ("--unshare-user", "--disable-userns")
"""bwrap flags that keep a bot from creating user namespaces of its own (bubblewrap 0.8.0+).

Without them a bot can ``unshare(CLONE_NEWUSER)`` inside the sandbox and hold every
capability there (mount, raw and netfilter sockets): no escape by itself, but the usual
first step of a kernel exploit. Docker's default seccomp profile refuses it too."""


@functools.cache
def nested_userns_problem(bwrap: str, uid: int, gid: int) -> str | None:
    """Why this ``bwrap``, run as ``uid``, cannot disable user namespaces inside the
    sandbox (one line), or None when :data:`NO_NESTED_USERNS` works. Probed once a process."""
    true = shutil.which("true") or "/bin/true"
    argv = [bwrap, "--unshare-all", *NO_NESTED_USERNS, "--ro-bind", "/", "/", "--", true]
    popen: dict[str, Any] = {}
    if os.geteuid() == 0 and uid != 0:
        popen.update(user=uid, group=gid, extra_groups=[])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, **popen)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap {' '.join(NO_NESTED_USERNS)} could not be tried: {exc}"
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[:200] or f"exit status {done.returncode}"
        return f"bwrap {' '.join(NO_NESTED_USERNS)} fails here (needs bubblewrap 0.8.0+): {said}"
    return None


def _seccomp_option(fd: int | None) -> list[str]:
    """bwrap's option loading the seccomp filter from ``fd`` (none without one)."""
    return [] if fd is None else ["--seccomp", str(fd)]


def _pid1_option(status_fd: int | None) -> list[str]:
    """With a supervisor (:func:`supervised`), it is the sandbox's process 1, in place of
    bwrap's own init (which flattens a signal death into ``128 + N``)."""
    return [] if status_fd is None else ["--as-pid-1"]


def supervised(command: list[str], python: str, status_fd: int | None) -> list[str]:
    """``command`` run by :data:`sandbox.supervisor.SUPERVISOR` (with ``python``, inside the
    sandbox), reporting the bot's wait status on ``status_fd``; unchanged without one."""
    if status_fd is None:
        return command
    return [python, "-I", "-S", "-c", SUPERVISOR, str(status_fd), *command]


def _listed(fd: int | None) -> list[int]:
    return [] if fd is None else [fd]


def _proc_dev_tmp(shm_bytes: int, tmp_bytes: int) -> list[str]:
    """bwrap options for ``/proc``, a read-only ``/dev`` and the sized ``/tmp`` tmpfs."""
    cmd = ["--proc", "/proc"]
    # A read-only /dev with only the nodes a bot needs and a small /dev/shm (bwrap's
    # --dev would give a writable tmpfs of half the RAM, outside every limit).
    cmd += ["--size", "65536", "--tmpfs", "/dev"]
    for node in DEV_NODES:
        cmd += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
    cmd += ["--symlink", "/proc/self/fd", "/dev/fd"]
    for number, stream in enumerate(("stdin", "stdout", "stderr")):
        cmd += ["--symlink", f"/proc/self/fd/{number}", f"/dev/{stream}"]
    cmd += ["--dir", "/dev/shm", "--perms", "1777", "--size", str(shm_bytes)]
    cmd += ["--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    cmd += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    return cmd


class BwrapBackend(Backend):
    """Bubblewrap sandbox under a dedicated non-root uid (see the module docstring)."""

    name = "bwrap"

    def __init__(self, reason: str = "", *, user: str | None = None) -> None:
        super().__init__(reason)
        bwrap = shutil.which("bwrap")
        prlimit = shutil.which("prlimit")
        if bwrap is None or prlimit is None:
            raise BackendUnavailableError("bwrap backend needs `bwrap` and `prlimit` on PATH")
        self.bwrap, self.prlimit = bwrap, prlimit
        if os.geteuid() == 0:
            name = user or os.environ.get("KRYT_SANDBOX_USER") or DEFAULT_SANDBOX_USER
            try:
                entry = pwd.getpwnam(name)
            except KeyError as exc:
                raise BackendUnavailableError(
                    f"bwrap backend runs bots as the dedicated user {name!r}, which does not "
                    "exist (useradd --system kryt-sandbox, or set KRYT_SANDBOX_USER)"
                ) from exc
            if entry.pw_uid == 0:
                raise BackendUnavailableError(f"sandbox user {name!r} must not be root")
            self.uid, self.gid = entry.pw_uid, entry.pw_gid
            python = Path(bot_python())
            if not _reachable_by_others(python.parent):
                raise BackendUnavailableError(
                    f"the sandbox user {name!r} cannot reach the interpreter {python}; install "
                    "Debian's python3 or set KRYT_SANDBOX_PYTHON to a world-readable one"
                )
        else:
            self.uid, self.gid = os.geteuid(), os.getegid()
        self.userns_problem = nested_userns_problem(self.bwrap, self.uid, self.gid)
        """Why bots here could create user namespaces of their own, or None (see
        :data:`NO_NESTED_USERNS`); untrusted bots are then refused."""
        self._userns_flags = [] if self.userns_problem else list(NO_NESTED_USERNS)
        self.seccomp_problem = seccomp.filter_problem()
        """Why bots here run without the seccomp filter (:mod:`sandbox.seccomp`), or None;
        untrusted bots are then refused."""

    def cpu_clock_problem(self) -> str | None:
        """A bot's CPU time is read from its cgroup: none here, no CPU clock."""
        layout = cgroup_layout()
        if isinstance(layout, str):
            return f"bwrap has no per-bot cgroup to measure a bot's CPU time: {layout}"
        return None

    def untrusted_problem(self) -> str | None:
        """Why untrusted bots are refused here: no per-bot cgroup or no socket tmpfs."""
        layout = cgroup_layout()
        if isinstance(layout, str):
            return f"bwrap cannot enforce per-bot memory/pids limits: {layout}"
        if self.userns_problem:
            return f"bwrap cannot keep bots from creating user namespaces: {self.userns_problem}"
        if self.seccomp_problem:
            return f"bwrap cannot filter bots' system calls: {self.seccomp_problem}"
        problem = socket_tmpfs_problem()
        if problem:
            return f"bwrap cannot bound the socket directory: {problem}"
        return None

    def argv(
        self,
        binds: dict[str, tuple[int, bool]],
        entry: str,
        limits: SandboxLimits,
        *,
        cgroup: bool = False,
        seccomp_fd: int | None = None,
        status_fd: int | None = None,
    ) -> list[str]:
        """The full ``prlimit … bwrap …`` command line for one bot.

        ``binds`` maps a sandbox path to ``(directory fd, writable)``: directories are
        handed to bwrap as open descriptors because the sandbox uid may not be allowed to
        traverse the host paths leading to them (e.g. a 0700 runtime directory).
        ``cgroup``: the bot runs in its own cgroup, which bounds its processes; only
        without one is ``RLIMIT_NPROC`` (shared by every process of the uid) the bound.
        ``seccomp_fd``: a descriptor holding the seccomp filter (:func:`seccomp.filter_fd`),
        passed to the child. ``status_fd``: the write end of the pipe the bot's supervisor
        reports on (:func:`supervised`), passed to the child.
        """
        address_space = limits.memory_bytes + limits.address_space_slack_bytes
        cmd = [self.prlimit, f"--as={address_space}", f"--nofile={limits.nofile}"]
        cmd += [f"--fsize={limits.fsize_bytes}", "--core=0"]
        if not cgroup:
            cmd += [f"--nproc={limits.pids * 4}"]
        cmd += ["--", self.bwrap, "--unshare-all", *self._userns_flags]
        cmd += _seccomp_option(seccomp_fd)
        cmd += _pid1_option(status_fd)
        # The new UTS namespace starts with the host's name: the one Docker gives instead.
        cmd += ["--die-with-parent", "--new-session", "--hostname", BOT_HOSTNAME]
        cmd += ["--clearenv", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
        for link in ("bin", "lib", "lib64", "sbin"):
            host = Path("/") / link
            if host.is_symlink():
                cmd += ["--symlink", os.readlink(host), f"/{link}"]
            elif host.is_dir():
                cmd += ["--ro-bind", str(host), f"/{link}"]
        python = bot_python()
        if not python.startswith("/usr/"):
            prefix = str(Path(sys.base_prefix).resolve())
            cmd += ["--ro-bind", prefix, prefix]
        cmd += _usr_local_mask(python)
        cmd += _proc_dev_tmp(limits.shm_bytes, limits.tmpfs_bytes)
        pythonpath = ["/opt/kryt/lib"]
        for dest, (fd, writable) in binds.items():
            cmd += ["--bind-fd" if writable else "--ro-bind-fd", str(fd), dest]
        env = {
            "KRYT_BOT_ADDRESS": SANDBOX_ADDRESS,
            "PYTHONPATH": ":".join(pythonpath),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
        }
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        cmd += ["--chdir", "/bot", "--remount-ro", "/", "--"]
        command = ["/bin/sh", "-c", 'umask 000 && exec "$0" -u "$1"', python, entry]
        return cmd + supervised(command, python, status_fd)

    def runtime_problem(self, runtime: str) -> str | None:
        """Why a bot of ``runtime`` cannot start here: its runtime's file system cannot be
        made (its image is missing: the message names the command that builds it). The copy
        a runtime's bots run in is made here when missing, once, as their first start would
        make it; Python bots run on the host's interpreter and need none."""
        try:
            known = get_runtime(runtime)
        except UnknownRuntimeError as exc:
            return str(exc)
        if known.name == "python":
            return None
        try:
            runtime_fs.runtime_rootfs(known)
        except runtime_fs.RootfsError as exc:
            return str(exc)
        return None

    def runtime_argv(
        self,
        binds: dict[str, tuple[int, bool]],
        command: list[str],
        runtime: Runtime,
        limits: SandboxLimits,
        *,
        cgroup: bool = False,
        address_space: bool = True,
        network: bool = False,
        workdir: str = "/bot",
        seccomp_fd: int | None = None,
        status_fd: int | None = None,
        hostname: str = BOT_HOSTNAME,
    ) -> list[str]:
        """The ``prlimit … bwrap …`` command line running ``command`` in the file system
        of ``runtime``'s image (every runtime but ``python``; see :mod:`sandbox.runtimes.rootfs`).

        ``binds`` as for :meth:`argv`, and must hold ``"/"`` (the read-only copy of the
        image). ``address_space``: also cap each process's virtual memory (bots; a build,
        bounded by its memory cgroup, need not). ``network``: keep the host's network (a
        build the organiser allowed to reach its package registry; never a bot).
        ``seccomp_fd`` and ``status_fd`` as for :meth:`argv` (the image's ``python3`` runs
        the supervisor: every runtime image carries it). ``hostname``: what the sandbox is
        called (``bot``, as Docker names a bot's container; a build passes ``build``).
        """
        cmd = [self.prlimit, f"--nofile={limits.nofile}", f"--fsize={limits.fsize_bytes}"]
        cmd += ["--core=0"]
        if address_space:
            cmd += [f"--as={limits.memory_bytes + limits.address_space_slack_bytes}"]
        if not cgroup:
            cmd += [f"--nproc={limits.pids * 4}"]
        cmd += ["--", self.bwrap, "--unshare-all", *self._userns_flags]
        cmd += _seccomp_option(seccomp_fd)
        cmd += _pid1_option(status_fd)
        cmd += ["--die-with-parent", "--new-session", "--hostname", hostname]
        if network:
            cmd += ["--share-net"]
        cmd += ["--clearenv", "--cap-drop", "ALL"]
        fd, _ = binds["/"]
        cmd += ["--ro-bind-fd", str(fd), "/"]
        if network and Path("/etc/resolv.conf").is_file():
            # The image's resolv.conf is empty (Docker fills it per container): the host's.
            cmd += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
        cmd += _proc_dev_tmp(limits.shm_bytes, limits.tmpfs_bytes)
        for dest, (fd, writable) in binds.items():
            if dest != "/":
                cmd += ["--bind-fd" if writable else "--ro-bind-fd", str(fd), dest]
        env = {
            "KRYT_BOT_ADDRESS": SANDBOX_ADDRESS,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            **dict(runtime.env),
        }
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        cmd += ["--chdir", workdir, "--remount-ro", "/", "--"]
        return cmd + supervised(command, "/usr/bin/python3", status_fd)

    def start(
        self,
        submission: SubmissionLike,
        limits: SandboxLimits | None = None,
        label: str = "bot",
        *,
        trusted: bool = False,
        connect: bool = True,
    ) -> LocalBot:
        """Start the bot under bwrap; return once it answers SERVING.

        Untrusted bots need a per-bot cgroup and a socket tmpfs (see
        :meth:`untrusted_problem`); without them they are refused with
        :class:`LimitsUnavailableError`. Trusted bots then run with rlimits only.

        A ``python`` bot runs on the host's interpreter with the staged runtime; a bot of any
        other runtime runs in the file system of its runtime's image (made on first use,
        see :mod:`sandbox.runtimes.rootfs`), after its build (once per submission, see
        :meth:`artifact_for`), with the runtime's limit floors applied.
        """
        sub = resolve_submission(submission)
        runtime = get_runtime(sub.manifest.runtime)
        limits = limits or SandboxLimits()
        if runtime.name != "python":
            limits = containers.effective_limits(runtime, limits)
        problem = self.untrusted_problem()
        if problem and not trusted:
            raise LimitsUnavailableError(
                f"refusing untrusted bot {sub.manifest.name!r}: {problem} (see docs/sandbox.md)"
            )
        rootfs: Path | None = None
        artifact: Path | None = None
        if runtime.name != "python":
            rootfs = runtime_fs.runtime_rootfs(runtime)
            if containers.needs_build(runtime, sub):
                artifact = self.artifact_for(sub, trusted=trusted)
        layout = cgroup_layout()
        start_reaper()
        # A uid of its own (as root; else ours, the only one we can run as): no bot shares a
        # per-uid kernel quota (inotify, epoll watches, RLIMIT_NPROC) with another.
        lease: UidLease | None = default_pool().lease() if os.geteuid() == 0 else None
        uid, gid = (lease.uid, lease.gid) if lease is not None else (self.uid, self.gid)
        try:
            work_dir = make_work_dir(label)
            # The supervisor's report of the bot's wait status (sandbox.supervisor).
            status_read, status_write = os.pipe()
        except BaseException:
            if lease is not None:
                lease.release()
            raise
        cgroup: BotCgroup | None = None
        binds: dict[str, tuple[int, bool]] = {}
        seccomp_fd: int | None = None
        handed = False
        try:
            os.chmod(work_dir, 0o711)
            sock_dir = prepare_socket_dir(
                work_dir, limits, uid=uid, gid=gid, bounded=problem is None
            )
            # A private copy the sandbox uid can read, wherever the submission is stored;
            # the stored original also cannot change under a running bot.
            code_dir = work_dir / "code"
            extra = 1 if artifact is not None and runtime.name == "node" else 0
            if problem is None:
                files = [sub.root / rel for rel in sub.files]
                size = sum(p.stat().st_size for p in files if p.is_file() and not p.is_symlink())
                _mount_sized_tmpfs(code_dir, size, len(files) + 1 + extra, what="bot code")
            _copy_readable(sub, code_dir)
            _adapt_code(runtime, sub, code_dir, artifact)
            sources: dict[str, tuple[Path, bool]] = {}
            if rootfs is None:
                sources["/opt/kryt/lib"] = (stage_runtime(), False)
            else:
                sources["/"] = (rootfs, False)
            sources["/bot"] = (code_dir, False)
            if artifact is not None:
                # A per-bot copy on its own tmpfs: mountinfo shows no host path for it.
                artifact_copy = work_dir / "artifact"
                if problem is None:
                    size, count = _tree_size(artifact)
                    _mount_sized_tmpfs(artifact_copy, size, count + 1, what="build artifact")
                runtime_fs.copy_tree(artifact, artifact_copy)
                sources[ARTIFACT_DIR] = (artifact_copy, False)
            if problem is None:
                for path in (code_dir, work_dir / "artifact"):
                    if path.is_dir():
                        try:
                            remount_read_only(path, executable=True)
                        except OSError as exc:
                            raise SandboxInfrastructureError(f"bot tmpfs: {exc}") from exc
            if not isinstance(layout, str):
                cgroup = BotCgroup.create(
                    layout,
                    work_dir.name,
                    memory_bytes=limits.memory_bytes,
                    pids=limits.pids,
                    # As Docker's nano_cpus: a bot spinning many processes (on its turn or
                    # its opponent's) takes at most this much of the host's CPU.
                    cpus=limits.cpus,
                )
            sources[SANDBOX_SOCKET_DIR] = (sock_dir, True)
            for dest, (path, writable) in sources.items():
                fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                binds[dest] = (fd, writable)
            if self.seccomp_problem is None:
                seccomp_fd = seccomp.filter_fd()
            popen: dict[str, Any] = {
                "env": {"PATH": "/usr/bin:/bin"},
                "cwd": "/",
                "pass_fds": [fd for fd, _ in binds.values()] + _listed(seccomp_fd) + [status_write],
            }
            if os.geteuid() == 0:
                popen.update(user=uid, group=gid, extra_groups=[])
            if rootfs is None:
                argv = self.argv(
                    binds,
                    sub.manifest.entry,
                    limits,
                    cgroup=cgroup is not None,
                    seccomp_fd=seccomp_fd,
                    status_fd=status_write,
                )
            else:
                command = containers.launch_command(runtime, sub, limits)
                argv = self.runtime_argv(
                    binds,
                    command,
                    runtime,
                    limits,
                    cgroup=cgroup is not None,
                    seccomp_fd=seccomp_fd,
                    status_fd=status_write,
                )
            handed = True  # the bot owns the read end from here, even if it fails
            bot = LocalBot(
                backend_name=self.name,
                argv=argv,
                popen=popen,
                cgroup=cgroup,
                label=label,
                limits=limits,
                sock_dir=sock_dir,
                expected_uid=uid,
                work_dir=work_dir,
                runtime=runtime.name,
                status_fd=status_read,
                uid_lease=lease,
            )
        except BaseException:
            if not handed:
                os.close(status_read)
            with contextlib.suppress(CleanupError):
                if cgroup is not None:
                    cgroup.remove()
            with contextlib.suppress(CleanupError):
                remove_tree(work_dir)
            if lease is not None:
                lease.release()
            raise
        finally:
            for fd in [fd for fd, _ in binds.values()] + _listed(seccomp_fd) + [status_write]:
                os.close(fd)
        if connect:
            bot.connect()
        return bot

    def artifact_for(self, submission: SubmissionLike, *, trusted: bool = False) -> Path:
        """The build artifact of a compiled ``submission`` (built on first use, cached by the
        submission's hash and its runtime image's key, immutable afterwards).

        The build runs like the Docker backend's build stage: the runtime's build script
        (:func:`sandbox.runtimes.containers.build_script`: wall time and output size bounds)
        under bwrap in the runtime's file system, as the sandbox uid, with the sources
        read-only at ``/src``, ``/artifact`` a tmpfs of the output bound, no network unless
        the organiser allows it, and a memory + pids cgroup of
        :class:`~sandbox.runtimes.BuildLimits` with its CPU quota (``cpus``). Its lock file
        is removed when the build ends. A failed build is
        :class:`~sandbox.runtimes.RuntimeBuildError` ending with the compiler's output; it is
        remembered (:data:`~sandbox.runtimes.containers.FAILED_BUILDS`, per process) and raised
        again at once on later calls. A failure of ours is tried again next time.
        """
        sub = resolve_submission(submission)
        runtime = get_runtime(sub.manifest.runtime)
        problem = self.untrusted_problem()
        if problem and not trusted:
            raise LimitsUnavailableError(
                f"refusing to build untrusted bot {sub.manifest.name!r}: {problem}"
                " (see docs/sandbox.md)"
            )
        final = runtime_fs.artifact_dir(runtime, sub.sha256)
        if final.is_dir():
            return final
        # A submission that did not build is not built again (the author's error, again).
        key = f"bwrap:{final}"
        containers.FAILED_BUILDS.check(key)
        with runtime_fs.locked(final.with_name(f".{final.name}.lock"), remove=True):
            if not final.is_dir():
                containers.FAILED_BUILDS.check(key)
                try:
                    self._build(sub, runtime, final, bounded=problem is None)
                except BaseException as exc:
                    containers.FAILED_BUILDS.remember(key, exc)
                    raise
        return final

    def _build(self, sub: Submission, runtime: Runtime, final: Path, *, bounded: bool) -> None:
        """Run ``runtime``'s build of ``sub`` and store its output at ``final``."""
        build = runtime.build_limits
        rootfs = runtime_fs.runtime_rootfs(runtime)
        layout = cgroup_layout()
        online = containers.build_network_allowed(runtime)
        limits = SandboxLimits(
            memory_bytes=build.memory_bytes,
            pids=build.processes,
            nofile=BUILD_NOFILE,
            fsize_bytes=build.output_bytes,
            tmpfs_bytes=build.memory_bytes,
            log_bytes=containers.BUILD_LOG_BYTES,
        )
        start_reaper()
        work_dir = make_work_dir(f"build-{runtime.name}")
        cgroup: BotCgroup | None = None
        binds: dict[str, tuple[int, bool]] = {}
        seccomp_fd: int | None = None
        process: LocalBot | None = None
        try:
            os.chmod(work_dir, 0o711)
            src, out = work_dir / "src", work_dir / "out"
            if bounded:
                _mount_code_tmpfs(sub, src)
            _copy_readable(sub, src)
            out.mkdir(mode=0o755)
            try:
                if bounded:
                    remount_read_only(src, executable=True)
                    mount_tmpfs(
                        out,
                        size_bytes=build.output_bytes + (1 << 20),
                        inodes=BUILD_INODES,
                        uid=self.uid,
                        gid=self.gid,
                        mode=0o755,
                        executable=True,
                    )
                elif os.geteuid() == 0:
                    os.chown(out, self.uid, self.gid)
            except OSError as exc:
                raise SandboxInfrastructureError(f"build tmpfs: {exc}") from exc
            if not isinstance(layout, str):
                # A CPU quota as Docker's build steps get (BuildLimits.cpus): a compiling
                # submission cannot take every core from the bots playing.
                cgroup = BotCgroup.create(
                    layout,
                    work_dir.name,
                    memory_bytes=build.memory_bytes,
                    pids=build.processes,
                    cpus=build.cpus,
                )
            for dest, (path, writable) in {
                "/": (rootfs, False),
                "/src": (src, False),
                ARTIFACT_DIR: (out, True),
            }.items():
                binds[dest] = (os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), writable)
            script = containers.build_script(runtime, online=online)
            for key, value in runtime.env:
                if key in WRITABLE_CACHES:
                    # The image's warm cache is read-only here: the build gets a copy in /tmp.
                    copy = f"/tmp/kryt-{key.lower()}"
                    script = f"cp -R {value} {copy} && export {key}={copy}\n{script}"
            if self.seccomp_problem is None:
                seccomp_fd = seccomp.filter_fd(build=True)
            popen: dict[str, Any] = {
                "env": {"PATH": "/usr/bin:/bin"},
                "cwd": "/",
                "pass_fds": [fd for fd, _ in binds.values()] + _listed(seccomp_fd),
            }
            if os.geteuid() == 0:
                popen.update(user=self.uid, group=self.gid, extra_groups=[])
            argv = self.runtime_argv(
                binds,
                ["/bin/sh", "-c", script],
                runtime,
                limits,
                cgroup=cgroup is not None,
                address_space=cgroup is None,
                hostname=BUILD_HOSTNAME,
                network=online,
                workdir="/src",
                seccomp_fd=seccomp_fd,
            )
            process = LocalBot(
                backend_name=self.name,
                argv=argv,
                popen=popen,
                cgroup=cgroup,
                label=work_dir.name,
                limits=limits,
                sock_dir=work_dir,
                expected_uid=self.uid,
                work_dir=work_dir,
                log_head_bytes=containers.BUILD_LOG_HEAD_BYTES,
            )
            cgroup = None  # the process owns it now
            deadline = time.monotonic() + build.seconds + BUILD_GRACE_SECONDS
            report = process.death()
            while report is None and time.monotonic() < deadline:
                time.sleep(0.1)
                report = process.death()
            name = f"{sub.manifest.name} {sub.manifest.version} ({runtime.name})"
            if report is None:
                raise RuntimeBuildError(
                    f"{name} did not build: the build did not finish within {build.seconds} s"
                )
            if report.exit_code == 0:
                runtime_fs.store_artifact(out, final)
                return
            # Killed for memory: the same words as the Docker build (containers.build_failure).
            message = containers.build_failure(
                runtime,
                sub,
                [{"stream": process.log_excerpt()}],
                out_of_memory=report.oom_killed,
            )
            if message is not None:
                raise RuntimeBuildError(message)
            raise SandboxInfrastructureError(
                f"the bwrap build of {name} failed: {report.describe()}"
                f" (output: {tail_lines(process.logs(), 5)!r})"
            )
        finally:
            for fd in [fd for fd, _ in binds.values()] + _listed(seccomp_fd):
                os.close(fd)
            if process is not None:
                process.stop()
            else:
                with contextlib.suppress(CleanupError):
                    if cgroup is not None:
                        cgroup.remove()
                with contextlib.suppress(CleanupError):
                    remove_tree(work_dir)

    def sweep_leftovers(self, label_prefix: str = "") -> int:
        """Remove what dead runners left: socket dirs (and their tmpfs), cgroups."""
        return sweep_socket_dirs(label_prefix)


class ProcessBackend(Backend):
    """Plain subprocess with rlimits: for trusted bots only (see the module docstring)."""

    name = "process"
    isolates = False

    def __init__(
        self,
        reason: str = "",
        *,
        allow_unsafe: bool = False,
        trusted_roots: Sequence[str | os.PathLike[str]] | None = None,
    ) -> None:
        super().__init__(reason)
        self.allow_unsafe = allow_unsafe
        if trusted_roots is None:
            sdk = project_package_dirs().get("sdk")
            trusted_roots = [sdk / "examples"] if sdk else []
        self.trusted_roots = [Path(p).resolve() for p in trusted_roots]

    def cpu_clock_problem(self) -> str | None:
        """Plain processes are not accounted: no CPU clock."""
        return "the process sandbox does not measure a bot's CPU time"

    def runtime_problem(self, runtime: str) -> str | None:
        """Bots run with the host's Python: building and running any other runtime needs a
        runtime image, which only the Docker and bwrap backends provide."""
        if runtime == "python":
            return None
        return (
            f"a {runtime} bot is built and run by a sandbox (the Docker and bwrap backends);"
            f" the {self.name} backend runs Python bots only"
        )

    def untrusted_problem(self) -> str | None:
        """Untrusted bots are refused unless ``allow_unsafe`` (``--unsafe``)."""
        if self.allow_unsafe:
            return None
        return (
            "plain processes cannot contain it: install Docker or bubblewrap, or pass --unsafe"
            " (a stored tournament: kryt tournament set ID sandbox.allow_unsafe=true)"
        )

    def is_trusted(self, root: Path) -> bool:
        """True when ``root`` lies inside one of the trusted folders (bundled examples)."""
        resolved = root.resolve()
        return any(resolved.is_relative_to(base) for base in self.trusted_roots)

    def start(
        self,
        submission: SubmissionLike,
        limits: SandboxLimits | None = None,
        label: str = "bot",
        *,
        trusted: bool = False,
        connect: bool = True,
    ) -> LocalBot:
        """Start the bot as a plain process; untrusted bots need ``allow_unsafe``."""
        limits = limits or SandboxLimits()
        sub = resolve_submission(submission)
        problem = self.runtime_problem(sub.manifest.runtime)
        if problem is not None:
            raise InvalidSubmissionError(f"{sub.manifest.name} {sub.manifest.version}: {problem}")
        if not (trusted or self.is_trusted(sub.root)):
            if not self.allow_unsafe:
                raise UnsafeBackendError(
                    f"refusing to run untrusted bot {sub.manifest.name!r} ({sub.root}) without "
                    "a sandbox: install Docker or bubblewrap, or pass --unsafe (a stored"
                    " tournament: kryt tournament set ID sandbox.allow_unsafe=true)"
                )
            warnings.warn(
                f"running untrusted bot {sub.manifest.name!r} WITHOUT isolation (--unsafe): "
                "it can read and change anything your user can",
                UnsafeSandboxWarning,
                stacklevel=2,
            )
        sock_dir = make_socket_dir(label, owner_uid=None)
        sock_path = sock_dir / SOCKET_NAME
        if len(str(sock_path)) > MAX_SUN_PATH:
            remove_tree(sock_dir)
            raise SandboxInfrastructureError(
                f"socket path {str(sock_path)!r} exceeds {MAX_SUN_PATH} bytes; "
                "set KRYT_SANDBOX_RUNTIME_DIR to a shorter directory"
            )
        address_space = limits.memory_bytes + limits.address_space_slack_bytes
        rlimits = {
            "RLIMIT_AS": address_space,
            "RLIMIT_NOFILE": limits.nofile,
            "RLIMIT_FSIZE": limits.fsize_bytes,
            "RLIMIT_CORE": 0,
        }
        pythonpath = [str(p.parent) for p in project_package_dirs().values()]
        env = {
            "KRYT_BOT_ADDRESS": f"unix://{sock_path}",
            "KRYT_RLIMITS": ",".join(f"{k}={v}" for k, v in rlimits.items()),
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(pythonpath)),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
        }
        argv = [sys.executable, "-u", "-c", _LAUNCHER, sub.manifest.entry]
        try:
            bot = LocalBot(
                backend_name=self.name,
                argv=argv,
                popen={"env": env, "cwd": str(sub.root)},
                label=label,
                limits=limits,
                sock_dir=sock_dir,
                expected_uid=os.geteuid(),
                runtime=sub.manifest.runtime,
                # Its working directory, the one place it is given (it can write anywhere
                # its user can: only what it wrote there since it started is evidence).
                fsize_places=(str(sub.root),),
            )
        except BaseException:
            with contextlib.suppress(CleanupError):
                remove_tree(sock_dir)
            raise
        if connect:
            bot.connect()
        return bot

    def sweep_leftovers(self, label_prefix: str = "") -> int:
        """Remove stale socket dirs (plain bots die with the referee via PDEATHSIG)."""
        return sweep_socket_dirs(label_prefix)


def _adapt_code(runtime: Runtime, sub: Submission, code_dir: Path, artifact: Path | None) -> None:
    """What the Docker backend's submission image does to ``/bot``, on the bwrap copy:
    a ``native`` entry is made executable (stored submissions lose their modes), and a
    ``node`` build's ``node_modules`` is linked into ``/bot`` (``import`` ignores
    NODE_PATH; a shipped ``node_modules`` stays)."""
    if runtime.name == "native":
        entry = code_dir / sub.manifest.entry
        if entry.is_file() and not entry.is_symlink():
            entry.chmod(0o755)
    if runtime.name == "node" and artifact is not None:
        link = code_dir / "node_modules"
        if (artifact / "node_modules").is_dir() and not os.path.lexists(link):
            os.symlink(f"{ARTIFACT_DIR}/node_modules", link)
