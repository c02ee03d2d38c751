"""Careless: leaves a double-forked, setsid grandchild deaf to SIGTERM and SIGHUP, then ends
on its own a moment after its first probe: with exit status 3, or by SIGTERM when its folder
holds ``how.txt`` saying ``signal``. The grandchild's command line carries the text of
``marker.txt`` (each test its own, so tests running at once do not see each other's)."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

from _serve import serve  # type: ignore[import-not-found]

LINGER = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "time.sleep(3600)\n"
)
HOW = Path(__file__).with_name("how.txt")
MARKER = Path(__file__).with_name("marker.txt").read_text().strip()


def daemonize() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", LINGER, MARKER])
        os._exit(0)
    os.wait()


def end_soon() -> None:
    time.sleep(0.2)
    if HOW.exists() and HOW.read_text().strip() == "signal":
        os.kill(os.getpid(), signal.SIGTERM)
    os._exit(3)


def report() -> dict[str, bool]:
    threading.Thread(target=end_soon, daemon=True).start()
    return {"daemonized": True}


daemonize()
serve(report)
