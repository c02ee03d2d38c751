"""Hostile: a grandchild in a session of its own, adopted away from the bot, ignoring SIGTERM
and SIGHUP: what a bot would do to outlive its game."""

import os
import sys

from _serve import serve  # type: ignore[import-not-found]

# The test looks for this argument in every host process's command line.
MARKER = "kryt-daemon-" + "grandchild"
LINGER = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "time.sleep(3600)\n"
)


def daemonize() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", LINGER, MARKER])
        os._exit(0)
    os.wait()


daemonize()
serve(lambda: {"daemonized": True})
