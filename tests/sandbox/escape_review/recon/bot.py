"""Hostile (round 10): looks at its inherited descriptors, process 1, every mount it can
write to, the host's services and the kernel's shared state; reports what it reached."""

import os
import socket
import stat

from _serve import serve  # type: ignore[import-not-found]


def fds() -> dict[str, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError as exc:
            target = f"? {exc.strerror}"
        found[name] = target
    return found


def escape_through_fds() -> list[str]:
    """A directory descriptor from outside would let '..' walk the host."""
    reached = []
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                reached.append(f"{name}: {sorted(os.listdir(up))[:20]}")
                os.close(up)
        except OSError:
            pass
    return reached


def pid1() -> dict[str, str]:
    seen = {}
    for what in ("environ", "cmdline", "maps", "mem", "fd", "fdinfo/0", "status", "stack"):
        path = f"/proc/1/{what}"
        try:
            if os.path.isdir(path):
                seen[what] = "listed " + ",".join(sorted(os.listdir(path)))
            else:
                with open(path, "rb") as handle:
                    data = handle.read(4096)
                seen[what] = "read " + data[:200].decode(errors="replace")
        except OSError as exc:
            seen[what] = f"refused {exc.errno}"
    return seen


def writable_mounts() -> list[str]:
    found = []
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4] for line in handle]
    for point in points:
        point = point.replace("\\040", " ")
        if os.path.isdir(point):
            probe = os.path.join(point, ".kryt-probe")
            try:
                with open(probe, "w") as out:
                    out.write("x")
                os.unlink(probe)
                found.append(point)
            except OSError:
                pass
        else:
            try:
                if stat.S_ISCHR(os.stat(point).st_mode):  # /dev/null and the like: no storage
                    continue
                with open(point, "a"):
                    found.append(point)
            except OSError:
                pass
    return found


def services() -> list[str]:
    reached = []
    for host, port in [
        ("127.0.0.1", 5432),
        ("127.0.0.1", 2375),
        ("127.0.0.1", 50051),
        ("::1", 5432),
    ]:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as conn:
                conn.settimeout(1.0)
                conn.connect((host, port))
                reached.append(f"tcp {host}:{port}")
        except OSError:
            pass
    for path in [
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/run/containerd/containerd.sock",
        "/var/run/postgresql/.s.PGSQL.5432",
        "/tmp/.s.PGSQL.5432",
        "\0/containerd-shim",
        "\0kryt",
    ]:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(1.0)
                conn.connect(path)
                reached.append(f"unix {path!r}")
        except OSError:
            pass
    return reached


def read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(8192).decode(errors="replace")
    except OSError as exc:
        return f"<{exc.strerror}>"


RESULT = {
    "fds": fds(),
    "fd_escapes": escape_through_fds(),
    "pid1": pid1(),
    "writable": writable_mounts(),
    "services": services(),
    "env": dict(os.environ),
    "uid": [os.getuid(), os.geteuid(), os.getgid()],
    "groups": os.getgroups(),
    "cgroup": read("/proc/self/cgroup"),
    "net_unix": read("/proc/net/unix"),
    "mountinfo": read("/proc/self/mountinfo"),
    "status": read("/proc/self/status"),
    "sys": sorted(os.listdir("/sys")) if os.path.isdir("/sys") else [],
    "pids": sorted(p for p in os.listdir("/proc") if p.isdigit()),
    "hostname": socket.gethostname(),
}
serve(lambda: RESULT)
