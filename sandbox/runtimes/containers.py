"""What the Docker backend needs from a runtime: the per-submission image, its build, its
start command and its limits.

A submission's image is ``FROM`` its runtime's image. For a compiled runtime it is built in
two stages: the first copies the sources to ``/src`` and runs the runtime's build command as
uid 65533 (:data:`BUILD_UID`) with no network, bounded by
:class:`~sandbox.runtimes.BuildLimits` (wall time, memory, processes, size of the output);
the second holds only the sources in ``/bot`` and the build's
output in ``/artifact``. The image is tagged by the submission's hash and the runtime image's
id, so each submission is built once, and the artifact is immutable. A failed build is one
:class:`~sandbox.runtimes.RuntimeBuildError` that ends with the compiler's output; it is
remembered (:data:`FAILED_BUILDS`, per process) and raised again at once on later starts,
without building again. Only the first :data:`BUILD_LOG_HEAD_BYTES` and the last
:data:`BUILD_LOG_BYTES` of a build's output are kept; the error shows its first
:data:`BUILD_LOG_HEAD_LINES` and last :data:`BUILD_LOG_LINES` lines (the first compiler error
and the last), saying how many lines were skipped between. A build killed for memory says
so, in the same words under both backends (:func:`build_failure`'s ``out_of_memory``).

A ``node`` submission is built only when it has a ``package.json`` (``npm ci`` of its lock
file); its ``/artifact/node_modules`` is linked as ``/bot/node_modules``. The build has no
network unless the organiser names the runtime in ``KRYT_BUILD_NETWORK`` (see
:func:`build_network_allowed`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shlex
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sandbox.errors import BotStartupError
from sandbox.limits import SandboxLimits
from sandbox.runtimes import ARTIFACT_DIR, Runtime, RuntimeBuildError
from sandbox.submission import Submission

__all__ = [
    "BUILD_FAILED",
    "BUILD_LOG_BYTES",
    "BUILD_LOG_HEAD_BYTES",
    "BUILD_LOG_HEAD_LINES",
    "BUILD_LOG_LINES",
    "BUILD_NETWORK_ENV",
    "BUILD_UID",
    "FAILED_BUILDS",
    "LOG_SKIPPED",
    "FailedBuilds",
    "LogTail",
    "build_failure",
    "build_network_allowed",
    "build_script",
    "dockerfile",
    "effective_limits",
    "joined_log",
    "launch_command",
    "needs_build",
]

#: The unprivileged uid the Docker build runs as: one of its own, not the bots' 65534, since
#: the build's process cap (``RLIMIT_NPROC``, see :func:`build_script`) counts every process
#: of its uid on the host, and running bots must not use up a build's share (nor a build
#: theirs).
BUILD_UID = 65533
#: First word of the line the build script prints when the bot's build failed (on a line of
#: its own: the build's output may end without a newline).
BUILD_FAILED = "kryt-build-failed:"
#: The line the build script prints before it runs the runtime's command: a build that
#: fails after it (whatever it printed, or if it stopped the script) is the bot's failure.
BUILD_STARTED = "kryt-build-started"
#: Lines of build output kept in the error for the author: the last ones, and the first
#: ones (the first compiler error, which the others often follow from).
BUILD_LOG_LINES = 40
BUILD_LOG_HEAD_LINES = 20
#: Characters of the start of a build's output kept while it runs (besides its tail), for
#: the first error: the error message holds at most this much of it.
BUILD_LOG_HEAD_BYTES = 4 * 1024
#: First word of the line :func:`joined_log` puts where output was dropped between the kept
#: head and tail, followed by the number of lines dropped.
LOG_SKIPPED = "kryt-build-log-skipped:"
#: Characters of a build's output kept while it runs (its tail): a build printing 100 MB of
#: compiler errors must not grow the referee. Both backends keep this much.
BUILD_LOG_BYTES = 16 * 1024
#: The organiser's setting: runtimes (comma-separated, e.g. ``node``) whose build step may use
#: the network to reach their package registry. Unset (the default): no build has a network.
BUILD_NETWORK_ENV = "KRYT_BUILD_NETWORK"


def build_network_allowed(runtime: Runtime, environ: Mapping[str, str] | None = None) -> bool:
    """True when the organiser lets ``runtime``'s build step use the network
    (``KRYT_BUILD_NETWORK=node``; ``all`` for every runtime). Off by default."""
    env = os.environ if environ is None else environ
    names = {part.strip() for part in env.get(BUILD_NETWORK_ENV, "").split(",") if part.strip()}
    return runtime.name in names or "all" in names


def needs_build(runtime: Runtime, submission: Submission) -> bool:
    """True when ``submission`` is built before it runs (always for cpp, go and java; for
    node only with a ``package.json``)."""
    return runtime.needs_build(submission.files)


def build_script(runtime: Runtime, *, online: bool = False, cap_processes: bool = False) -> str:
    """The shell script of the build stage: the runtime's command under the build limits.

    ``online`` tells the command (``KRYT_BUILD_ONLINE=1``) that the organiser gave the build a
    network; without it, package managers run offline. ``cap_processes`` (the Docker build,
    whose engine takes no process limit for a build step) caps the processes and threads of
    the build's uid at ``BuildLimits.processes`` with ``RLIMIT_NPROC``, before the build's
    command runs; a shell that cannot set it ends the script there (the failure is ours, not
    the bot's). bwrap's build has a pids cgroup of that size instead.
    """
    if runtime.build is None:
        raise ValueError(f"runtime {runtime.name!r} has no build step")
    limits = runtime.build_limits
    seconds, output = limits.seconds, limits.output_bytes
    # ulimit -f counts 512-byte blocks in POSIX shells: no file may exceed the output bound.
    blocks = output // 512
    # dash names the process limit -p, bash -u (its -p is the pipe size, which cannot be set).
    processes = limits.processes
    cap = (
        f"ulimit -p {processes} 2>/dev/null || ulimit -u {processes} 2>/dev/null || {{\n"
        f'  echo "kryt: /bin/sh could not cap the build at {processes} processes'
        ' (ulimit -p, ulimit -u)" >&2\n'
        "  exit 1\n"
        "}\n"
        if cap_processes
        else ""
    )
    return f"""\
{cap}ulimit -f {blocks}
export KRYT_BUILD_ONLINE={1 if online else 0}
cd /src
echo {BUILD_STARTED}
began=$(date +%s)
timeout -k 5 {seconds} /bin/sh -ec {shlex.quote(runtime.build)} 2>&1
status=$?
late=$(( $(date +%s) - began >= {seconds} ))
if [ "$status" -eq 124 ] || {{ [ "$status" -eq 137 ] && [ "$late" -eq 1 ]; }}; then
  printf '\\n%s\\n' "{BUILD_FAILED} the build did not finish within {seconds} s"
  exit 1
fi
if [ "$status" -eq 137 ]; then
  # SIGKILL before the deadline: the kernel's OOM killer, as a rule (the backend says so).
  printf '\\n%s\\n' "{BUILD_FAILED} the {runtime.name} build was killed (SIGKILL)"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  printf '\\n%s\\n' "{BUILD_FAILED} the {runtime.name} build exited with status $status"
  exit 1
fi
size=$(du -sb {ARTIFACT_DIR} | cut -f1)
if [ "$size" -gt {output} ]; then
  printf '\\n%s\\n' "{BUILD_FAILED} the build output is $size bytes, more than {output}"
  exit 1
fi
"""


def dockerfile(
    runtime: Runtime,
    base_image: str,
    entry: str,
    *,
    build: bool | None = None,
    confine: Callable[[Sequence[str]], list[str]] = list,
    stage_labels: Mapping[str, str] | None = None,
) -> str:
    """The Dockerfile of a submission's image on ``base_image`` (its runtime's image).

    ``build`` says whether this submission is built (default: the runtime always builds);
    see :func:`needs_build`. ``confine`` turns the build's command into the one that runs it
    (the Docker backend's: under the seccomp filter, :func:`sandbox.seccomp.confined_command`).
    ``stage_labels`` label the build stage's images, which the engine keeps untagged after
    the build (a copy of the sources and the build's output): so they can be found and
    removed.
    """
    if build is None:
        build = runtime.compiled
    if not build:
        lines = [f"FROM {base_image}", "COPY bot/ /bot/"]
        if runtime.name == "native":
            # Stored submissions lose their modes (they are packed 0644): the entry must run.
            lines.append(f"RUN {json.dumps(['chmod', '0755', f'/bot/{entry}'])}")
        return "\n".join([*lines, ""])
    return "\n".join(
        [
            f"FROM {base_image} AS build",
            *(
                [f"LABEL {' '.join(f'{k}={json.dumps(v)}' for k, v in stage_labels.items())}"]
                if stage_labels
                else []
            ),
            "COPY bot/ /src/",
            "COPY kryt-build.sh /kryt-build.sh",
            f"RUN mkdir -p {ARTIFACT_DIR} && chown {BUILD_UID}:{BUILD_UID} {ARTIFACT_DIR}",
            f"USER {BUILD_UID}:{BUILD_UID}",
            "ENV HOME=/tmp",
            "WORKDIR /src",
            f"RUN {json.dumps(confine(['/bin/sh', '/kryt-build.sh']))}",
            f"FROM {base_image}",
            "COPY bot/ /bot/",
            f"COPY --from=build {ARTIFACT_DIR}/ {ARTIFACT_DIR}/",
            *_link_node_modules(runtime),
            "",
        ]
    )


def _link_node_modules(runtime: Runtime) -> list[str]:
    """Node finds packages by walking up from the importing file (``import`` ignores
    NODE_PATH), so the built ``node_modules`` is linked into ``/bot``; a shipped one stays."""
    if runtime.name != "node":
        return []
    built, link = f"{ARTIFACT_DIR}/node_modules", "/bot/node_modules"
    script = f"if [ -d {built} ] && [ ! -e {link} ]; then ln -s {built} {link}; fi"
    return [f"RUN {json.dumps(['/bin/sh', '-c', script])}"]


def launch_command(runtime: Runtime, submission: Submission, limits: SandboxLimits) -> list[str]:
    """The container's command: ``sh -c 'umask 000 && <run>' <entry>``.

    umask 0 so the referee (possibly another non-root uid) may connect to the socket; the
    socket directory itself is private to the bot and the referee.
    """
    script = runtime.launch_script(submission.manifest.entry, limits.memory_bytes)
    return ["/bin/sh", "-c", f"umask 000 && {script}", submission.manifest.entry]


def effective_limits(runtime: Runtime, limits: SandboxLimits) -> SandboxLimits:
    """``limits`` raised to the runtime's floors (a JVM does not start in 256 MiB, nor
    under bwrap's address-space rlimit without more slack)."""
    return dataclasses.replace(
        limits,
        memory_bytes=max(limits.memory_bytes, runtime.min_memory_bytes),
        pids=max(limits.pids, runtime.min_pids),
        address_space_slack_bytes=max(
            limits.address_space_slack_bytes, runtime.min_address_space_slack_bytes
        ),
    )


_FAILED_COMMAND = re.compile(r"The command '.*' returned a non-zero code: (\d+)\s*", re.DOTALL)
"""Docker's message (many lines, for a command with newlines) saying a build step failed."""


def failed_command_status(error: str) -> int | None:
    """The exit status when ``error`` is Docker's "a build step's command failed" message
    (the failure of the step's command, not of the engine), else None."""
    match = _FAILED_COMMAND.fullmatch(error.strip() + "\n")
    return int(match.group(1)) if match else None


def _without_docker_line(text: str) -> str:
    """``text`` without Docker's failed-command message at its end, if it has one. Only the
    last "The command '" can be Docker's (it comes last); the build's own output may say
    those words too, and must not be cut from there on."""
    start = text.rfind("The command '")
    if start >= 0 and failed_command_status(text[start:]) is not None:
        return text[:start]
    return text


def joined_log(head: str, tail: str, skipped_lines: int | None) -> str:
    """A build's kept output as one text: its ``head``, then, when output was dropped
    between the two (``skipped_lines`` is not None), a :data:`LOG_SKIPPED` line with the
    number of lines dropped, then its ``tail``. :func:`build_failure` reads the mark."""
    if skipped_lines is None:
        return head + tail
    return f"{head}\n{LOG_SKIPPED} {skipped_lines}\n{tail}"


def out_of_memory_reason(runtime: Runtime) -> str:
    """Why a build the OOM killer hit failed, in the same words under both backends."""
    mib = runtime.build_limits.memory_bytes // (1 << 20)
    return f"the build ran out of its {mib} MiB memory limit (killed by the kernel's OOM killer)"


_COUNT = re.compile(r"[0-9]{1,18}")


def _excerpt(output: list[str]) -> str:
    """The first :data:`BUILD_LOG_HEAD_LINES` and the last :data:`BUILD_LOG_LINES` of
    ``output`` (which may hold one :data:`LOG_SKIPPED` line: lines already dropped there),
    with a line saying how many lines were skipped between; the first part at most
    :data:`BUILD_LOG_HEAD_BYTES` characters, the whole at most :data:`BUILD_LOG_BYTES`."""
    mark = next((i for i, line in enumerate(output) if line.startswith(LOG_SKIPPED)), None)
    if mark is None:
        before, after, dropped = output, [], 0
    else:
        before, after = output[:mark], output[mark + 1 :]
        words = output[mark].removeprefix(LOG_SKIPPED).split()
        # The build's own output may hold a line like the mark: only a plain count is ours
        # (str.isdigit takes "²", which int() refuses, and int() refuses 5,000 digits).
        dropped = int(words[0]) if words and _COUNT.fullmatch(words[0]) else 0
    if mark is None and len(output) <= BUILD_LOG_HEAD_LINES + BUILD_LOG_LINES:
        first, last = output, []
    elif mark is None:
        first, last = output[:BUILD_LOG_HEAD_LINES], output[-BUILD_LOG_LINES:]
    else:
        first, last = before[:BUILD_LOG_HEAD_LINES], after[-BUILD_LOG_LINES:]
    skipped = dropped + len(before) + len(after) - len(first) - len(last)
    head = "\n".join(first)[:BUILD_LOG_HEAD_BYTES]
    room = max(BUILD_LOG_BYTES - len(head), 0)
    tail = "\n".join(last)[-room:] if room else ""
    if not skipped:
        return "\n".join(part for part in (head, tail) if part)
    between = f"[... {skipped} line{'s' if skipped != 1 else ''} of build output skipped ...]"
    return "\n".join(part for part in (head, between, tail) if part)


def build_failure(
    runtime: Runtime,
    submission: Submission,
    log: Iterable[Any],
    *,
    started: bool = False,
    out_of_memory: bool = False,
) -> str | None:
    """The author's error message when ``log`` (the build's output) shows the bot's build
    failed, or None when the failure was ours (engine, missing image). ``started``: the
    build script was seen reaching the bot's build command (:data:`BUILD_STARTED`) earlier
    than ``log`` may still show, and its command failed: the bot's failure whatever the
    output kept says. ``out_of_memory``: the backend saw the kernel's OOM killer hit the
    build (its cgroup's count, the engine's ``oom`` event): the bot's failure, said as
    :func:`out_of_memory_reason`."""
    texts = []
    for chunk in log:
        if not isinstance(chunk, dict):
            continue
        error = chunk.get("error")
        if isinstance(error, str) and failed_command_status(error) is not None:
            # Docker repeats the failed command, which is the seccomp launcher's whole
            # source and filter (sandbox.seccomp.confined_command): it says nothing to the
            # author, and it is not the build's output.
            continue
        texts.append(str(chunk.get("stream") or error or ""))
    lines = _without_docker_line("".join(texts)).splitlines()
    # The first line with the mark: the command's own (node's build.sh says why) before the
    # script's summary; anywhere in a line, as output may end without a newline.
    said = [line[line.index(BUILD_FAILED) :] for line in lines if BUILD_FAILED in line]
    if out_of_memory:
        reason = f"{BUILD_FAILED} {out_of_memory_reason(runtime)}"
    elif said:
        reason = said[0]
    elif any(line.strip() == BUILD_STARTED for line in lines):
        # The build ran and ended the script before it could say why (it stopped or killed
        # it: both run as the build's uid): the bot's failure all the same.
        reason = f"{BUILD_FAILED} the build ended its script before the script's result"
    elif started:
        # The build printed so much that the script's lines left the kept tail.
        reason = f"{BUILD_FAILED} the build failed (the script's result is not in its last output)"
    else:
        return None
    # Docker's own progress lines say nothing to the author.
    noise = ("Step ", " ---> ", "Removing intermediate", "Sending build context", "The command ")
    # The build script's own summary line follows a command's more precise one: drop both.
    output = [
        line
        for line in lines
        if line.strip()
        and not line.startswith(noise)
        and BUILD_FAILED not in line
        and line.strip() != BUILD_STARTED
    ]
    tail = _excerpt(output)
    name = submission.manifest.name
    return (
        f"{name} {submission.manifest.version} ({runtime.name}) did not build: "
        f"{reason.removeprefix(BUILD_FAILED).strip()}\n{tail}"
    )


def raise_build_failure(
    runtime: Runtime,
    submission: Submission,
    log: Iterable[Any],
    *,
    started: bool = False,
    out_of_memory: bool = False,
) -> None:
    """Raise :class:`RuntimeBuildError` when ``log`` shows the bot's build failed (see
    :func:`build_failure` for ``started`` and ``out_of_memory``)."""
    message = build_failure(runtime, submission, log, started=started, out_of_memory=out_of_memory)
    if message is not None:
        raise RuntimeBuildError(message)


class LogTail:
    """The last ``limit`` characters of a stream of text pieces, in bounded memory; and,
    with ``head``, its first ``head`` characters from the first ``head_from`` on (the
    Docker build's own steps come before the build script's :data:`BUILD_STARTED`).
    :meth:`excerpt` joins the two, marking what was dropped between (:func:`joined_log`)."""

    def __init__(self, limit: int = BUILD_LOG_BYTES, head: int = 0, head_from: str = "") -> None:
        self.limit = limit
        self._pieces: deque[str] = deque()
        self._size = 0
        self._head_limit = head
        self._head_from = head_from
        self._head = ""
        self._heading = head > 0 and not head_from
        #: Characters and line ends since the head began (what the head and tail cut from).
        self._total = 0
        self._newlines = 0

    def add(self, text: str) -> None:
        """Append ``text``, dropping the oldest pieces no longer needed for the tail."""
        if not text:
            return
        if not self._heading and self._head_limit and self._head_from in text:
            self._heading = True
            self._pieces.clear()  # the tail, too, starts there: one text, cut in two
            self._size = 0
            text = text[text.index(self._head_from) :]
        if self._heading:
            self._total += len(text)
            self._newlines += text.count("\n")
            if len(self._head) < self._head_limit:
                self._head += text[: self._head_limit - len(self._head)]
        if len(text) >= self.limit:
            self._pieces.clear()
            text = text[-self.limit :]
            self._size = 0
        self._pieces.append(text)
        self._size += len(text)
        while self._size - len(self._pieces[0]) >= self.limit:
            self._size -= len(self._pieces.popleft())

    def text(self) -> str:
        """The kept tail (at most ``limit`` characters)."""
        return "".join(self._pieces)[-self.limit :]

    def excerpt(self) -> str:
        """The kept head and tail as one text (:func:`joined_log`); the tail alone before the
        head began."""
        tail = self.text()
        if not self._heading:
            return tail
        head = self._head
        rest = self._total - len(head)  # characters after the head, the tail's last ones
        if rest <= len(tail):
            return head + (tail[len(tail) - rest :] if rest > 0 else "")
        # Line ends in the dropped part, less the one ending the head's last line (shown).
        skipped = self._newlines - head.count("\n") - tail.count("\n")
        skipped -= 0 if head.endswith("\n") else 1
        return joined_log(head, tail, max(skipped, 0))


class FailedBuilds:
    """The bot's build failures this process has seen, by build key (the successful-build
    cache's key: submission hash and runtime image), so a submission that does not build is
    built once and its error raised again at once on later starts.

    Only :class:`~sandbox.errors.BotStartupError` is remembered: a build that failed for our
    reasons (engine gone, missing image: :class:`~sandbox.errors.SandboxInfrastructureError`)
    is tried again next time. At most ``size`` keys are kept (oldest forgotten first).
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._errors: OrderedDict[str, BotStartupError] = OrderedDict()

    def check(self, key: str) -> None:
        """Raise (a fresh copy of) the error of the remembered failed build ``key``, if any."""
        with self._lock:
            error = self._errors.get(key)
        if error is not None:
            raise copy.copy(error)

    def remember(self, key: str, error: BaseException) -> None:
        """Remember ``error`` for ``key`` when it is the bot's fault (else nothing)."""
        if not isinstance(error, BotStartupError):
            return
        with self._lock:
            self._errors[key] = copy.copy(error)
            self._errors.move_to_end(key)
            while len(self._errors) > self.size:
                self._errors.popitem(last=False)

    def forget(self, key: str | None = None) -> None:
        """Forget ``key`` (every key when None)."""
        with self._lock:
            if key is None:
                self._errors.clear()
            else:
                self._errors.pop(key, None)


#: The failed builds of this process (both backends; keys carry the backend's name).
FAILED_BUILDS = FailedBuilds()
