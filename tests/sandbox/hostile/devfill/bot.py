"""Hostile: writes into /dev, fills /dev/shm, lists /dev (a writable /dev of half the RAM
sat outside every limit)."""

import os

from _serve import serve  # type: ignore[import-not-found]


def report() -> dict[str, object]:
    result: dict[str, object] = {"dev": sorted(os.listdir("/dev"))}
    try:
        with open("/dev/kryt-fill", "wb") as handle:
            handle.write(b"x" * 4096)
        result["dev_write"] = "ok"
    except OSError as exc:
        result["dev_write"] = exc.strerror
    written = 0
    try:
        with open("/dev/shm/fill", "wb") as handle:
            chunk = b"\x01" * (1 << 20)
            while written < (256 << 20):
                handle.write(chunk)
                handle.flush()
                written += len(chunk)
    except OSError as exc:
        result["shm_error"] = exc.strerror
    result["shm_written"] = (
        os.stat("/dev/shm/fill").st_size if os.path.exists("/dev/shm/fill") else 0
    )
    return result


serve(report)
