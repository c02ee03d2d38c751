"""The backend interface and the parts every backend shares (socket dir, dialing, stop)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import re
import stat
import tempfile
import threading
import time
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar

import grpc

from referee.client import CHANNEL_OPTIONS, AsyncBotClient, BotClient, BotUnreachableError
from referee.client import BotCrashedError as ClientCrashed
from sandbox.death import OUTPUT_LINES, STILL_RUNNING, DeathCause, DeathReport, output_note
from sandbox.dial import MAX_SUN_PATH, SOCKET_NAME, fd_address, open_bot_socket
from sandbox.errors import (
    BotCrashedError,
    BotNotHealthyError,
    CleanupError,
    InvalidSubmissionError,
    SandboxInfrastructureError,
)
from sandbox.hostfs import mount_tmpfs, remove_tree
from sandbox.limits import SandboxLimits
from sandbox.runner import RunnerId, RunnerState, current_runner
from sandbox.submission import Submission, SubmissionError, load_submission
from sandbox.uids import UidLease

CRASH_OUTPUT_LINES = OUTPUT_LINES
"""Lines of a bot's last output kept in the error of a start-up failure (a crash, or a
timeout: socket, SERVING, handshake) and with a move timeout's forfeit."""

__all__ = [
    "Backend",
    "RunningBot",
    "SubmissionLike",
    "dial_dir",
    "make_socket_dir",
    "make_work_dir",
    "no_socket_reason",
    "prepare_socket_dir",
    "resolve_submission",
    "runtime_dir",
    "safe_label",
    "socket_tmpfs_problem",
    "stop_all",
    "sweep_socket_dirs",
]

log = logging.getLogger("sandbox")

SubmissionLike = Submission | str | os.PathLike[str]
BOT_HOSTNAME = "bot"
"""The host name every backend gives a bot: never the machine's."""
#: Where a sandboxed bot sees its socket directory, and the address it must serve on.
SANDBOX_SOCKET_DIR = "/run/kryt"
SANDBOX_ADDRESS = f"unix://{SANDBOX_SOCKET_DIR}/{SOCKET_NAME}"


def no_socket_reason(runtime: str | None, seconds: float) -> str:
    """Why a bot of ``runtime`` that kept running never got its socket within ``seconds``,
    in the words of its author.

    A Java author never makes the socket: the runtime's launcher gives ``main`` a loopback
    ``host:port`` in ``args[0]`` and binds the Unix socket itself once that port answers
    (docs/protocol.md), so what failed is that nothing answered on the port. Every other
    runtime serves on ``$KRYT_BOT_ADDRESS`` itself. ``None``: the backend did not say.
    """
    if runtime == "java":
        return (
            "nothing answered on the loopback port the bot was given (args[0] of its main)"
            f" within {seconds:g} s"
        )
    return f"the bot did not create its socket within {seconds:g} s"


def safe_label(label: str) -> str:
    """``label`` reduced to characters valid in container names, files and Docker labels."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "-", label).strip(".-")[:60]
    return cleaned or "bot"


def runtime_dir() -> Path:
    """Private directory holding the per-bot socket directories (mode 0700, ours)."""
    configured = os.environ.get("KRYT_SANDBOX_RUNTIME_DIR")
    if configured:
        base = Path(configured)
    elif os.geteuid() == 0:
        base = Path("/run/kryt-sandbox")
    else:
        parent = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        base = Path(parent) / f"kryt-sandbox-{os.geteuid()}"
    base.mkdir(mode=0o711, parents=True, exist_ok=True)
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise SandboxInfrastructureError(
            f"sandbox runtime directory {str(base)!r} is not a directory owned by us"
        )
    # Traversable but not listable: the bwrap sandbox uid must reach its own directory
    # (bwrap resolves bind sources by path), while the random names stay unguessable.
    os.chmod(base, 0o711)
    return base


def dial_dir() -> Path:
    """Referee-private directory (0700) holding the per-bot dial links."""
    path = runtime_dir() / "dial"
    path.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise SandboxInfrastructureError(f"{str(path)!r} is not a directory owned by us")
    os.chmod(path, 0o700)
    return path


def make_work_dir(label: str) -> Path:
    """A fresh per-bot directory ``<label>.<runner token>.<random>`` in the runtime dir.

    The runner token (:mod:`sandbox.runner`) lets a later sweep tell leftovers of a dead
    runner from the live bots of another runner sharing the machine.
    """
    prefix = f"{safe_label(label)}.{current_runner().token}."
    return Path(tempfile.mkdtemp(prefix=prefix, dir=runtime_dir()))


def make_socket_dir(label: str, *, owner_uid: int | None, shared: bool = False) -> Path:
    """A fresh directory for one bot's socket, on the host's disk (process backend).

    ``owner_uid``: chown the directory to the bot's uid (needs root). ``shared``: when we
    cannot chown, make it writable for the bot's uid anyway (mode 0777; the runtime
    directory above it is not listable, so its random name is the only way in). Isolating
    backends use :func:`prepare_socket_dir` instead (a sized tmpfs).
    """
    path = make_work_dir(label)
    if owner_uid is not None and os.geteuid() == 0:
        os.chown(path, owner_uid, owner_uid)
        os.chmod(path, 0o700)
    elif shared:
        os.chmod(path, 0o777)
    return path


_tmpfs_problem: list[str | None] = []
_tmpfs_lock = threading.Lock()


def socket_tmpfs_problem() -> str | None:
    """Why bots cannot get a sized tmpfs socket directory here, or None (probed once)."""
    with _tmpfs_lock:
        if not _tmpfs_problem:
            _tmpfs_problem.append(_probe_tmpfs())
        return _tmpfs_problem[0]


def _probe_tmpfs() -> str | None:
    if os.geteuid() != 0:
        return "the socket directory tmpfs needs root (CAP_SYS_ADMIN) to mount"
    probe = Path(tempfile.mkdtemp(prefix=".probe-", dir=runtime_dir()))
    try:
        mount_tmpfs(probe, size_bytes=4096, inodes=4, uid=0, gid=0)
    except OSError as exc:
        return f"cannot mount a tmpfs for socket directories: {exc}"
    finally:
        with contextlib.suppress(CleanupError):
            remove_tree(probe)
    return None


def prepare_socket_dir(
    work_dir: Path, limits: SandboxLimits, *, uid: int, gid: int, bounded: bool
) -> Path:
    """Create ``work_dir/sock`` for a bot running as ``uid:gid`` and return it.

    ``bounded``: mount a private tmpfs there of ``limits.socket_dir_bytes`` and
    ``limits.socket_dir_inodes`` (root only; see :func:`socket_tmpfs_problem`), so nothing
    the bot writes reaches the disk. Otherwise a plain directory the bot's uid may write.
    """
    sock = work_dir / "sock"
    sock.mkdir(mode=0o700)
    if bounded:
        try:
            mount_tmpfs(
                sock,
                size_bytes=limits.socket_dir_bytes,
                inodes=limits.socket_dir_inodes,
                uid=uid,
                gid=gid,
            )
        except OSError as exc:
            raise SandboxInfrastructureError(f"socket directory tmpfs failed: {exc}") from exc
    elif os.geteuid() == 0:
        os.chown(sock, uid, gid)
    elif uid != os.geteuid():
        os.chmod(sock, 0o777)
    return sock


def _runner_of(name: str) -> RunnerId | None:
    parts = name.rsplit(".", 2)
    return RunnerId.parse(parts[1]) if len(parts) == 3 else None


def _is_leftover(name: str, prefix: str) -> bool:
    """A directory of a dead runner (or, without a runner token, an old-style one)."""
    if not name.startswith(prefix):
        return False
    runner = _runner_of(name)
    return runner is None or runner.state() is RunnerState.DEAD


def sweep_socket_dirs(label_prefix: str) -> int:
    """Remove what dead runners left in the runtime directory (label starting with the
    prefix): socket and work directories (with their tmpfs), dial links, bot cgroups.

    Directories of runners that are still alive are never touched. The sweep always
    finishes: a failure is logged and the sweep goes on; returns how many were removed.
    """
    removed, errors = sweep_runtime(label_prefix)
    for error in errors:
        log.warning("sandbox sweep: %s", error)
    return removed


def sweep_runtime(label_prefix: str) -> tuple[int, list[str]]:
    """:func:`sweep_socket_dirs` returning ``(removed, errors)`` instead of logging."""
    from sandbox.cgroups import sweep_cgroups

    prefix = safe_label(label_prefix) if label_prefix else ""
    removed, errors = 0, []
    try:
        children = sorted(runtime_dir().iterdir())
    except (OSError, SandboxInfrastructureError) as exc:
        return 0, [f"cannot list the runtime directory: {exc}"]
    for child in children:
        try:
            if child.name == "uids":
                continue  # uid lock files (sandbox.uids): held by live runners, never removed
            if child.name == "dial":
                for link in child.iterdir():
                    if _is_leftover(link.name, prefix):
                        link.unlink(missing_ok=True)
                        removed += 1
                continue
            if re.fullmatch(r"\.?lib(fs)?-[0-9a-f]{16}|\.lib(fs)?-.*", child.name):
                continue  # staged bwrap runtimes (sandbox.local.stage_runtime), not a bot's
            if child.name.startswith(".probe-"):
                remove_tree(child)
                continue
            if _is_leftover(child.name, prefix) and child.is_dir() and not child.is_symlink():
                remove_tree(child)
                removed += 1
        except (OSError, CleanupError) as exc:
            errors.append(f"{child}: {exc}")
    cgroups, cgroup_errors = sweep_cgroups(prefix)
    return removed + cgroups, errors + cgroup_errors


def resolve_submission(submission: SubmissionLike) -> Submission:
    """Accept a validated :class:`Submission` or a path; bad input is the bot's fault."""
    if isinstance(submission, Submission):
        return submission
    try:
        return load_submission(submission)
    except SubmissionError as exc:
        raise InvalidSubmissionError(f"invalid submission {str(submission)!r}: {exc}") from exc


_LIVE: weakref.WeakSet[RunningBot] = weakref.WeakSet()


@atexit.register
def stop_live_bots() -> None:
    """Stop every bot of this process still running (run at exit, so that a normal exit
    leaves no container or socket dir behind even for bots the caller forgot)."""
    for bot in list(_LIVE):
        with contextlib.suppress(Exception):
            bot.stop()


@dataclass(frozen=True, slots=True)
class OutputSince:
    """A bot's output after a position: ``text``; ``cut`` when the bounded tail no longer
    holds all of it (the oldest part is missing); ``position`` to ask from next time."""

    text: str
    cut: bool
    position: int


class RunningBot(ABC):
    """A started bot: a connected channel plus liveness, death report and cleanup.

    Use as a context manager or call :meth:`stop`; stopping is idempotent and always
    removes the container / kills the process group and deletes the socket directory.
    """

    backend_name: ClassVar[str] = "?"

    def __init__(
        self,
        *,
        label: str,
        limits: SandboxLimits,
        sock_dir: Path,
        expected_uid: int | None,
        work_dir: Path | None = None,
        runtime: str | None = None,
        uid_lease: UidLease | None = None,
    ) -> None:
        """``work_dir`` (default: ``sock_dir``) is deleted by :meth:`stop`. ``runtime``:
        the submission's runtime (``python``, ``java``...), for messages in its author's
        words; None where the backend does not pass it. ``uid_lease``: the bot's own uid
        (:mod:`sandbox.uids`), released by :meth:`stop` once everything else is done."""
        self.label = label
        self.runtime = runtime
        self.limits = limits
        self.sock_dir = sock_dir
        self.work_dir = work_dir or sock_dir
        self.expected_uid = expected_uid
        self.uid_lease = uid_lease
        self.address = ""
        self._channel: grpc.Channel | None = None
        self._client: BotClient | None = None
        self._async_client: AsyncBotClient | None = None
        self._fd: int | None = None
        self._dial_link: Path | None = None
        self._death: DeathReport | None = None
        self._stopped = False
        self._lock = threading.RLock()
        _LIVE.add(self)

    @property
    def client(self) -> BotClient:
        """The referee's connection to this bot, healthy since start-up (valid until
        :meth:`stop`): the one channel the referee plays through."""
        if self._client is None:
            raise RuntimeError(f"bot {self.label!r} has no client (not started or stopped)")
        return self._client

    @property
    def channel(self) -> grpc.Channel:
        """A plain gRPC channel to the bot, for probing it outside the protocol (tests,
        diagnostics); made on first use, closed by :meth:`stop`."""
        if self._stopped or not self.address:
            raise RuntimeError(f"bot {self.label!r} has no channel (not started or stopped)")
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        return self._channel

    def cpu_seconds(self) -> float | None:
        """CPU time of the bot's whole process tree so far, where the backend accounts it
        (a cgroup); None where it cannot."""
        return None

    @abstractmethod
    def _poll(self) -> DeathReport | None:
        """The death report if the bot has ended, else None (must not block)."""

    @abstractmethod
    def _kill(self) -> None:
        """Kill every process of the bot at once."""

    @abstractmethod
    def _cleanup(self) -> None:
        """Release what the backend holds (remove the container, reap the process)."""

    @abstractmethod
    def logs(self) -> str:
        """The tail of the bot's captured stdout and stderr (bounded)."""

    @abstractmethod
    def output_since(self, position: int) -> OutputSince:
        """What the bot wrote after ``position`` of its output (0: since it started), as far
        as the bounded tail still holds it, and the position to pass next time.

        Positions are opaque to callers (a byte count, a log timestamp): only ever pass 0 or
        a position this same bot returned."""

    def alive(self) -> bool:
        """True while the bot is running and has not been stopped."""
        return not self._stopped and self.death() is None

    def death(self) -> DeathReport | None:
        """Why the bot ended, or None while it runs. After :meth:`stop` this stays set."""
        with self._lock:
            if self._death is None and not self._stopped:
                self._death = self._poll()
            return self._death

    def stop(self) -> None:
        """Kill the bot and remove everything it used. Safe to call any number of times.

        Every step runs even when an earlier one fails; failures are ours and raised
        together at the end as one :class:`~sandbox.errors.CleanupError`.
        """
        with self._lock:
            if self._stopped:
                return
            failures: list[BaseException] = []
            try:
                report = self.death()
                if report is None:
                    self._kill()
                    self._death = DeathReport(
                        cause=DeathCause.STOPPED, detail="stopped by the sandbox"
                    )
            except BaseException as exc:
                failures.append(exc)
            self._stopped = True
            _LIVE.discard(self)
            for step in (
                self._close_channel,
                self._close_client,
                self._close_fd,
                self._unlink_dial,
                self._cleanup,
                self._remove_work_dir,
                # Last: its processes are gone by now (a survivor keeps the uid out of the
                # pool anyway, UidPool.lease checks).
                self._release_uid,
            ):
                try:
                    step()
                except BaseException as exc:
                    failures.append(exc)
            if self._death is None:
                self._death = DeathReport(cause=DeathCause.STOPPED, detail="stopped by the sandbox")
            _raise_collected(f"cleanup of bot {self.label!r}", failures)

    def _close_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()

    def _close_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()
        async_client, self._async_client = self._async_client, None
        if async_client is not None:
            async_client.close()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _unlink_dial(self) -> None:
        link, self._dial_link = self._dial_link, None
        if link is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)

    def _remove_work_dir(self) -> None:
        remove_tree(self.work_dir)

    def _release_uid(self) -> None:
        if self.uid_lease is not None:
            self.uid_lease.release()

    def __enter__(self) -> RunningBot:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        # Last resort only; callers must stop() explicitly.
        if not getattr(self, "_stopped", True):
            with contextlib.suppress(Exception):
                self.stop()

    def output_note(self, *, always: bool = False) -> str:
        """How the bot's process stands and its last :data:`CRASH_OUTPUT_LINES` lines of
        output, escaped, to append to the detail of a failure they may explain
        (:func:`sandbox.death.output_note`); '' when it wrote nothing, unless ``always``.

        Reads the output now: call it when a failure happened, never per decision."""
        report = self.death()
        output = self.logs() if report is None or not report.log_tail else report.log_tail
        if not always and not output.strip():
            return ""
        how = report.describe() if report is not None else STILL_RUNNING
        return output_note(how, output, CRASH_OUTPUT_LINES)

    def _crashed(self, report: DeathReport, when: str) -> BotCrashedError:
        # Start-up messages say "the bot", not its label: they reach both bots in GameEnd's
        # detail, and the label is the sandbox's internal name (the run's token in it).
        # How it ended and its output follow on their own lines, in the shape every forfeit
        # that carries the bot's output has (kryt replay shows them below the first line).
        said = output_note(report.describe(), report.log_tail, CRASH_OUTPUT_LINES)
        return BotCrashedError(f"the bot {when}{said}", label=self.label, death=report)

    def connect(self) -> None:
        """Wait for the socket, dial it safely and wait for SERVING (stops the bot on error)."""
        try:
            self._connect()
        except BaseException:
            self.stop()
            raise

    def _unique_address(self, fd: int) -> str:
        """A per-bot dial address: a link in a referee-private directory to the checked fd.

        Descriptor numbers are reused from bot to bot, and gRPC shares connections between
        channels with equal addresses; a unique name keeps clients the caller builds from
        :attr:`address` (with any channel options) from ever reaching an earlier bot.
        """
        link = dial_dir() / self.work_dir.name
        if len(str(link)) > MAX_SUN_PATH:
            return fd_address(fd)
        os.symlink(f"/proc/self/fd/{fd}", link)
        self._dial_link = link
        return f"unix://{link}"

    def _wait_socket(self) -> float:
        """Wait for the bot's socket and dial it safely; return the start-up deadline."""
        deadline = time.monotonic() + self.limits.startup_timeout
        fd: int | None = None
        while fd is None:
            report = self.death()
            if report is not None:
                raise self._crashed(report, "exited before creating its socket")
            fd = open_bot_socket(self.sock_dir, self.expected_uid)
            if fd is None:
                if time.monotonic() > deadline:
                    # Its output usually says why (it serves on a TCP port, it hangs in
                    # its set-up): read once, now that it failed.
                    raise BotNotHealthyError(
                        no_socket_reason(self.runtime, self.limits.startup_timeout)
                        + self.output_note(),
                        label=self.label,
                    )
                time.sleep(0.02)
        self._fd = fd
        self.address = self._unique_address(fd)
        return deadline

    def _unhealthy(self, exc: BotUnreachableError) -> BotNotHealthyError:
        return BotNotHealthyError(
            f"the bot did not report SERVING before its startup deadline ({exc})"
            + self.output_note(),
            label=self.label,
        )

    def _connect(self) -> None:
        deadline = self._wait_socket()
        self._client = BotClient(self.address)
        try:
            self._client.wait_healthy(max(0.0, deadline - time.monotonic()), alive=self.alive)
        except BotUnreachableError as exc:
            raise self._unhealthy(exc) from None
        except ClientCrashed:
            pass  # it died while starting: reported just below
        report = self.death()
        if report is not None:
            raise self._crashed(report, "exited during start-up")

    async def aconnect(self) -> AsyncBotClient:
        """:meth:`connect` for a referee on an event loop (a bot started with
        ``connect=False``): the connection is an :class:`AsyncBotClient` of the running
        loop, and the sandbox's blocking checks run in worker threads."""
        try:
            deadline = await asyncio.to_thread(self._wait_socket)
            client = self._async_client = AsyncBotClient(self.address)

            async def alive() -> bool:
                return await asyncio.to_thread(self.alive)

            try:
                await client.wait_healthy(max(0.0, deadline - time.monotonic()), alive=alive)
            except BotUnreachableError as exc:
                # Reading its output may ask the engine: off the loop, like every check.
                raise await asyncio.to_thread(self._unhealthy, exc) from None
            except ClientCrashed:
                pass  # it died while starting: reported just below
            report = await asyncio.to_thread(self.death)
            if report is not None:
                raise self._crashed(report, "exited during start-up")
            return client
        except BaseException:
            self.stop()
            raise


def _raise_collected(what: str, failures: list[BaseException]) -> None:
    """Raise nothing, the one interruption, or one CleanupError listing every failure."""
    if not failures:
        return
    for exc in failures:
        if not isinstance(exc, Exception):
            raise exc  # KeyboardInterrupt / SystemExit: after every step ran
    details = "; ".join(f"{type(exc).__name__}: {exc}" for exc in failures)
    raise CleanupError(f"{what} failed: {details}") from failures[0]


def stop_all(bots: list[RunningBot]) -> None:
    """Stop every bot, even when stopping one fails; then raise one CleanupError (ours)."""
    failures: list[BaseException] = []
    for bot in bots:
        try:
            bot.stop()
        except BaseException as exc:
            failures.append(exc)
    _raise_collected(f"stopping {len(bots)} bot(s)", failures)


class Backend(ABC):
    """A way of running bots. ``reason`` says why this backend was chosen."""

    name: ClassVar[str] = "?"
    #: False for the plain-process backend: it does not contain hostile bots.
    isolates: ClassVar[bool] = True

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    def describe(self) -> str:
        """``"<name>: <reason>"`` for start-up logs."""
        return f"{self.name}: {self.reason}" if self.reason else self.name

    def cpu_clock_problem(self) -> str | None:
        """Why this backend cannot measure a bot's CPU time here (one line), or None.

        A CPU clock (``TimeControl.clock == "cpu"``) needs it; where it is missing the
        runner plays on the wall clock and says so, rather than record a clock it did not
        keep.
        """
        return None

    def untrusted_problem(self) -> str | None:
        """Why this backend would refuse untrusted bots here (one line), or None.

        ``start()`` raises :class:`~sandbox.errors.LimitsUnavailableError` (or
        ``UnsafeBackendError`` for the process backend) with this reason for such bots;
        call it up front to fail a tournament before its first game.
        """
        return None

    def runtime_problem(self, runtime: str) -> str | None:
        """Why this backend cannot run a bot of ``runtime`` (a canonical name of
        :mod:`sandbox.runtimes`, as in ``Manifest.runtime``) here, in one line, or None.

        ``start()`` refuses such a bot with :class:`~sandbox.errors.InvalidSubmissionError`
        at every start; call this up front to refuse it before the first game.
        """
        return None

    @abstractmethod
    def start(
        self,
        submission: SubmissionLike,
        limits: SandboxLimits | None = None,
        label: str = "bot",
        *,
        trusted: bool = False,
        connect: bool = True,
    ) -> RunningBot:
        """Start the bot and return once its health service answers SERVING.

        With ``connect=False`` it returns once the bot is launched: the caller connects
        with :meth:`RunningBot.aconnect` (a referee on an event loop) or ``connect()``.

        Raises :class:`~sandbox.errors.BotStartupError` subclasses for the bot's faults and
        :class:`~sandbox.errors.SandboxInfrastructureError` subclasses for ours. ``label``
        groups the bots of one match (for :meth:`sweep_leftovers`). ``trusted`` marks bots
        the organiser vouches for (bundled examples); only the process backend cares.
        """

    @abstractmethod
    def sweep_leftovers(self, label_prefix: str = "") -> int:
        """Remove containers / socket dirs left by a crashed earlier run; return the count."""
