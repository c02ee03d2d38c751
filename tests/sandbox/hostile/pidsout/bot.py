"""Hostile: at start, forks sleeping children until the process limit refuses one, then
exits with an error, as a bot whose work needs one more process would. The sandbox must
say the process limit was why (a process-limit death), not an ordinary crash."""

import os
import sys
import time

children = 0
while children < 100000:
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"refused after {children} children: {exc.strerror}", flush=True)
        sys.exit(1)
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    children += 1
sys.exit(2)  # never refused: the limit is not enforced here
