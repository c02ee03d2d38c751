"""Hostile: reads what it should not: the other bot's code, host secrets, other processes."""

import os
import time

from _serve import serve  # type: ignore[import-not-found]

# Built at run time so this file itself never contains the marker.
MARKER = ("KRYT-VICTIM-" + "SECRET-7f3a").encode()
SKIP = {"/proc", "/sys", "/dev", "/usr"}
# Each walk gives up after this long and says so (the test then fails: a walk cut short proves
# nothing). The host's /usr alone is ~10^5 entries: on a busy CI machine a walk of it has taken
# over 5 s, so the budget is generous; both walks together stay well inside the tests'
# start-up deadline (the snoop walks before it serves).
WALK_SECONDS = 45.0


def find_marker(budget: float = WALK_SECONDS) -> list[str]:
    found: list[str] = []
    deadline = time.monotonic() + budget
    for top, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in SKIP]
        for name in files:
            path = os.path.join(top, name)
            if time.monotonic() > deadline:
                return [*found, "<budget exhausted>"]
            try:
                if os.path.islink(path) or os.path.getsize(path) > (1 << 20):
                    continue
                with open(path, "rb") as handle:
                    if MARKER in handle.read():
                        found.append(path)
            except OSError:
                pass
    return found


def readable(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
        return True
    except OSError:
        return False


def processes() -> list[str]:
    seen = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    seen.append(handle.read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return seen


def foreign_sockets(budget: float = WALK_SECONDS) -> list[str]:
    """Every Unix socket on the file system: the snoop reports before it serves, so none is
    its own (another bot's would let it send that bot a Shutdown)."""
    import stat

    found: list[str] = []
    deadline = time.monotonic() + budget
    pending = ["/"]
    while pending:
        top = pending.pop()
        if time.monotonic() > deadline:
            return [*found, "<budget exhausted>"]
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in {"/proc", "/sys"}:
                        pending.append(entry.path)
                # The directory entry's type says file or link without a stat; only what is
                # neither (a socket, fifo or device) is looked at closer.
                elif (
                    not entry.is_file(follow_symlinks=False)
                    and not entry.is_symlink()
                    and stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
                ):
                    found.append(entry.path)
            except OSError:
                pass
    return found


RESULT = {
    "sockets": foreign_sockets(),
    "marker_found": find_marker(),
    "shadow_readable": readable("/etc/shadow"),
    "docker_sock_exists": os.path.exists("/var/run/docker.sock"),
    "home_listing": sorted(os.listdir("/root")) if readable("/root/.bashrc") else [],
    "processes": processes(),
    "usr_local": sorted(os.listdir("/usr/local")) if os.path.isdir("/usr/local") else [],
}
serve(lambda: RESULT)
