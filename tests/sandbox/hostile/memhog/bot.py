"""Hostile: serves, then allocates (and touches) memory without end in the main thread."""

import time

from _serve import serve  # type: ignore[import-not-found]

server = serve(block=False)
time.sleep(0.5)
hoard = []
while True:
    hoard.append(b"\x01" * (8 << 20))
