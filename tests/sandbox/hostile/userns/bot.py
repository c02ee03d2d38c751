"""Hostile: tries to become root in a user namespace of its own, then to use what that
gives (a mount, raw and netfilter sockets); reports every step that worked."""

import ctypes
import os
import socket

from _serve import serve  # type: ignore[import-not-found]

CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
NETLINK_NETFILTER = 12


def attempt() -> dict[str, object]:
    libc = ctypes.CDLL(None, use_errno=True)
    worked: list[str] = []
    uid, gid = os.getuid(), os.getgid()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # unshare changes the caller: do it in a child, report through the pipe
        os.close(read)
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) == 0:
            worked.append("unshare")
            try:
                for name, text in (
                    ("setgroups", "deny"),
                    ("uid_map", f"0 {uid} 1"),
                    ("gid_map", f"0 {gid} 1"),
                ):
                    with open(f"/proc/self/{name}", "w") as handle:
                        handle.write(text)
                worked.append(f"uid {os.getuid()}")
            except OSError:
                pass
            if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
                worked.append("mount")
            for label, family, kind, proto in (
                ("netfilter", socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER),
                ("packet", socket.AF_PACKET, socket.SOCK_RAW, 0),
                ("raw icmp", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
            ):
                try:
                    socket.socket(family, kind, proto).close()
                    worked.append(label)
                except OSError:
                    pass
        os.write(write, ",".join(worked).encode())
        os._exit(0)
    os.close(write)
    said = os.read(read, 4096).decode()
    os.waitpid(child, 0)
    return {"worked": [w for w in said.split(",") if w]}


RESULT = attempt()
serve(lambda: RESULT)
