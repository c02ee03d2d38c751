"""Hostile: serves, and keeps four processes spinning on the CPU all the time."""

import os
import time

from _serve import serve  # type: ignore[import-not-found]

server = serve(block=False)
for _ in range(3):
    if os.fork() == 0:
        break
while True:  # every process (parent included) spins; the parent's gRPC threads still serve
    sum(i * i for i in range(10_000))
    time.sleep(0)
