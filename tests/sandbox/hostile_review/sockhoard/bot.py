"""Hostile: pins kernel memory in AF_UNIX socket buffers, which no memory cgroup is charged.

On ``Report`` it forks ``CHILDREN`` processes; each opens socket pairs until its open-file
limit and fills every pair's queue (non-blocking sends until EAGAIN), then holds them. The
report says how many bytes the tree queued in all and how each child ended.
"""

import json
import os
import socket
import time

from _serve import serve  # type: ignore[import-not-found]

CHILDREN = 8
CHUNK = b"x" * 65536


def hoard(write_fd: int) -> None:
    queued = 0
    pairs = []
    try:
        while True:
            try:
                a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            except OSError:
                break
            pairs.append((a, b))
            for end in (a, b):
                end.setblocking(False)
                while True:
                    try:
                        queued += end.send(CHUNK)
                    except (BlockingIOError, OSError):
                        break
    finally:
        os.write(write_fd, json.dumps({"queued": queued, "pairs": len(pairs)}).encode() + b"\n")
        os.close(write_fd)
    time.sleep(600)


def report() -> dict[str, object]:
    results = []
    for _ in range(CHILDREN):
        read_fd, write_fd = os.pipe()
        if os.fork() == 0:
            os.close(read_fd)
            try:
                hoard(write_fd)
            finally:
                os._exit(0)
        os.close(write_fd)
        with os.fdopen(read_fd) as handle:
            line = handle.readline()
        results.append(json.loads(line) if line else None)
    queued = sum(r["queued"] for r in results if r)
    return {"queued": queued, "children": results}


serve(report)
