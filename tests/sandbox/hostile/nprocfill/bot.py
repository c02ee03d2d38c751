"""Hostile: once connected, forks sleeping children until the kernel refuses (EAGAIN).

Under one shared uid with RLIMIT_NPROC this left no process for the next bot's sandbox:
its opponent forfeited with a start-up failure. A helper forked before gRPC starts (gRPC
and fork do not mix) waits until the referee has connected, forks children that sleep for
two minutes, writes how many it made ("children N: <error>"), then lets ten of them go so
that the bot's own gRPC threads can still run, and holds the rest.
"""

import os
import signal
import time


def fill() -> None:
    time.sleep(3.0)
    children: list[int] = []
    error = ""
    while len(children) < 100000:
        try:
            pid = os.fork()
        except OSError as exc:
            error = exc.strerror or str(exc)
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        children.append(pid)
    for pid in children[:10]:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    print(f"children {len(children)}: {error}", flush=True)
    time.sleep(120)
    os._exit(0)


if os.fork() == 0:
    fill()

from _serve import serve  # type: ignore[import-not-found]  # noqa: E402

serve()
