"""Hostile: serves, then fills its socket directory (bytes, files, a 5,000-level tree).

The socket directory was a plain host directory: 320 MiB and 20,000 files in 30 s, and a
deep tree that crashed the runner's clean-up. The report says how far each attempt got.
"""

import os

from _serve import serve  # type: ignore[import-not-found]

SOCK_DIR = "/run/kryt"


def fill_bytes() -> tuple[int, str]:
    written = 0
    try:
        with open(os.path.join(SOCK_DIR, "fill.bin"), "wb") as handle:
            chunk = b"\x01" * 65536
            while written < (64 << 20):
                handle.write(chunk)
                handle.flush()
                written += len(chunk)
    except OSError as exc:
        return written, exc.strerror or ""
    return written, ""


def fill_files() -> tuple[int, str]:
    for i in range(20000):
        try:
            with open(os.path.join(SOCK_DIR, f"f{i}"), "wb"):
                pass
        except OSError as exc:
            return i, exc.strerror or ""
    return 20000, ""


def deep_tree() -> tuple[int, str]:
    fd = os.open(SOCK_DIR, os.O_RDONLY | os.O_DIRECTORY)
    depth = 0
    try:
        while depth < 5000:
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            depth += 1
    except OSError as exc:
        return depth, exc.strerror or ""
    finally:
        os.close(fd)
    return depth, ""


def report() -> dict[str, object]:
    tree = deep_tree()
    files = fill_files()
    size = fill_bytes()
    return {"depth": tree, "files": files, "bytes": size}


serve(report)
