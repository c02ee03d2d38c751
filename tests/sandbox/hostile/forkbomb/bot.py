"""Hostile: serves, then forks without end (every child keeps forking too)."""

import os
import threading
import time

from _serve import serve  # type: ignore[import-not-found]

state = {"forks": 0, "failures": 0}


def bomb() -> None:
    time.sleep(1.0)  # let the referee see SERVING first: the bomb goes off mid-match
    while True:
        try:
            if os.fork() == 0:
                while True:  # the child: fork again, forever
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.05)
            state["forks"] += 1
        except OSError:
            state["failures"] += 1
            time.sleep(0.05)


server = serve(lambda: state, block=False)
threading.Thread(target=bomb, daemon=True).start()
while True:
    time.sleep(3600)
