"""Docker backend: each bot in a hardened container, talking gRPC over a Unix socket.

Every submission gets its own image (``FROM`` the bot base image, ``COPY`` the bot to
``/bot``), tagged by the submission's content hash and the base image id, so a bot is built
once and re-used. Containers run with no network, a read-only root, a small ``/tmp`` tmpfs
(counted against the memory limit), all capabilities dropped, ``no-new-privileges``, a uid
and gid of its own (:mod:`sandbox.uids`), bounded pids / memory (no swap) / CPU / open files
/ file size, no core dumps, no Docker init (process 1 is the seccomp launcher, under the
filter, supervising the bot: :mod:`sandbox.supervisor`; an init of the bot's uid outside the
filter could be rewritten through ``/proc/1/mem`` and run the bot's code unfiltered), private
IPC, a small ``/dev/shm``, bounded logs and labels so leftovers can be swept. The socket
directory is a tiny tmpfs the runner mounts on the host (size and inode caps, so nothing the
bot writes reaches the disk), bind-mounted at ``/run/kryt``; the referee dials it through
:mod:`sandbox.dial`. Containers are never auto-removed: the exit
state is read first, then the container is removed.

Containers carry the runner's token (``org.kryt.runner``, :mod:`sandbox.runner`): the
runner's reaper (:mod:`sandbox.reaper`) removes them when the runner dies, even by
``kill -9``, and :meth:`DockerBackend.sweep_leftovers` removes those of dead runners only.

The ``docker`` package is imported lazily so the base install never needs it.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import secrets
import socket
import tarfile
import threading
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from sandbox.backend import (
    BOT_HOSTNAME,
    SANDBOX_ADDRESS,
    SANDBOX_SOCKET_DIR,
    Backend,
    OutputSince,
    RunningBot,
    SubmissionLike,
    make_work_dir,
    prepare_socket_dir,
    resolve_submission,
    safe_label,
    socket_tmpfs_problem,
    sweep_socket_dirs,
)
from sandbox.base_image import bot_base_tag
from sandbox.cgroups import CPU_PERIOD_US
from sandbox.death import DeathCause, DeathReport, classify_exit
from sandbox.errors import (
    CleanupError,
    EngineUnavailableError,
    ImageBuildError,
    LimitsUnavailableError,
    SandboxInfrastructureError,
)
from sandbox.hostfs import remove_tree
from sandbox.limits import SandboxLimits
from sandbox.reaper import start_reaper
from sandbox.runner import RunnerId, RunnerState, current_runner
from sandbox.runtimes import (
    Runtime,
    RuntimeBuildError,
    UnknownRuntimeError,
    containers,
    get_runtime,
)
from sandbox.runtimes.images import image_tag as runtime_image_tag
from sandbox.seccomp import confined_command, filter_problem
from sandbox.submission import Submission
from sandbox.supervisor import TOKEN_ENV, TOKEN_SUPERVISOR, proven_signal, reported, strip_status
from sandbox.uids import UidLease, default_pool

__all__ = [
    "BOT_UID",
    "LABEL_KEY",
    "RUNNER_HOST_KEY",
    "RUNNER_KEY",
    "DockerBackend",
    "DockerBot",
    "docker_client",
    "remove_runner_containers",
]

BOT_UID = 65534
"""``nobody``: what every bot ran as before each got a uid of its own (:mod:`sandbox.uids`);
``DockerBackend(uid=BOT_UID)`` still runs them all as it (sharing its kernel quotas)."""
LABEL_KEY = "org.kryt.sandbox.label"
MARK_KEY = "org.kryt.sandbox"
#: The token of the runner that started the container (see sandbox.runner).
RUNNER_KEY = "org.kryt.runner"
#: The runner's host name, for people reading ``docker ps``.
RUNNER_HOST_KEY = "org.kryt.runner.host"
NO_DEVPTS = "ro,nosuid,nodev,noexec,size=4k,nr_inodes=1,mode=0555"
"""The options of the empty read-only tmpfs a bot's container gets at ``/dev/pts`` in place
of Docker's ``devpts`` (the engine drops its own mount where a user mount has the same
destination). ``/dev/ptmx`` is a link to ``pts/ptmx`` in a container, so it now leads
nowhere and ``openpty`` fails (ENOENT), as under bwrap. With Docker's devpts every bot
could open pseudo-terminals, which the kernel counts for the whole machine
(``/proc/sys/kernel/pty/nr``, no namespace apart): one bot's showed in another's count (a
channel between two running bots) and one bot could take all of them (``kernel.pty.max``
less the host's reserve), so that other containers' ``openpty`` failed (hostile review,
round 10). No runtime needs a terminal to play."""
log = logging.getLogger("sandbox")
LOG_TAIL_LINES = 40
LOG_TAIL_CHARS = 8192
"""A container's log tail: its last ``LOG_TAIL_LINES`` lines, at most this long."""
BUILD_CPU_SHARES = 256
"""A build step's CPU weight, a quarter of a bot's (Docker's default 1024): a submission
compiling while games run (the arena builds what authors submit) yields the CPU to the bots
playing, whose clocks run. Its CPU quota (``BuildLimits.cpus``, the bwrap build's too) caps
what it takes of an idle machine."""


def build_container_limits(runtime: Runtime) -> dict[str, int]:
    """The Engine API's limits of each container of ``runtime``'s build (``/build``'s query
    parameters): memory without swap, the CPU weight, and the CPU quota of
    ``BuildLimits.cpus`` (``cpuperiod``/``cpuquota``, as the bwrap build cgroup's)."""
    limits = runtime.build_limits
    return {
        "memory": limits.memory_bytes,
        "memswap": limits.memory_bytes,
        "cpushares": BUILD_CPU_SHARES,
        "cpuperiod": CPU_PERIOD_US,
        # As the bwrap build cgroup's quota (sandbox.cgroups): at least 1 ms a period.
        "cpuquota": max(1000, round(limits.cpus * CPU_PERIOD_US)),
    }


def docker_client(timeout: float = 30.0) -> Any:
    """A connected ``docker.DockerClient`` or :class:`EngineUnavailableError` saying why."""
    try:
        import docker
    except ImportError as exc:
        raise EngineUnavailableError(
            "the docker Python package is not installed (pip install 'kryt-arena[arena]')"
        ) from exc
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except Exception as exc:
        raise EngineUnavailableError(f"no Docker engine answers: {exc}") from exc
    return client


def _stamp_ns(stamp: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 timestamp the engine put before a log line
    (``2026-12-02T05:01:02.123456789Z``), or None if it is not one."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    try:
        seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None
    if not (fraction.isascii() and fraction.isdigit()) and fraction:
        return None
    return int(seconds) * 1_000_000_000 + int((fraction or "0").ljust(9, "0")[:9])


SINCE_MARGIN_NS = 1_000_000
"""How much earlier than a position the engine is asked for lines (the float it takes loses
nanoseconds); lines up to the position are then dropped here, by their exact stamps."""


def lines_since(stamped: str, position: int) -> OutputSince:
    """The lines of a timestamped log (``docker logs -t --since``) stamped after
    ``position``. Cut when the line stamped exactly ``position`` (the last one read before)
    is no longer there: the engine's log file was rotated meanwhile (its size is the bot's
    ``log_bytes``), so lines written after it may be gone."""
    kept: list[str] = []
    newest = position
    mark_seen = position == 0
    for line in stamped.splitlines(keepends=True):
        stamp, space, text = line.partition(" ")
        ns = _stamp_ns(stamp) if space else None
        if ns is None or ns < position:
            continue
        if ns == position:
            mark_seen = True
            continue
        kept.append(text)
        newest = max(newest, ns)
    return OutputSince("".join(kept), not mark_seen, newest)


class DockerBot(RunningBot):
    """A bot running in a container."""

    backend_name = "docker"

    def __init__(self, *, container: Any, status_token: str = "", **kwargs: Any) -> None:
        """``status_token``: the secret the container's supervisor signs its report of a
        signal death with (:mod:`sandbox.supervisor`); '' where there is none."""
        super().__init__(**kwargs)
        self.container = container
        self._token = status_token

    def cpu_seconds(self) -> float | None:
        """CPU time of the container so far, read from its cgroup (v1 cpuacct or v2 cpu.stat;
        cgroupfs or systemd driver); None where neither is readable."""
        cid = str(self.container.id)
        root = Path("/sys/fs/cgroup")
        for path in (
            root / "cpuacct" / "docker" / cid / "cpuacct.usage",
            root / "cpuacct" / "system.slice" / f"docker-{cid}.scope" / "cpuacct.usage",
        ):
            with contextlib.suppress(OSError, ValueError):
                return int(path.read_text()) / 1e9
        for path in (
            root / "docker" / cid / "cpu.stat",
            root / "system.slice" / f"docker-{cid}.scope" / "cpu.stat",
        ):
            with contextlib.suppress(OSError, ValueError):
                for line in path.read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
        return None

    def _state(self) -> dict[str, Any] | None:
        from docker.errors import DockerException, NotFound
        from requests import RequestException

        try:
            self.container.reload()
        except NotFound:
            return None
        except (DockerException, RequestException) as exc:
            # The engine itself failed: the match cannot be judged, it is not the bot's fault.
            raise SandboxInfrastructureError(
                f"lost the Docker engine while watching bot {self.label!r}: {exc}"
            ) from exc
        state: dict[str, Any] = self.container.attrs["State"]
        return state

    def _poll(self) -> DeathReport | None:
        state = self._state()
        if state is None:
            return DeathReport(cause=DeathCause.VANISHED, detail="container disappeared")
        if state.get("Running") or state.get("Status") in {"created", "restarting"}:
            return None
        detail = state.get("Error") or ""
        code = int(state.get("ExitCode", -1))
        raw = self._raw_logs()
        # The container's init exits 128 + N for a signal, as a bot's own exit(128 + N)
        # does: only the supervisor's signed report says a signal killed the bot (SIGXFSZ
        # only with a file at the file-size limit).
        report = reported(raw, self._token) if self._token and code > 128 else None
        if report is not None and code != 128 + report.signal:
            report = None
        sig, unproven = proven_signal(report, self.limits.fsize_bytes)
        return classify_exit(
            code,
            signal_number=sig,
            oom_killed=bool(state.get("OOMKilled")),
            log_tail=strip_status(raw, self._token),
            detail="; ".join(part for part in (str(detail), unproven) if part),
        )

    def _kill(self) -> None:
        from docker.errors import APIError

        # Already dead or gone is fine: removal in _cleanup still runs.
        with contextlib.suppress(APIError):
            self.container.kill()

    def _cleanup(self) -> None:
        from docker.errors import APIError, NotFound

        try:
            self.container.remove(force=True, v=True)
        except NotFound:
            pass
        except APIError as exc:
            raise SandboxInfrastructureError(
                f"could not remove container {self.container.name}: {exc}"
            ) from exc

    def _raw_logs(self) -> str:
        from docker.errors import APIError

        try:
            raw: bytes = self.container.logs(tail=LOG_TAIL_LINES)
        except APIError:
            return ""
        return raw.decode(errors="replace")[-LOG_TAIL_CHARS:]

    def logs(self) -> str:
        """The last lines the bot wrote to stdout/stderr (without the supervisor's report)."""
        return strip_status(self._raw_logs(), self._token)

    def output_since(self, position: int) -> OutputSince:
        """The lines the engine stamped after ``position`` (nanoseconds since the epoch; 0:
        since the container started), from its log file (at most ``log_bytes``)."""
        from docker.errors import APIError

        since = (position - SINCE_MARGIN_NS) / 1e9 if position > SINCE_MARGIN_NS else None
        try:
            raw: bytes = self.container.logs(timestamps=True, since=since)
        except APIError:
            return OutputSince("", False, position)
        found = lines_since(raw.decode(errors="replace"), position)
        return OutputSince(strip_status(found.text, self._token), found.cut, found.position)


class DockerBackend(Backend):
    """Runs each bot in a hardened container (see the module docstring)."""

    name = "docker"

    def __init__(
        self,
        reason: str = "",
        *,
        client: Any = None,
        base_image: str | None = None,
        uid: int | None = None,
    ) -> None:
        """``uid``: run every bot as this uid (and gid); None (the default): each bot as a
        uid of its own, leased from :func:`sandbox.uids.default_pool` for its life."""
        super().__init__(reason)
        self.client = client if client is not None else docker_client()
        self.base_image = base_image or os.environ.get("KRYT_SANDBOX_BASE_IMAGE") or bot_base_tag()
        self.uid = uid
        self._build_lock = threading.Lock()

    def untrusted_problem(self) -> str | None:
        """Why untrusted bots are refused here (no sized tmpfs for the socket directory, or
        no seccomp filter to stack on Docker's profile: :mod:`sandbox.seccomp`)."""
        problem = socket_tmpfs_problem()
        if problem:
            return f"docker cannot bound the socket directory: {problem}"
        problem = filter_problem()
        return f"docker cannot filter bots' system calls: {problem}" if problem else None

    def image_base_id(self, base: str | None = None) -> str:
        """Id of the bot base image (or of runtime image ``base``), or
        :class:`ImageBuildError` telling how to build it."""
        from docker.errors import ImageNotFound

        base = base or self.base_image
        try:
            image = self.client.images.get(base)
        except ImageNotFound as exc:
            if base != self.base_image:
                raise ImageBuildError(
                    f"runtime image {base!r} is missing; build it with "
                    f"`python -m sandbox.runtimes build {base.split(':')[0].split('-')[-1]}`"
                ) from exc
            raise ImageBuildError(
                f"bot base image {self.base_image!r} is missing; build it with "
                "`python -m sandbox.base_image build` (or set KRYT_SANDBOX_BASE_IMAGE)"
            ) from exc
        return str(image.id).removeprefix("sha256:")

    def runtime_problem(self, runtime: str) -> str | None:
        """Why a bot of ``runtime`` cannot start here: the image it runs on is missing (the
        bot base image for Python, the runtime's own image otherwise), with the command that
        builds it; None when it is there. Asked for each runtime a run uses, so a run of
        Java bots does not need the Python image, nor a run of Python bots the Java one."""
        try:
            self.image_base_id(self.runtime_image(get_runtime(runtime)))
        except UnknownRuntimeError as exc:
            return str(exc)
        except ImageBuildError as exc:
            return str(exc)
        return None

    def runtime_image(self, runtime: Runtime) -> str:
        """The image bots of ``runtime`` run on: the bot base image for Python, else the
        runtime's own image (``python -m sandbox.runtimes build NAME``)."""
        return self.base_image if runtime.name == "python" else runtime_image_tag(runtime.name)

    def image_for(self, submission: Submission) -> str:
        """The image running ``submission`` (built on first use, cached by content hash).

        Compiled runtimes build here (:mod:`sandbox.runtimes.containers`); a build that fails
        is :class:`~sandbox.runtimes.RuntimeBuildError`, the bot's fault, remembered
        (:data:`~sandbox.runtimes.containers.FAILED_BUILDS`) and raised again at once by later
        calls; a failure of ours (:class:`ImageBuildError`) is tried again next time.
        """
        from docker.errors import ImageNotFound

        runtime = get_runtime(submission.manifest.runtime)
        base = self.runtime_image(runtime)
        tag = f"kryt-bot:{submission.sha256[:32]}-{self.image_base_id(base)[:12]}"
        key = f"docker:{tag}"
        with self._build_lock:
            try:
                self.client.images.get(tag)
                return tag
            except ImageNotFound:
                pass
            # A submission that did not build is not built again (the author's error, again).
            containers.FAILED_BUILDS.check(key)
            try:
                self._build_image(submission, runtime, base, tag)
            except BaseException as exc:
                containers.FAILED_BUILDS.remember(key, exc)
                raise
            finally:
                self._remove_build_stage(submission)
        return tag

    def _remove_build_stage(self, submission: Submission) -> None:
        """Remove the untagged images ``submission``'s build leaves: its build stage (a copy
        of the sources and the build's output) after a build, the steps up to the failed
        one after a failure. Up to 20 MiB of sources each, and nothing else removes them.
        Best effort: an engine error here must not hide the build's outcome."""
        from docker.errors import APIError
        from requests import RequestException

        labels = [f"{k}={v}" for k, v in build_stage_labels(submission).items()]
        waits = iter(PRUNE_RETRY_WAITS)
        while True:
            try:
                self.client.images.prune(filters={"dangling": True, "label": labels})
                return
            except APIError as exc:
                # The engine runs one prune at a time and answers another with 409 (a build
                # ending beside this one, an operator's `docker image prune`): wait our turn.
                wait = next(waits, None) if exc.status_code == 409 else None
                if wait is None:
                    log.warning(
                        "could not remove the build stage of %s: %s", submission.sha256, exc
                    )
                    return
                time.sleep(wait)
            except (RequestException, OSError) as exc:
                log.warning("could not remove the build stage of %s: %s", submission.sha256, exc)
                return

    def _build_image(self, submission: Submission, runtime: Runtime, base: str, tag: str) -> None:
        """Build image ``tag`` of ``submission``, streaming the engine's output and keeping
        only its last :data:`~sandbox.runtimes.containers.BUILD_LOG_BYTES` (a build may print
        without bound). The bot's failed build is
        :class:`~sandbox.runtimes.RuntimeBuildError`; ours is :class:`ImageBuildError`."""
        from docker.errors import APIError, ImageNotFound
        from requests import RequestException
        from urllib3.exceptions import HTTPError

        context = _build_context(submission, base, runtime)
        # The head from the build script's first line on: Docker's steps before it say
        # nothing to the author (and one repeats the seccomp launcher's whole source).
        tail = containers.LogTail(
            head=containers.BUILD_LOG_HEAD_BYTES, head_from=containers.BUILD_STARTED
        )
        steps: list[str] = []  # every build step's container (an OOM kill is told by id)
        began = time.time()
        error: str | None = None
        last = ""
        step = ""  # the container of the build step running now (Docker says which)
        started = False  # whether the build script got to the bot's build command
        try:
            stream = engine_build(
                self.client.api,
                context,
                tag=tag,
                # No network for the build unless the organiser allows it (npm registry).
                network_mode=("default" if containers.build_network_allowed(runtime) else "none"),
                labels={MARK_KEY: "image", "org.kryt.submission": submission.sha256},
                limits=build_container_limits(runtime),
                timeout=runtime.build_limits.seconds + 120,
            )
            for chunk in stream:
                if not isinstance(chunk, dict):
                    continue
                if "error" in chunk:
                    error = str(chunk["error"])
                    if containers.failed_command_status(error) is None:
                        tail.add(error if error.endswith("\n") else f"{error}\n")
                    continue
                text = chunk.get("stream")
                if isinstance(text, str) and text:
                    tail.add(text)
                    last = text[-200:]
                    if running := _RUNNING_IN.search(text):
                        step = running.group(1)
                        steps.append(step)
                    started = started or containers.BUILD_STARTED in text
        except (APIError, RequestException, HTTPError, OSError) as exc:
            if step:  # a build past its own clock (the bot stopped it) must not run on
                self._remove_by_name(step)
            if started and _timed_out(exc):
                name = f"{submission.manifest.name} {submission.manifest.version}"
                raise RuntimeBuildError(
                    f"{name} ({runtime.name}) did not build: the build did not finish within"
                    f" {runtime.build_limits.seconds} s"
                ) from None
            raise ImageBuildError(f"building {tag} failed: {exc}") from exc
        if error is None:
            try:
                self.client.images.get(tag)
                return
            except ImageNotFound:
                error = last.strip() or "the engine reported no image"
            except (APIError, RequestException) as exc:
                raise ImageBuildError(f"building {tag} failed: {exc}") from exc
        status = containers.failed_command_status(error)
        # Once the script has reached the bot's build command, that command failing is the
        # bot's failure, whatever its output pushed out of the kept tail. Killed for memory
        # (the compiler dies of SIGKILL, the script goes on): said as the bwrap build says it.
        oom = started and status is not None and self._oom_killed(steps, began)
        containers.raise_build_failure(
            runtime,
            submission,
            [{"stream": tail.excerpt()}],
            started=started and status is not None,
            out_of_memory=oom,
        )
        if status is not None:  # a step of ours: Docker's message repeats the whole command
            said = " ".join(last.split())[-500:] or "no output"
            raise ImageBuildError(
                f"building {tag} failed: a build step exited with status {status} ({said})"
            )
        raise ImageBuildError(f"building {tag} failed: {error[-2000:]}")

    def _oom_killed(self, steps: list[str], since: float) -> bool:
        """Whether the engine reported an ``oom`` event (the kernel's OOM killer in the
        container's cgroup) for one of the build step containers ``steps`` (ids, maybe
        short) since ``since``. The build's containers are removed by then, so their
        ``OOMKilled`` state is gone; the engine's event log keeps the event. False when the
        engine cannot say."""
        from docker.errors import APIError
        from requests import RequestException

        if not steps:
            return False
        try:
            events = self.client.api.events(
                since=since - 1,
                until=time.time(),
                filters={"type": "container", "event": "oom"},
                decode=True,
            )
            for event in events:
                actor = str(event.get("id") or (event.get("Actor") or {}).get("ID") or "")
                if actor and any(actor.startswith(step) for step in steps):
                    return True
        except (APIError, RequestException, OSError, ValueError) as exc:
            log.warning("could not read the engine's oom events: %s", exc)
        return False

    def start(
        self,
        submission: SubmissionLike,
        limits: SandboxLimits | None = None,
        label: str = "bot",
        *,
        trusted: bool = False,
        connect: bool = True,
    ) -> DockerBot:
        """Start the bot in a container; return once it answers SERVING.

        Untrusted bots are refused with :class:`LimitsUnavailableError` where the socket
        directory cannot be a sized tmpfs (see :meth:`untrusted_problem`).
        """
        from docker.errors import APIError
        from docker.types import LogConfig, Ulimit

        sub = resolve_submission(submission)
        problem = self.untrusted_problem()
        if problem and not trusted:
            raise LimitsUnavailableError(
                f"refusing untrusted bot {sub.manifest.name!r}: {problem} (see docs/sandbox.md)"
            )
        runtime = get_runtime(sub.manifest.runtime)
        limits = containers.effective_limits(runtime, limits or SandboxLimits())
        image = self.image_for(sub)
        start_reaper()
        # A uid of its own: no bot shares a per-uid kernel quota (inotify instances, epoll
        # watches, RLIMIT_NPROC: containers share the host's uids) with another.
        lease: UidLease | None = default_pool().lease() if self.uid is None else None
        uid = lease.uid if lease is not None else self.uid
        assert uid is not None
        try:
            work_dir = make_work_dir(label)
        except BaseException:
            if lease is not None:
                lease.release()
            raise
        name = f"kryt-{safe_label(label)}-{work_dir.name.rsplit('.', 1)[-1]}"
        token = secrets.token_hex(16)
        labels = {
            MARK_KEY: "bot",
            LABEL_KEY: label,
            "org.kryt.submission": sub.sha256,
            RUNNER_KEY: current_runner().token,
            RUNNER_HOST_KEY: socket.gethostname(),
        }
        try:
            sock_dir = prepare_socket_dir(
                work_dir, limits, uid=uid, gid=uid, bounded=problem is None
            )
            command = containers.launch_command(runtime, sub, limits)
            if filter_problem() is None:
                command = confined_command(command)
            else:  # only a trusted bot gets here: supervised all the same
                command = ["python3", "-I", "-S", "-c", TOKEN_SUPERVISOR, *command]
            container = self.client.containers.run(
                image,
                command=command,
                name=name,
                detach=True,
                auto_remove=False,
                labels=labels,
                environment={
                    "KRYT_BOT_ADDRESS": SANDBOX_ADDRESS,
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "HOME": "/tmp",
                    # Taken out by the supervisor before the bot starts (sandbox.supervisor).
                    TOKEN_ENV: token,
                },
                working_dir="/bot",
                user=f"{uid}:{uid}",
                network_mode="none",
                read_only=True,
                tmpfs={
                    "/tmp": f"rw,nosuid,nodev,noexec,size={limits.tmpfs_bytes},mode=1777",
                    # In place of Docker's devpts (no pseudo-terminal: see NO_DEVPTS).
                    "/dev/pts": NO_DEVPTS,
                },
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                pids_limit=limits.pids,
                mem_limit=limits.memory_bytes,
                memswap_limit=limits.memory_bytes,
                nano_cpus=int(limits.cpus * 1e9),
                ulimits=[
                    Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
                    Ulimit(name="core", soft=0, hard=0),
                    Ulimit(name="fsize", soft=limits.fsize_bytes, hard=limits.fsize_bytes),
                ],
                # No docker-init: every process of the container runs under the filter.
                init=False,
                ipc_mode="private",
                shm_size=limits.shm_bytes,
                volumes={str(sock_dir): {"bind": SANDBOX_SOCKET_DIR, "mode": "rw"}},
                log_config=LogConfig(
                    type="json-file", config={"max-size": str(limits.log_bytes), "max-file": "1"}
                ),
                hostname=BOT_HOSTNAME,
            )
        except BaseException as exc:
            self._remove_by_name(name)
            with contextlib.suppress(CleanupError):
                remove_tree(work_dir)
            if lease is not None:
                lease.release()
            if isinstance(exc, APIError):
                raise SandboxInfrastructureError(
                    f"could not start container {name}: {exc}"
                ) from exc
            raise
        bot = DockerBot(
            container=container,
            status_token=token,
            label=label,
            limits=limits,
            sock_dir=sock_dir,
            expected_uid=uid,
            work_dir=work_dir,
            runtime=runtime.name,
            uid_lease=lease,
        )
        if connect:
            bot.connect()
        return bot

    def _remove_by_name(self, name: str) -> None:
        from docker.errors import APIError

        with contextlib.suppress(APIError):
            self.client.containers.get(name).remove(force=True)

    def sweep_leftovers(self, label_prefix: str = "") -> int:
        """Remove sandbox containers (label starting with ``label_prefix``) whose runner is
        dead, then the socket directories and cgroups of dead runners.

        Containers of a runner that is alive, or whose liveness cannot be judged from here
        (another pid namespace), are never touched. Failures are logged; the sweep goes on.
        """
        from docker.errors import APIError, NotFound
        from requests import RequestException

        removed = 0
        try:
            # sparse: no inspect per container, which races with containers others remove.
            listed = self.client.containers.list(all=True, sparse=True, filters={"label": MARK_KEY})
        except (APIError, RequestException) as exc:
            log.warning("sandbox sweep: cannot list containers: %s", exc)
            listed = []
        for container in listed:
            labels = container.attrs.get("Labels") or {}
            if not str(labels.get(LABEL_KEY, "")).startswith(label_prefix):
                continue
            token = labels.get(RUNNER_KEY)
            if token is not None:
                runner = RunnerId.parse(str(token))
                if runner is None or runner.state() is not RunnerState.DEAD:
                    continue
            try:
                container.remove(force=True, v=True)
                removed += 1
            except NotFound:
                pass  # gone meanwhile: nothing to remove
            except (APIError, RequestException) as exc:
                log.warning("sandbox sweep: cannot remove container %s: %s", container.id, exc)
        return removed + sweep_socket_dirs(label_prefix)


def remove_runner_containers(token: str) -> tuple[int, list[str]]:
    """Remove every bot container of runner ``token`` (the reaper's job); never raises
    for one container, returns ``(removed, errors)``. Without the ``docker`` package or an
    engine, :class:`EngineUnavailableError` (no containers can exist)."""
    client = docker_client(timeout=30)  # first: it turns a missing package into our error
    from docker.errors import APIError, NotFound
    from requests import RequestException

    removed, errors = 0, []
    try:
        listed = client.containers.list(
            all=True, sparse=True, filters={"label": f"{RUNNER_KEY}={token}"}
        )
    except (APIError, RequestException) as exc:
        return 0, [f"cannot list containers of runner {token}: {exc}"]
    for container in listed:
        try:
            container.remove(force=True, v=True)
            removed += 1
        except NotFound:
            pass
        except (APIError, RequestException) as exc:
            errors.append(f"cannot remove container {container.id}: {exc}")
    return removed, errors


_PRIVATE_BUILD_HELPERS = ("_post", "_url", "_stream_helper", "_set_auth_headers", "_proxy_configs")
"""What :func:`engine_build` uses of docker-py's ``APIClient`` beyond its public API."""
_PUBLIC_BUILD_LIMITS = ("memory", "memswap", "cpushares", "cpusetcpus")
"""The ``container_limits`` keys ``APIClient.build`` accepts."""


def _sdk_version() -> str:
    """The installed docker SDK's version, or ``?``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("docker")
    except PackageNotFoundError:
        return "?"


def engine_build(
    api: Any,
    context: io.BytesIO,
    *,
    tag: str,
    network_mode: str,
    labels: dict[str, str],
    limits: dict[str, int],
    timeout: float,
) -> Any:
    """Stream a build of the tar ``context`` (``custom_context``: it holds its Dockerfile)
    through the Engine API's ``POST /build``, decoded chunk by chunk, with ``rm`` and
    ``forcerm`` and the container ``limits`` of :func:`build_container_limits`.

    docker-py's ``APIClient.build`` refuses every ``container_limits`` key but ``memory``,
    ``memswap``, ``cpushares`` and ``cpusetcpus``, though the engine's ``/build`` takes
    ``cpuperiod`` and ``cpuquota`` too and the classic builder gives them to each step's
    container: the request is made here, as that method makes it, with them.
    """
    if not all(hasattr(api, name) for name in _PRIVATE_BUILD_HELPERS):
        # A docker-py that reshaped its internals: build through the public method, whose
        # limits stop at the CPU weight, rather than not at all.
        log.warning(
            "this docker SDK (%s) lacks the helpers the build's CPU quota is sent with:"
            " builds get their memory limit and CPU weight only",
            _sdk_version(),
        )
        public = {k: v for k, v in limits.items() if k in _PUBLIC_BUILD_LIMITS}
        return api.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            network_mode=network_mode,
            labels=labels,
            container_limits=public,
            decode=True,
            timeout=timeout,
        )
    params: dict[str, Any] = {
        "t": tag,
        "q": False,
        "nocache": False,
        "rm": True,
        "forcerm": True,
        "pull": False,
        "networkmode": network_mode,
        "labels": json.dumps(labels),
        **limits,
    }
    # As APIClient.build's use_config_proxy: the client's proxy settings, as build args.
    proxies = api._proxy_configs.get_environment()
    if proxies:
        params["buildargs"] = json.dumps(proxies)
    headers = {"Content-Type": "application/tar"}
    api._set_auth_headers(headers)
    response = api._post(
        api._url("/build"),
        data=context,
        params=params,
        headers=headers,
        stream=True,
        timeout=timeout,
    )
    return api._stream_helper(response, decode=True)


_RUNNING_IN = re.compile(r"Running in ([0-9a-f]{12,64})")
"""Docker's line naming the container of the build step that starts."""


def _timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is the engine connection's read timeout (the build outlived the
    docker client's timeout: its build limit and a margin)."""
    from requests.exceptions import ReadTimeout
    from urllib3.exceptions import ReadTimeoutError

    return isinstance(exc, ReadTimeout | ReadTimeoutError | TimeoutError)


BUILD_STAGE = "build-stage"
"""``MARK_KEY``'s value on a build stage's images (untagged once the build is over)."""

PRUNE_RETRY_WAITS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Seconds between tries of a build stage's removal while the engine runs another prune
(409): about a quarter of a minute in all, then the stage is left to the base image's
``prune`` (docs/sandbox.md)."""


def build_stage_labels(submission: Submission) -> dict[str, str]:
    """The labels of ``submission``'s build stage images."""
    return {MARK_KEY: BUILD_STAGE, "org.kryt.submission": submission.sha256}


def _build_context(submission: Submission, base_image: str, runtime: Runtime) -> io.BytesIO:
    """A tar build context: a Dockerfile (and a compiled runtime's build script) and the bot's
    files, world-readable, owned by root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        build = containers.needs_build(runtime, submission)
        # The build runs the author's code too: under the filter wherever there is one.
        confine = partial(confined_command, build=True) if filter_problem() is None else list
        files = {
            "Dockerfile": containers.dockerfile(
                runtime,
                base_image,
                submission.manifest.entry,
                build=build,
                confine=confine,
                stage_labels=build_stage_labels(submission),
            )
        }
        if build:
            online = containers.build_network_allowed(runtime)
            files["kryt-build.sh"] = containers.build_script(
                runtime, online=online, cap_processes=True
            )
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        root = tarfile.TarInfo("bot")
        root.type = tarfile.DIRTYPE
        root.mode = 0o755
        tar.addfile(root)
        for rel in submission.files:
            member = tar.gettarinfo(str(submission.root / rel), arcname=f"bot/{rel}")
            member.uid = member.gid = 0
            member.uname = member.gname = "root"
            if member.isdir() or member.mode & 0o111:
                member.mode = 0o755
            else:
                member.mode = 0o644
            if member.isreg():
                with open(submission.root / rel, "rb") as handle:
                    tar.addfile(member, handle)
            else:
                tar.addfile(member)
    buffer.seek(0)
    return buffer
