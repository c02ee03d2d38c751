"""Hostile: ends as ``how.txt`` says, trying to choose the label of its forfeit.

- ``memoryerror``: prints a MemoryError traceback and exits 1 (no memory was short);
- ``exit153``: exits with status 153 (128 + SIGXFSZ) without any signal;
- ``fsize``: writes past its file-size limit with SIGXFSZ at its default action (a real
  breach, killed by the kernel's signal);
- ``raisexfsz``: raises SIGXFSZ on itself with nothing written (its wait status then says
  SIGXFSZ, as a real breach's does);
- ``sparse``: truncates a file to its file-size limit (its size, none of its data), then
  raises SIGXFSZ on itself;
- ``lowered``: lowers its own file-size limit to 1 MiB, then writes past that (the kernel's
  SIGXFSZ, at a limit it chose).
"""

import os
import resource
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
# /tmp in a sandbox; the plain-process backend runs in the bot's own (copied) folder.
PATH = "/tmp/huge" if os.getcwd() == "/bot" else "huge"
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
if HOW == "lowered":
    resource.setrlimit(
        resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
    )
if HOW in {"fsize", "lowered"}:
    with open(PATH, "wb") as handle:
        for _ in range(64):
            handle.write(b"\x03" * (1 << 20))
    os._exit(0)
if HOW == "sparse":
    with open(PATH, "wb") as handle:
        handle.truncate(resource.getrlimit(resource.RLIMIT_FSIZE)[0])
if HOW in {"raisexfsz", "sparse"}:
    print("bye", flush=True)
    os.kill(os.getpid(), signal.SIGXFSZ)
    os._exit(0)
raise SystemExit(f"unknown how.txt: {HOW!r}")
