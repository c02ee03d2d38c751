"""``check_bot``: run a bot through the real gRPC path against a reference opponent and
report what a referee would hold against it (crashes, timeouts, slow replies, illegal or
malformed actions, a bad manifest, not stopping when told).

    from sdk.tools.check import check_bot
    report = check_bot("path/to/my-bot", games=10)
    print(report.format())

A bot folder is started as ``python <entry>`` in a subprocess serving on a temporary Unix
socket (no sandbox: this is a development tool); an address (``host:port`` or
``unix:///...``) checks a bot that is already running.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final, Literal

from referee.client import (
    BotClient,
    BotCrashedError,
    BotFault,
    BotUnreachableError,
    RemotePlayer,
    Reply,
)
from referee.protocol.messages import HANDSHAKE_SECONDS, GameEndReason, TimeControl
from sandbox.death import printable
from sandbox.dial import SOCKET_NAME
from sandbox.limits import DEFAULT_STARTUP_SECONDS, SandboxLimits
from sandbox.submission import Submission, SubmissionError, load_submission
from sdk.bot import Bot
from sdk.server import ADDRESS_ENV
from sdk.tools.local import DEFAULT_TIME_CONTROL, LocalPlayer, SeriesResult, run_series

STDERR_TAIL: Final = 4000

CONNECT_SECONDS: Final = 2.0
"""How long :func:`check_bot` keeps trying to connect to a bot given by its address (one
just started may not be listening yet) before it reports that nothing listens there. A bot
that accepts the connection then has the whole start-up deadline to answer SERVING."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with the bot; ``error`` fails the check, ``warning`` does not."""

    kind: str
    detail: str
    severity: Literal["error", "warning"] = "error"
    games: tuple[int, ...] = ()


@dataclass(slots=True)
class CheckReport:
    """What :func:`check_bot` found."""

    target: str
    name: str = "?"
    version: str = "?"
    series: SeriesResult | None = None
    problems: list[Problem] = field(default_factory=list)
    reply_times: list[float] = field(default_factory=list)
    stderr: str = ""
    sandbox: str = ""
    """The sandbox backend the bot ran in (empty: a plain subprocess or an address)."""
    limits: str = ""
    """The limits the bot ran under, as numbers (when it ran in a sandbox)."""
    hints: list[str] = field(default_factory=list)
    """One-line advice on a known cause of the problems (printed after them)."""

    @property
    def ok(self) -> bool:
        """True when no problem is an error."""
        return not any(p.severity == "error" for p in self.problems)

    def format(self) -> str:
        """A human-readable summary. What the bot controls (its handshake's name and version,
        its error texts, its output) is escaped: it may hold terminal escape sequences."""
        lines = [printable(f"bot {self.name} {self.version} ({self.target})")]
        if self.sandbox:
            lines.append(f"  sandbox: {self.sandbox}")
        if self.limits:
            lines.append(f"  limits: {self.limits}")
        if self.series is not None:
            lines.append(printable(f"  series: {self.series}"))
        if self.reply_times:
            times = sorted(self.reply_times)
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            lines.append(
                f"  replies: {len(times)}, mean {1000 * sum(times) / len(times):.1f} ms, "
                f"p95 {1000 * p95:.1f} ms, max {1000 * times[-1]:.1f} ms"
            )
        for p in self.problems:
            where = f" (games {', '.join(map(str, p.games))})" if p.games else ""
            # A compiler's or a traceback's lines stay lines (indented under the problem).
            text = printable(
                f"{p.severity.upper()} {p.kind}{where}: {p.detail}", keep_newlines=True
            )
            lines.extend(
                "  " + line if n == 0 else "    " + line for n, line in enumerate(text.split("\n"))
            )
        lines.extend(printable(f"  hint: {hint}") for hint in self.hints)
        lines.append("  OK" if self.ok else "  FAILED")
        if not self.ok and self.stderr.strip():
            lines.append("  bot stderr (tail):")
            tail = self.stderr.strip().split("\n")[-20:]
            lines.extend("    " + printable(line) for line in tail)
        return "\n".join(lines)


class SandboxNeededError(SubmissionError):
    """A bot of another runtime than Python checked without a sandbox (which builds it)."""


@contextmanager
def _loaded(path: Path) -> Iterator[Submission]:
    """The submission at ``path``; an archive is unpacked into a temporary folder that is
    removed afterwards (a folder is used where it is)."""
    with tempfile.TemporaryDirectory(prefix="kryt-check-unpack-") as tmp:
        yield load_submission(path, unpack_dir=Path(tmp) / "bot")


@contextmanager
def _started(folder: Path, report: CheckReport) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start the bot folder's entry on a temporary Unix socket; kill it afterwards."""
    with _loaded(folder) as submission, _run_entry(submission, report) as started:
        yield started


_MAX_SOCKET_PATH: Final = 100
"""The longest socket path the check hands a bot: a Unix socket address holds 107 bytes, and
gRPC binds a few less (grpcio 1.85 at most 105), so a margin."""


def _socket_folder() -> Path:
    """A new private folder for the bot's socket, whose path a bot's gRPC server can bind:
    in the temporary folder, or in ``/tmp`` when that one is too deep (a long ``TMPDIR``),
    else the bot could not bind its socket and the check would blame the bot. When ``/tmp``
    cannot be used either, the deep folder it is (the bot's error then says why)."""
    folder = Path(tempfile.mkdtemp(prefix="kryt-check-"))
    if len(os.fsencode(folder / SOCKET_NAME)) <= _MAX_SOCKET_PATH:
        return folder
    try:
        short = Path(tempfile.mkdtemp(prefix="kryt-check-", dir="/tmp"))
    except OSError:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    return short


def _signal_group(group: int, number: signal.Signals) -> None:
    """Send ``number`` to every process of the process group ``group`` (none left: nothing)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, number)


@contextmanager
def _run_entry(
    submission: Submission, report: CheckReport
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    report.name, report.version = submission.manifest.name, submission.manifest.version
    runtime = submission.manifest.runtime
    if runtime != "python":  # this path runs the entry with Python: say so, do not try
        raise SandboxNeededError(
            f"a {runtime} bot is built and run by a sandbox: check it with `kryt bot check"
            " FOLDER --backend bwrap` or `--backend docker` (the check without a sandbox runs"
            " Python bots only)"
        )
    tmp = _socket_folder()
    address = f"unix://{tmp / SOCKET_NAME}"
    env = dict(os.environ)
    env[ADDRESS_ENV] = address
    # Let the bot import this very SDK even when it is not installed (a source checkout).
    here = str(Path(__file__).resolve().parents[2])  # the folder that holds ``sdk/``
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    err: IO[bytes] = (tmp / "stderr.log").open("w+b")
    proc = subprocess.Popen(
        [sys.executable, submission.manifest.entry],
        cwd=submission.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=err,
        stderr=err,
        # A group of its own: what the bot starts is stopped with it (a helper process, a
        # forked worker), as a sandbox would; and a Ctrl-C at the terminal reaches only us.
        start_new_session=True,
    )
    try:
        yield address, proc
    finally:
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                proc.wait(2)
        _signal_group(proc.pid, signal.SIGKILL)  # whatever is left, the bot's children too
        proc.wait()
        err.seek(0)
        report.stderr = err.read()[-STDERR_TAIL:].decode("utf-8", "replace")
        err.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_ready(client: BotClient, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    alive = None if proc is None else (lambda: proc.poll() is None)
    try:
        client.wait_healthy(timeout, alive=alive)
    except BotCrashedError:
        assert proc is not None
        raise BotCrashedError(f"the bot exited with code {proc.wait()} before serving") from None


def _wait_listening(address: str, timeout: float) -> None:
    """Return once something accepts a connection at ``address`` (``host:port`` or
    ``unix:PATH``); raise BotUnreachableError naming it when nothing has within ``timeout``
    seconds (a refused connection is tried again until then: the bot may be starting).

    Health checks alone cannot tell an empty address from a slow bot: gRPC waits for the
    connection as long as the start-up deadline. An address of another form (a gRPC target
    such as ``ipv4:...``) is left to those health checks."""
    target = _socket_address(address)
    if target is None:
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            _connect(target, max(0.05, deadline - time.monotonic()))
            return
        except socket.gaierror as exc:  # no such host: waiting will not make one
            raise BotUnreachableError(f"cannot connect to {address}: {exc.strerror}") from None
        except OSError as exc:
            if time.monotonic() + 0.1 >= deadline:
                reason = exc.strerror or type(exc).__name__
                raise BotUnreachableError(
                    f"nothing listens at {address} ({reason}, tried for {timeout:g} s):"
                    " start the bot serving on that address first"
                ) from None
        time.sleep(0.1)


def _socket_address(address: str) -> str | tuple[str, int] | None:
    """``address`` as what a socket connects to: a Unix socket's path, or a host and port;
    None when it is neither ``unix:PATH`` (``unix:///abs/path``) nor ``host:port``
    (``[v6]:port`` for IPv6)."""
    if address.startswith("unix:"):
        path = address.removeprefix("unix://") if address.startswith("unix://") else address[5:]
        return path if path and hasattr(socket, "AF_UNIX") else None
    host, _, port = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:  # a gRPC target (ipv4:..., dns:...) or an unbracketed IPv6 address
        return None
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def _connect(target: str | tuple[str, int], timeout: float) -> None:
    """Open and close one connection to ``target`` (see :func:`_socket_address`); raises
    OSError when none is made within ``timeout`` seconds."""
    if isinstance(target, str):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
            unix.settimeout(timeout)
            unix.connect(target)
        return
    with socket.create_connection(target, timeout=timeout):
        pass


def _problems_from(series: SeriesResult, seat: int) -> list[Problem]:
    """One problem per forfeit reason, listing the games and quoting the first occurrence."""
    grouped: dict[str, list[tuple[int, str]]] = {}
    for number, game in sorted(series.games.items()):
        if game.forfeit is not None and game.forfeit.seat == seat:
            grouped.setdefault(game.ending.value, []).append((number, game.forfeit.detail))
    return [
        Problem(kind=kind, detail=games[0][1], games=tuple(n for n, _ in games))
        for kind, games in grouped.items()
    ]


def check_bot(
    target: str | os.PathLike[str],
    games: int = 10,
    *,
    seed: int | str = 0,
    opponent: Bot | None = None,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    startup_timeout: float = DEFAULT_STARTUP_SECONDS,
    sandbox: str | None = None,
) -> CheckReport:
    """Play ``games`` games against ``opponent`` (default: the greedy example bot) over gRPC.

    ``target`` is a bot folder (with ``bot.toml``) or the address of a running bot. The bot
    sits in seat 0; the dealer alternates by the series rules, so it plays both first and
    second. Returns a :class:`CheckReport`; nothing is raised for the bot's faults.
    With ``sandbox`` (``"auto"``, ``"docker"``, ``"bwrap"`` or ``"process"``) a bot folder is
    started in that sandbox backend, as a tournament would (your own bot: trusted).
    """
    from sdk.examples import UnknownBuiltinError, resolve_bot_ref
    from sdk.examples.greedy.bot import GreedyBot

    report = CheckReport(target=str(target))
    try:
        target = resolve_bot_ref(str(target))  # builtin:NAME names a bundled bot
    except UnknownBuiltinError as exc:
        report.problems.append(Problem("not found", str(exc)))
        return report
    path = Path(target)
    text = str(target)
    looks_like_address = text.startswith("unix:") or re.fullmatch(r"[\w.\-\[\]:]+:\d+", text)
    if not path.exists() and not looks_like_address:
        report.problems.append(
            Problem(
                "not found",
                f"{text!r} is neither a bot folder nor an address (host:port or unix:///path)",
            )
        )
        return report
    client: BotClient | None = None
    try:
        starter = (
            _sandboxed(path, report, sandbox, startup_timeout)
            if sandbox is not None and path.exists()
            else _maybe_started(path, report)
        )
        with starter as (address, proc):
            if not path.exists():  # an address: else nothing listening there waits 15 s
                _wait_listening(text, CONNECT_SECONDS)
            client = BotClient(address)
            _wait_ready(client, proc, startup_timeout)
            remote = RemotePlayer(client, handshake_timeout=HANDSHAKE_SECONDS)
            if report.name != "?":  # a folder: its manifest names it before the handshake
                remote.name = report.name
            reference = LocalPlayer(opponent if opponent is not None else GreedyBot())

            def record(game: int, seat: int, reply: Reply) -> None:
                if seat == 0:
                    report.reply_times.append(reply.elapsed)

            series = run_series(
                [remote, reference], games, seed, time_control=time_control, on_move=record
            )
            report.series = series
            if remote.reply is not None:
                said = (remote.reply.name, remote.reply.version)
                if report.name != "?" and said != (report.name, report.version):
                    # The arena refuses such a handshake: every game a startup failure.
                    report.problems.append(
                        Problem(
                            "handshake",
                            f"the handshake says it is {said[0]!r} version"
                            f" {said[1]!r}, but its bot.toml says"
                            f" {report.name!r} version {report.version!r}; the arena refuses"
                            " it: send the name and version of bot.toml",
                        )
                    )
                report.name, report.version = said
            report.problems.extend(_problems_from(series, 0))
            refused = sorted(
                n
                for n, game in series.games.items()
                if game.ending is GameEndReason.STARTUP_FAILURE
                and game.forfeit is not None
                and game.forfeit.seat == 0
            )
            if refused and len(refused) < len(series.games):
                # The checker plays on over the stream it has; the arena does not.
                report.problems.append(
                    Problem(
                        "handshake",
                        f"the handshake of game {refused[0]} failed: in the arena such a bot"
                        " forfeits every game (startup failure), so the checker's results of"
                        " the games after it do not show how the bot plays there",
                    )
                )
            move_s = time_control.move_ms / 1000
            slow = [t for t in report.reply_times if t > move_s]
            if slow:
                report.problems.append(
                    Problem(
                        "slow replies",
                        f"{len(slow)} replies took longer than the {move_s:.3f}s move limit "
                        f"(max {max(slow):.3f}s) and ate the time bank",
                        severity="warning",
                    )
                )
            if not client.closed:
                client.shutdown("check finished")
                if proc is not None:
                    try:
                        proc.wait(3)
                    except subprocess.TimeoutExpired:
                        report.problems.append(
                            Problem(
                                "shutdown",
                                "the bot did not exit within 3s after Shutdown",
                                severity="warning",
                            )
                        )
    except SandboxNeededError as exc:
        report.problems.append(Problem("sandbox", str(exc)))
    except SubmissionError as exc:
        report.problems.append(Problem("manifest", str(exc)))
    except BotUnreachableError as exc:
        report.problems.append(Problem("unreachable", str(exc)))
    except BotFault as exc:
        report.problems.append(Problem(exc.reason.value, str(exc)))
    finally:
        if client is not None:
            client.close()
    if not report.ok and path.is_dir():
        report.hints.extend(_start_hints(path, report))
    return report


_NO_KRYT_MODULE: Final = re.compile(r"ModuleNotFoundError: No module named 'kryt[.']")
"""How a bot that imports stubs generated into a ``kryt/`` folder fails to start where the
arena's own ``kryt`` package is importable."""


def _start_hints(folder: Path, report: CheckReport) -> list[str]:
    """Hints for a bot folder that failed: stubs generated as ``kryt/v1/bot_pb2.py`` in a
    ``kryt`` folder without ``__init__.py`` (a namespace package) cannot be imported where
    the arena's command-line package ``kryt`` (a regular package, which Python prefers to a
    namespace package anywhere on the path) is installed: outside a sandbox and under the
    ``process`` backend. Under bwrap and Docker it is not there, so the bot works there."""
    said = "\n".join([report.stderr, *(p.detail for p in report.problems)])
    if not _NO_KRYT_MODULE.search(said):
        return []
    shadowed = [
        d
        for d in sorted(folder.rglob("kryt"))
        if d.is_dir() and not (d / "__init__.py").exists() and not d.is_symlink()
    ][:1]
    return [
        f"{d.relative_to(folder)}/ has no __init__.py: where the arena's own `kryt` package is"
        " installed (this check, the process backend; not bwrap or Docker) Python imports that"
        f" instead, so `kryt.v1` is not found; add an empty {d.relative_to(folder)}/__init__.py"
        " or import the stubs shipped with the SDK (`from kryt_proto.v1 import bot_pb2,"
        " bot_pb2_grpc`); see docs/protocol.md"
        for d in shadowed
    ]


@contextmanager
def _sandboxed(
    path: Path, report: CheckReport, preference: str, startup_timeout: float
) -> Iterator[tuple[str, None]]:
    """Start the bot folder in a sandbox backend; stop it (and keep its output) afterwards."""
    with (
        _loaded(path) as submission,
        _run_sandboxed(submission, report, preference, startup_timeout) as started,
    ):
        yield started


@contextmanager
def _run_sandboxed(
    submission: Submission, report: CheckReport, preference: str, startup_timeout: float
) -> Iterator[tuple[str, None]]:
    from sandbox import BotStartupError, SandboxLimits, choose_backend

    report.name, report.version = submission.manifest.name, submission.manifest.version
    backend = choose_backend(preference, allow_unsafe=False)
    report.sandbox = backend.describe()
    limits = SandboxLimits(startup_timeout=startup_timeout)
    report.limits = describe_limits(limits, submission.manifest.runtime)
    try:
        running = backend.start(
            submission, limits, f"kryt-check-{submission.sha256[:12]}", trusted=True
        )
    except BotStartupError as exc:
        raise BotCrashedError(f"the bot did not start in the sandbox: {exc}") from None
    try:
        yield running.address, None
    finally:
        try:  # before stop: Docker's logs go with the container
            report.stderr = running.logs()[-STDERR_TAIL:]
        finally:
            running.stop()


@contextmanager
def _maybe_started(
    path: Path, report: CheckReport
) -> Iterator[tuple[str, subprocess.Popen[bytes] | None]]:
    if path.exists():
        with _started(path, report) as (address, proc):
            yield address, proc
    else:
        yield str(path), None


def describe_limits(limits: SandboxLimits, runtime: str) -> str:
    """The limits a bot of ``runtime`` runs under, as one line of numbers (the runtime's
    floors applied, as the sandbox applies them)."""
    from sandbox.runtimes import containers, get_runtime
    from sandbox.submission import SubmissionLimits

    effective = containers.effective_limits(get_runtime(runtime), limits)
    submission = SubmissionLimits()
    mib = 1024 * 1024
    return (
        f"memory {effective.memory_bytes // mib} MiB, {effective.pids} processes,"
        f" {effective.cpus:g} CPU, files up to {effective.fsize_bytes // mib} MiB,"
        f" /tmp {effective.tmpfs_bytes // mib} MiB, start-up {effective.startup_timeout:g} s;"
        f" submission up to {submission.max_total_bytes // mib} MiB"
        f" ({submission.max_file_bytes // mib} MiB a file)"
    )
