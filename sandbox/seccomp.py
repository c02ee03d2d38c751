"""The bwrap sandbox's seccomp filter: system calls a bot never needs, refused with EPERM.

Docker applies its default seccomp profile to every container; bwrap applies none of its own,
so without this module a bwrap bot could reach kernel interfaces that are the usual attack
surface of local exploits (io_uring, eBPF, perf events, keyrings, userfaultfd, module and
mount calls) even though none of them gives it anything inside the sandbox. The filter is a
deny list: everything a runtime uses (Python, the JVM, Node, Go, C++) stays allowed, and
libuv, the JVM and Go fall back when io_uring or perf events answer EPERM, as they do under
Docker. System calls of another ABI (32-bit ``int 0x80``, x32) fail with ENOSYS, so the list
cannot be bypassed through them.

The filter is compiled once a process by the system's libseccomp (through ``pyseccomp``,
ctypes) into classic BPF, which bwrap loads with ``--seccomp FD`` just before it runs the
bot (after ``PR_SET_NO_NEW_PRIVS``). Where libseccomp is missing, :func:`filter_problem` says
so and the bwrap backend refuses untrusted bots.
"""

from __future__ import annotations

import errno
import functools
import os
from typing import Final

DENIED: Final = (
    # Kernel attack surface a bot has no use for.
    "bpf",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "perf_event_open",
    "userfaultfd",
    "add_key",
    "keyctl",
    "request_key",
    # Other processes and namespaces.
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "setns",
    "unshare",
    # File systems, handles and devices.
    "mount",
    "umount2",
    "pivot_root",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "quotactl",
    "quotactl_fd",
    "swapon",
    "swapoff",
    "ioperm",
    "iopl",
    "vhangup",
    # The machine: modules, clocks, reboot, accounting, logs.
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "acct",
    "syslog",
    "clock_settime",
    "clock_adjtime",
    "settimeofday",
    "adjtimex",
    "lookup_dcookie",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "nfsservctl",
)
"""System calls the filter refuses with EPERM (names this architecture does not have are
skipped)."""


@functools.cache
def compiled_filter() -> bytes | str:
    """The filter as classic BPF (what ``bwrap --seccomp`` reads), or why it cannot be made
    here (one line). Made once a process."""
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: no libseccomp
        return f"no seccomp filter: libseccomp is not available ({exc})"
    try:
        rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        rules.set_attr(pyseccomp.Attr.ACT_BADARCH, pyseccomp.ERRNO(errno.ENOSYS))
        for name in DENIED:
            try:
                number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
            except (OSError, ValueError):
                continue
            if number < 0:  # not a system call of this architecture
                continue
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), number)
        with os.fdopen(os.memfd_create("kryt-seccomp", os.MFD_CLOEXEC), "w+b") as scratch:
            rules.export_bpf(scratch)
            scratch.seek(0)
            program = scratch.read()
    except (OSError, ValueError, RuntimeError) as exc:
        return f"no seccomp filter: libseccomp failed ({exc})"
    if not program or len(program) % 8:
        return f"no seccomp filter: libseccomp gave {len(program)} bytes, not a BPF program"
    return program


def filter_problem() -> str | None:
    """Why bots here run without the filter (one line), or None."""
    made = compiled_filter()
    return made if isinstance(made, str) else None


def filter_fd() -> int:
    """A new descriptor, at offset 0, holding the compiled filter for one bwrap to read
    (``--seccomp FD``; the caller passes it to the child and closes it after the start).
    RuntimeError when there is no filter (check :func:`filter_problem` first)."""
    made = compiled_filter()
    if isinstance(made, str):
        raise RuntimeError(made)
    fd = os.memfd_create("kryt-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, made)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
