"""Hostile: ends as ``how.txt`` says, trying to choose the label of its forfeit.

- ``memoryerror``: prints a MemoryError traceback and exits 1 (no memory was short);
- ``exit153``: exits with status 153 (128 + SIGXFSZ) without any signal;
- ``fsize``: writes past its file-size limit with SIGXFSZ at its default action (a real
  breach, killed by the kernel's signal).
"""

import os
import signal
import sys

with open("how.txt") as handle:
    HOW = handle.read().strip()
if HOW == "memoryerror":
    sys.stderr.write("Traceback (most recent call last):\n  File bot.py\nMemoryError\n")
    sys.stderr.flush()
    os._exit(1)
if HOW == "exit153":
    print("bye", flush=True)
    os._exit(153)
if HOW == "fsize":
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    # /tmp in a sandbox; the plain-process backend runs in the bot's own (copied) folder.
    path = "/tmp/huge" if os.getcwd() == "/bot" else "huge"
    with open(path, "wb") as handle:
        for _ in range(64):
            handle.write(b"\x03" * (1 << 20))
    os._exit(0)
raise SystemExit(f"unknown how.txt: {HOW!r}")
