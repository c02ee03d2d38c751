"""The backend interface and the parts every backend shares (socket dir, dialing, stop)."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import weakref
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import ClassVar

import grpc

from referee.client import CHANNEL_OPTIONS, BotClient, BotUnreachableError
from referee.client import BotCrashedError as ClientCrashed
from sandbox.death import DeathCause, DeathReport
from sandbox.dial import MAX_SUN_PATH, SOCKET_NAME, fd_address, open_bot_socket
from sandbox.errors import (
    BotCrashedError,
    BotNotHealthyError,
    InvalidSubmissionError,
    SandboxInfrastructureError,
)
from sandbox.limits import SandboxLimits
from sandbox.submission import Submission, SubmissionError, load_submission

__all__ = [
    "Backend",
    "RunningBot",
    "SubmissionLike",
    "dial_dir",
    "make_socket_dir",
    "resolve_submission",
    "runtime_dir",
    "safe_label",
    "sweep_socket_dirs",
]

SubmissionLike = Submission | str | os.PathLike[str]
#: Where a sandboxed bot sees its socket directory, and the address it must serve on.
SANDBOX_SOCKET_DIR = "/run/kryt"
SANDBOX_ADDRESS = f"unix://{SANDBOX_SOCKET_DIR}/{SOCKET_NAME}"


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


def make_socket_dir(label: str, *, owner_uid: int | None, shared: bool = False) -> Path:
    """A fresh directory for one bot's socket.

    ``owner_uid``: chown the directory to the bot's uid (needs root). ``shared``: when we
    cannot chown, make it writable for the bot's uid anyway (mode 0777; the runtime
    directory above it is not listable, so its random name is the only way in).
    """
    path = Path(tempfile.mkdtemp(prefix=f"{safe_label(label)}.", dir=runtime_dir()))
    if owner_uid is not None and os.geteuid() == 0:
        os.chown(path, owner_uid, owner_uid)
        os.chmod(path, 0o700)
    elif shared:
        os.chmod(path, 0o777)
    return path


def sweep_socket_dirs(label_prefix: str) -> int:
    """Remove socket directories left by earlier runs whose label starts with the prefix."""
    prefix = safe_label(label_prefix) if label_prefix else ""
    removed = 0
    for child in runtime_dir().iterdir():
        if child.name == "dial":
            for link in child.iterdir():
                if link.name.startswith(prefix):
                    link.unlink(missing_ok=True)
                    removed += 1
            continue
        if re.fullmatch(r"\.?lib-[0-9a-f]{16}|\.lib-.*", child.name):
            continue  # staged bwrap runtimes (sandbox.local.stage_runtime), not a bot's
        if child.name.startswith(prefix) and child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    return removed


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
def _stop_all_at_exit() -> None:
    """Stop bots the caller forgot, so a normal exit leaves no container or socket dir."""
    for bot in list(_LIVE):
        with contextlib.suppress(Exception):
            bot.stop()


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
    ) -> None:
        """``work_dir`` (default: ``sock_dir``) is deleted by :meth:`stop`."""
        self.label = label
        self.limits = limits
        self.sock_dir = sock_dir
        self.work_dir = work_dir or sock_dir
        self.expected_uid = expected_uid
        self.address = ""
        self._channel: grpc.Channel | None = None
        self._client: BotClient | None = None
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

    @property
    def socket_path(self) -> Path:
        """The bot's socket on the host (informational; connect through :attr:`channel`)."""
        return self.sock_dir / SOCKET_NAME

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
        """Kill the bot and remove everything it used. Safe to call any number of times."""
        with self._lock:
            if self._stopped:
                return
            try:
                report = self.death()
                if report is None:
                    self._kill()
                    self._death = DeathReport(
                        cause=DeathCause.STOPPED, detail="stopped by the sandbox"
                    )
            finally:
                self._stopped = True
                _LIVE.discard(self)
                if self._channel is not None:
                    self._channel.close()
                    self._channel = None
                if self._client is not None:
                    self._client.close()
                    self._client = None
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
                if self._dial_link is not None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self._dial_link)
                    self._dial_link = None
                try:
                    self._cleanup()
                finally:
                    shutil.rmtree(self.work_dir, ignore_errors=True)

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

    def _crashed(self, report: DeathReport, when: str) -> BotCrashedError:
        tail = report.log_tail.strip().splitlines()[-5:]
        logs = (" | last output: " + " / ".join(tail)) if tail else ""
        return BotCrashedError(
            f"bot {self.label!r} {when}: {report.describe()}{logs}", label=self.label, death=report
        )

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

    def _connect(self) -> None:
        deadline = time.monotonic() + self.limits.startup_timeout
        fd: int | None = None
        while fd is None:
            report = self.death()
            if report is not None:
                raise self._crashed(report, "exited before creating its socket")
            fd = open_bot_socket(self.sock_dir, self.expected_uid)
            if fd is None:
                if time.monotonic() > deadline:
                    raise BotNotHealthyError(
                        f"bot {self.label!r} did not create its socket within "
                        f"{self.limits.startup_timeout:g} s",
                        label=self.label,
                    )
                time.sleep(0.02)
        self._fd = fd
        self.address = self._unique_address(fd)
        self._client = BotClient(self.address)
        try:
            self._client.wait_healthy(max(0.0, deadline - time.monotonic()), alive=self.alive)
        except BotUnreachableError as exc:
            raise BotNotHealthyError(
                f"bot {self.label!r} did not report SERVING before its startup deadline ({exc})",
                label=self.label,
            ) from None
        except ClientCrashed:
            pass  # it died while starting: reported just below
        report = self.death()
        if report is not None:
            raise self._crashed(report, "exited during start-up")


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

    @abstractmethod
    def start(
        self,
        submission: SubmissionLike,
        limits: SandboxLimits | None = None,
        label: str = "bot",
        *,
        trusted: bool = False,
    ) -> RunningBot:
        """Start the bot and return once its health service answers SERVING.

        Raises :class:`~sandbox.errors.BotStartupError` subclasses for the bot's faults and
        :class:`~sandbox.errors.SandboxInfrastructureError` subclasses for ours. ``label``
        groups the bots of one match (for :meth:`sweep_leftovers`). ``trusted`` marks bots
        the organiser vouches for (bundled examples); only the process backend cares.
        """

    @abstractmethod
    def sweep_leftovers(self, label_prefix: str = "") -> int:
        """Remove containers / socket dirs left by a crashed earlier run; return the count."""
