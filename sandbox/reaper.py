"""A watchdog that removes a runner's sandboxes when the runner dies, even by ``kill -9``.

bwrap bots die with their runner (parent-death signal), but Docker containers do not, and
the socket tmpfs mounts and cgroups a runner created stay on the host. So the first
isolating ``start()`` of a runner process launches ``python -m sandbox.reaper <token>`` in
its own session, holding the write end of a pipe to its stdin. The runner never writes;
when it dies for any reason the kernel closes the pipe, the reaper reads EOF and removes
everything labelled with that runner's token (:func:`reap`): containers, socket and work
directories (unmounting their tmpfs), bot cgroups. Then it exits. A runner that exits
normally has cleaned up already, so the reaper finds nothing. Problems go to
``<runtime dir>/reaper.log``.

If the reaper itself is killed too, ``sweep_leftovers()`` at the next start removes the
same things (a dead runner's token identifies them).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from sandbox.errors import SandboxInfrastructureError
from sandbox.runner import current_runner

__all__ = ["reap", "reaper_pid", "start_reaper"]

_lock = threading.Lock()
#: (owner pid, reaper pid, write end of the reaper's stdin pipe)
_state: dict[str, tuple[int, int, int]] = {}


def _forget_in_child() -> None:
    # A forked child must not keep the pipe open: the reaper would outlive the runner's
    # death waiting for the child.
    entry = _state.pop("reaper", None)
    if entry is not None:
        with contextlib.suppress(OSError):
            os.close(entry[2])


os.register_at_fork(after_in_child=_forget_in_child)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in {"Z", "X"}
    except (OSError, IndexError):
        return False


def start_reaper() -> int:
    """Start this runner's reaper once (idempotent); return its pid."""
    with _lock:
        entry = _state.get("reaper")
        if entry is not None and entry[0] == os.getpid() and _running(entry[1]):
            return entry[1]
        if entry is not None:
            with contextlib.suppress(OSError):
                os.close(entry[2])
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        from sandbox.backend import runtime_dir

        log_path = str(runtime_dir() / "reaper.log")
        read_end, write_end = os.pipe()  # both close-on-exec; read_end is passed explicitly
        try:
            # A shell starts the reaper in the background and exits: the reaper is nobody's
            # child here (no zombie, no Popen object to outlive), in its own session so a
            # Ctrl-C or killpg of the runner's group spares it. The pipe comes in as the
            # shell's stdin and is moved to fd 3: a background job's stdin is /dev/null
            # unless redirected, and POSIX sh (dash) accepts only single-digit descriptors
            # in a redirection (`<&13` is a syntax error, and the reaper never started).
            launcher = subprocess.run(
                [
                    "/bin/sh",
                    "-c",
                    # No pipe of ours may stay open in the reaper, or run() waits for it.
                    'exec 3<&0 </dev/null; "$@" <&3 3<&- >/dev/null 2>>"$0" & echo $!',
                    log_path,
                    sys.executable,
                    "-m",
                    "sandbox.reaper",
                    current_runner().token,
                ],
                stdin=read_end,
                capture_output=True,
                text=True,
                start_new_session=True,
                env=env,
                cwd="/",
                check=True,
                timeout=30,
            )
            pid = int(launcher.stdout.split()[0])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
            os.close(write_end)
            raise SandboxInfrastructureError(f"cannot start the sandbox reaper: {exc}") from exc
        finally:
            os.close(read_end)
        _state["reaper"] = (os.getpid(), pid, write_end)
        return pid


def reaper_pid() -> int | None:
    """The pid of this runner's reaper, if one was started (for tests and diagnostics)."""
    entry = _state.get("reaper")
    return entry[1] if entry is not None and entry[0] == os.getpid() else None


def _owned_by(name: str, token: str) -> bool:
    parts = name.rsplit(".", 2)
    return len(parts) == 3 and parts[1] == token


def reap(token: str) -> tuple[int, list[str]]:
    """Remove every container, socket/work directory and cgroup of runner ``token``.

    Returns ``(removed, errors)``; every item is attempted whatever failed before.
    """
    from sandbox.backend import runtime_dir
    from sandbox.cgroups import BotCgroup, cgroup_layout
    from sandbox.errors import CleanupError, SandboxError
    from sandbox.hostfs import remove_tree

    removed, errors = 0, []
    try:
        from sandbox.docker_backend import remove_runner_containers

        count, problems = remove_runner_containers(token)
        removed += count
        errors += problems
    except SandboxError:
        pass  # no engine: no containers
    try:
        base = runtime_dir()
        children = list(base.iterdir())
        children += list((base / "dial").iterdir()) if (base / "dial").is_dir() else []
    except (OSError, SandboxError) as exc:
        errors.append(f"cannot list the runtime directory: {exc}")
        children = []
    for child in children:
        if _owned_by(child.name, token):
            try:
                remove_tree(child)
                removed += 1
            except CleanupError as exc:
                errors.append(str(exc))
    layout = cgroup_layout()
    if not isinstance(layout, str):
        names: set[str] = set()
        for _, parent in layout.parents:
            with contextlib.suppress(OSError):
                names.update(c.name for c in parent.iterdir() if _owned_by(c.name, token))
        for name in sorted(names):
            try:
                BotCgroup(layout, name).remove()
                removed += 1
            except CleanupError as exc:
                errors.append(str(exc))
    return removed, errors


def main(argv: list[str]) -> int:
    """Wait for EOF on stdin (the runner is gone), then reap its sandboxes."""
    if len(argv) != 2:
        print("usage: python -m sandbox.reaper <runner token>", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    _, errors = reap(argv[1])
    for error in errors:
        print(f"kryt sandbox reaper: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
