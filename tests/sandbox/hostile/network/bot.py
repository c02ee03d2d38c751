"""Hostile: tries outbound TCP/UDP and DNS; reports every attempt that succeeded."""

import os
import socket

from _serve import serve  # type: ignore[import-not-found]

TARGETS = [("1.1.1.1", 53), ("8.8.8.8", 53), ("172.17.0.1", 2375), ("10.0.2.2", 22)]


def attempt() -> dict[str, object]:
    connected = []
    for host, port in TARGETS:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                connected.append(f"tcp {host}:{port}")
        except OSError:
            pass
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.sendto(b"x", (host, port))
                connected.append(f"udp {host}:{port}")
        except OSError:
            pass
    try:
        socket.getaddrinfo("example.org", 80)
        connected.append("dns example.org")
    except OSError:
        pass
    try:
        interfaces = sorted(os.listdir("/sys/class/net"))
    except OSError:
        interfaces = []
    return {"connected": connected, "interfaces": interfaces}


RESULT = attempt()
serve(lambda: RESULT)
