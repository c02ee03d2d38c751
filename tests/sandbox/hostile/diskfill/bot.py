"""Hostile: tries to write outside /tmp, fills /tmp with files, writes one huge file, and
(on the ``Big`` call) writes it again with SIGXFSZ at its default action.

CPython ignores SIGXFSZ, so a Python bot exceeding RLIMIT_FSIZE just gets EFBIG; native
code (or a bot that restores the default action) is killed by the signal instead.
"""

import os
import signal

from _serve import serve  # type: ignore[import-not-found]


def write_outside() -> list[str]:
    wrote = []
    for path in ("/bot/evil.txt", "/evil.txt", "/usr/evil.txt", "/etc/evil.txt"):
        try:
            with open(path, "w") as handle:
                handle.write("x")
            wrote.append(path)
        except OSError:
            pass
    return wrote


def fill_tmp() -> tuple[int, str]:
    """Write 1 MiB files into /tmp until something refuses; return bytes written."""
    total, error, index = 0, "", 0
    chunk = b"\x02" * (1 << 20)
    while total < (1 << 30):
        try:
            with open(f"/tmp/fill{index}", "wb") as handle:
                handle.write(chunk)
            total += len(chunk)
            index += 1
        except OSError as exc:
            error = exc.strerror or str(exc)
            break
    for name in os.listdir("/tmp"):
        if name.startswith("fill"):
            os.unlink(f"/tmp/{name}")
    return total, error


def huge_file() -> str:
    try:
        write_huge()
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        if os.path.exists("/tmp/huge"):
            os.unlink("/tmp/huge")
    return ""


def die_of_huge_file() -> bytes:
    write_huge()
    return b"survived"


def write_huge() -> None:
    chunk = b"\x03" * (1 << 20)
    with open("/tmp/huge", "wb") as handle:
        for _ in range(4096):
            handle.write(chunk)
            handle.flush()


outside = write_outside()
filled, fill_error = fill_tmp()
huge_error = huge_file()
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # from now on, exceeding RLIMIT_FSIZE kills
RESULT = {"outside": outside, "filled": filled, "fill_error": fill_error, "huge_error": huge_error}
serve(lambda: RESULT, die_of_huge_file)
