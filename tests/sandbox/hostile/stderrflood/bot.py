"""Hostile: floods its standard error without end from a thread of its own (its server keeps
answering), so moving its output costs whoever reads it; the report counts what it wrote."""

import os
import threading

from _serve import serve  # type: ignore[import-not-found]

BLOCK = b"x" * 65535 + b"\n"
written = 0


def flood() -> None:
    global written
    while True:
        written += os.write(2, BLOCK)


threading.Thread(target=flood, daemon=True).start()
serve(lambda: {"written": written})
