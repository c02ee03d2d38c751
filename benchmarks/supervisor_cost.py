#!/usr/bin/env python3
"""What the sandbox's supervisor (``sandbox/supervisor.py``) costs a bot: memory and start time.

    sudo .venv/bin/python benchmarks/supervisor_cost.py [--runs 40] [--starts 6]
        [--backends host bwrap docker]

The supervisor is the process 1 of every bwrap and Docker sandbox: a Python interpreter
(``python3 -I -S``) that runs the bot as its child and stays for the bot's life. Printed:

- **memory**: the supervisor's resident set inside a running sandbox (a bundled example bot
  serving), from ``/proc/<pid>/smaps_rollup``: ``Rss``, ``Pss`` (shared pages split between
  the processes mapping them) and ``Anonymous`` (its private heap and stack: what the bot's
  memory cgroup is charged for certain; its file pages, the interpreter and libraries, are
  charged to whichever cgroup read them first, usually the host's or an earlier bot's);
- **start, micro**: the median wall time of ``--runs`` runs of ``/bin/true`` started bare and
  through the supervisor (``host``: on the host; ``bwrap``: in a minimal bwrap with and
  without ``--as-pid-1`` and the supervisor; ``docker``: inside one container of the bot base
  image, the supervisor and the seccomp launcher, which loads the filter, then supervises as
  process 1, or merely executes the command elsewhere);
- **start, macro**: the median of ``--starts`` full ``Backend.start()`` calls to SERVING with
  the supervisor and without it, interleaved (bwrap: its own init as process 1, as before the
  supervisor; Docker: the seccomp launcher executing the bot in its place, so the bot is
  process 1 and only the supervising itself is left out).

Run as root (bwrap's untrusted set-up, the Docker engine); a backend that is not available
is skipped with its reason. The Docker backend uses ``KRYT_SANDBOX_BASE_IMAGE`` or builds the
base image.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox import local, seccomp  # noqa: E402
from sandbox.backend import Backend, RunningBot  # noqa: E402
from sandbox.limits import SandboxLimits  # noqa: E402
from sandbox.supervisor import SUPERVISOR, TOKEN_SUPERVISOR  # noqa: E402

BOT = ROOT / "sdk" / "examples" / "random"
TRUE = "/bin/true"
MARKER = b"_kryt_supervise"
"""In the command line of the supervisor (and of Docker's launcher, which includes it)."""


def memory(pid: int) -> dict[str, int]:
    """Rss, Pss, Anonymous and Private_Dirty of ``pid``, in KiB."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in {"Rss", "Pss", "Anonymous", "Private_Dirty"}:
                fields[key] = int(rest.split()[0])
    return fields


def show_memory(label: str, pid: int) -> None:
    used = memory(pid)
    print(
        f"  memory  {label:34s} Rss {used['Rss'] / 1024:5.1f} MiB   Pss {used['Pss'] / 1024:5.1f}"
        f" MiB   Anonymous {used['Anonymous'] / 1024:5.1f} MiB"
    )


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, timeout=120, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def compare(cases: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median seconds of each case over ``runs`` interleaved runs (after one warm-up each)."""
    times: dict[str, list[float]] = {label: [] for label in cases}
    for argv in cases.values():
        timed(argv)
    for _ in range(runs):
        for label, argv in cases.items():
            times[label].append(timed(argv))
    return {label: statistics.median(values) for label, values in times.items()}


def show_times(medians: dict[str, float], base: str) -> None:
    for label, value in medians.items():
        extra = "" if label == base else f"   (+{1000 * (value - medians[base]):6.1f} ms)"
        print(f"  start   {label:34s} median {1000 * value:7.1f} ms{extra}")


def children_of(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with (
                contextlib.suppress(OSError, IndexError, ValueError),
                open(f"/proc/{name}/stat") as handle,
            ):
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(name))
    return found


def host(runs: int) -> None:
    python = local.bot_python()
    print(f"host: the supervisor run by {python} (not in a sandbox)")
    supervisor = [python, "-I", "-S", "-c", SUPERVISOR, "-1"]
    process = subprocess.Popen([*supervisor, "sleep", "60"], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not children_of(process.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        show_memory("supervisor (its bot: sleep)", process.pid)
    finally:
        process.kill()
        process.wait()
    bare = subprocess.Popen(
        [python, "-I", "-S", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        time.sleep(0.5)
        show_memory("for comparison: bare python3 -I -S", bare.pid)
    finally:
        bare.kill()
        bare.wait()
    show_times(
        compare(
            {
                "true": [TRUE],
                "python3 -I -S -c pass": [python, "-I", "-S", "-c", "pass"],
                "supervisor + true": [*supervisor, TRUE],
            },
            runs,
        ),
        "true",
    )


@contextlib.contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, saved)


def start_times(
    backend: Backend,
    starts: int,
    without: Callable[[], contextlib.AbstractContextManager[None]],
    charge: Callable[[RunningBot], int | None],
) -> None:
    """Print the median seconds from ``start()`` to SERVING with the supervisor and
    ``without`` it, and the median memory ``charge`` of the bot's cgroup half a second after."""
    limits = SandboxLimits(startup_timeout=120)
    labels = ("start() with the supervisor", "start() without")
    times: dict[str, list[float]] = {label: [] for label in labels}
    charges: dict[str, list[int]] = {label: [] for label in labels}
    for index in range(starts + 1):  # the first round warms caches (images, staged runtime)
        for label in labels:
            with contextlib.ExitStack() as stack:
                if label == labels[1]:
                    stack.enter_context(without())
                begin = time.perf_counter()
                bot = backend.start(BOT, limits, f"bench-supervisor-{index}")
                took = time.perf_counter() - begin
                try:
                    time.sleep(0.5)
                    used = charge(bot)
                finally:
                    bot.stop()
            if index:
                times[label].append(took)
                if used is not None:
                    charges[label].append(used)
    show_times({label: statistics.median(values) for label, values in times.items()}, labels[1])
    if all(charges.values()):
        medians = {label: statistics.median(values) for label, values in charges.items()}
        for label, value in medians.items():
            extra = medians[labels[0]] - medians[labels[1]]
            more = f"   (+{extra / 2**20:4.1f} MiB)" if label == labels[0] else ""
            name = f"{label.split()[1]} the supervisor"
            print(f"  charge  cgroup, {name:26s} median {value / 2**20:5.1f} MiB{more}")


def cgroup_charge(path: Path) -> int | None:
    """The memory charged to the cgroup at ``path`` (v2 ``memory.current``, v1
    ``memory.usage_in_bytes``), or None."""
    for name in ("memory.current", "memory.usage_in_bytes"):
        with contextlib.suppress(OSError, ValueError):
            return int((path / name).read_text())
    return None


def bwrap_charge(bot: RunningBot) -> int | None:
    assert isinstance(bot, local.LocalBot)
    if bot.cgroup is None:
        return None
    for _, path in bot.cgroup.dirs:
        found = cgroup_charge(path)
        if found is not None:
            return found
    return None


def docker_charge(bot: RunningBot) -> int | None:
    from sandbox.docker_backend import DockerBot

    assert isinstance(bot, DockerBot)
    cid = str(bot.container.id)
    root = Path("/sys/fs/cgroup")
    for path in (
        root / "memory" / "docker" / cid,
        root / "memory" / "system.slice" / f"docker-{cid}.scope",
        root / "docker" / cid,
        root / "system.slice" / f"docker-{cid}.scope",
    ):
        found = cgroup_charge(path)
        if found is not None:
            return found
    return None


def supervisor_pid(bot: RunningBot) -> int:
    """The supervisor of a running bwrap bot: the descendant whose command is ``python3 -I
    -S -c <its source>`` (the launching shell's, ``prlimit``'s and bwrap's command lines hold
    that source too, further on)."""
    assert isinstance(bot, local.LocalBot)
    for pid in local._descendants(bot.pid):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = handle.read().split(b"\0")
            if args[1:4] == [b"-I", b"-S", b"-c"] and MARKER in args[4]:
                return pid
    raise RuntimeError("no supervisor found under the bot's bwrap")


def bwrap(runs: int, starts: int) -> None:
    from sandbox.errors import BackendUnavailableError

    try:
        backend = local.BwrapBackend()
    except BackendUnavailableError as exc:
        print(f"bwrap: skipped ({exc})")
        return
    print(f"bwrap: {backend.bwrap}")
    bot = backend.start(BOT, SandboxLimits(startup_timeout=120), "bench-supervisor-memory")
    try:
        pid = supervisor_pid(bot)
        show_memory("supervisor (its bot: random)", pid)
        for child in children_of(pid):
            show_memory("for comparison: the bot itself", child)
    finally:
        bot.stop()
    python = local.bot_python()
    box = [backend.bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent"]
    box += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    show_times(
        compare(
            {
                "bwrap + true": [*box, "--", TRUE],
                "bwrap + supervisor + true": [
                    *box,
                    "--as-pid-1",
                    "--",
                    python,
                    "-I",
                    "-S",
                    "-c",
                    SUPERVISOR,
                    "-1",
                    TRUE,
                ],
            },
            runs,
        ),
        "bwrap + true",
    )

    @contextlib.contextmanager
    def without() -> Iterator[None]:
        with (
            patched(local, "supervised", lambda command, python, fd: command),
            patched(local, "_pid1_option", lambda fd: []),
        ):
            yield

    start_times(backend, starts, without, bwrap_charge)


def docker(runs: int, starts: int) -> None:
    try:
        from sandbox import base_image
        from sandbox import docker_backend as dockers

        client = dockers.docker_client(timeout=30)
    except Exception as exc:
        print(f"docker: skipped ({exc})")
        return
    made = seccomp.compiled_filter()
    if isinstance(made, str):
        print(f"docker: skipped ({made})")
        return
    tag = os.environ.get("KRYT_SANDBOX_BASE_IMAGE") or ""
    if not tag or not base_image.image_exists(tag):
        tag = base_image.build()
    backend = dockers.DockerBackend(base_image=tag)
    print(f"docker: base image {tag}")
    bot = backend.start(BOT, SandboxLimits(startup_timeout=120), "bench-supervisor-memory")
    try:
        assert isinstance(bot, dockers.DockerBot)
        bot.container.reload()
        pid = int(bot.container.attrs["State"]["Pid"])
        show_memory("launcher + supervisor (process 1)", pid)
        for child in children_of(pid):
            show_memory("for comparison: the bot itself", child)
    finally:
        bot.stop()
    # Timed inside one container: the engine's own start (hundreds of ms) is the same either
    # way and would drown the difference.
    encoded = base64.b64encode(made).decode()
    cases = {
        "true": [TRUE],
        "python3 -I -S -c pass": ["python3", "-I", "-S", "-c", "pass"],
        "supervisor + true": ["python3", "-I", "-S", "-c", TOKEN_SUPERVISOR, TRUE],
        "launcher (filter, exec) + true": [
            "python3",
            "-I",
            "-S",
            "-c",
            seccomp.LAUNCHER,
            encoded,
            TRUE,
        ],
    }
    timer = (
        "import json, subprocess, statistics, sys, time\n"
        "cases, runs = json.loads(sys.argv[1]), int(sys.argv[2])\n"
        "times = {k: [] for k in cases}\n"
        "for _ in range(runs + 1):\n"
        "    for k, argv in cases.items():\n"
        "        t = time.perf_counter(); subprocess.run(argv, check=True)\n"
        "        times[k].append(time.perf_counter() - t)\n"
        "print(json.dumps({k: statistics.median(v[1:]) for k, v in times.items()}))\n"
    )
    output = client.containers.run(
        tag,
        ["python3", "-c", timer, json.dumps(cases), str(runs)],
        remove=True,
        network_mode="none",
        user="65534:65534",
    )
    show_times(json.loads(output), "true")
    unsupervised = seccomp.LAUNCHER.replace("if os.getpid() != 1:", "if True:", 1)
    assert unsupervised != seccomp.LAUNCHER

    def confined(argv: list[str]) -> list[str]:
        return ["python3", "-I", "-S", "-c", unsupervised, encoded, *argv]

    @contextlib.contextmanager
    def without() -> Iterator[None]:
        with patched(dockers, "confined_command", confined):
            yield

    start_times(backend, starts, without, docker_charge)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs of each micro case")
    parser.add_argument("--starts", type=int, default=6, help="bot starts of each macro case")
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["host", "bwrap", "docker"],
        choices=["host", "bwrap", "docker"],
    )
    opts = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if os.geteuid() != 0:
        print("warning: not root: bwrap and Docker may refuse untrusted bots or be unreachable")
    if "host" in opts.backends:
        host(opts.runs)
    if "bwrap" in opts.backends:
        if shutil.which("bwrap"):
            bwrap(opts.runs, opts.starts)
        else:
            print("bwrap: skipped (not installed)")
    if "docker" in opts.backends:
        docker(opts.runs, opts.starts)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
