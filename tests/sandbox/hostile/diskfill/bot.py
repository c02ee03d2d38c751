"""Hostile: tries to write outside /tmp, fills /tmp with files, then (on the ``Big`` call)
writes one file larger than any sane limit, which RLIMIT_FSIZE answers with SIGXFSZ."""

import os

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


def huge_file() -> bytes:
    chunk = b"\x03" * (1 << 20)
    with open("/tmp/huge", "wb") as handle:
        for _ in range(4096):
            handle.write(chunk)
            handle.flush()
    return b"survived"


outside = write_outside()
filled, fill_error = fill_tmp()
serve(lambda: {"outside": outside, "filled": filled, "fill_error": fill_error}, huge_file)
