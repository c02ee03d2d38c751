"""The sandboxes' seccomp filter: system calls a bot never needs, refused with EPERM.

bwrap applies no seccomp filter of its own, and Docker's default profile (an allow list)
still lets some of these through (this engine's lets ``io_uring_setup`` and ``ptrace`` reach
the kernel, and allows 32-bit system calls). Without this module a bot could reach kernel
interfaces that are the usual attack surface of local exploits (io_uring, eBPF, perf events,
keyrings, userfaultfd, module and mount calls) even though none of them gives it anything
inside the sandbox. The filter is a
deny list: everything a runtime uses (Python, the JVM, Node, Go, C++) stays allowed, and
libuv, the JVM and Go fall back when io_uring or perf events answer EPERM, as they do under
Docker. System calls of another ABI (32-bit ``int 0x80``, x32) fail with ENOSYS, so the list
cannot be bypassed through them.

The filter is compiled once a process by the system's libseccomp (through ``pyseccomp``,
ctypes) into classic BPF. bwrap loads it with ``--seccomp FD`` just before it runs the bot
(after ``PR_SET_NO_NEW_PRIVS``). Under Docker, :func:`confined_command` starts the bot (and
its build) through :data:`LAUNCHER`, run by the image's ``python3`` before any code of the
bot's: it loads the same program, which the kernel stacks on Docker's profile (every filter
of a process is asked; the strictest answer wins), then executes the bot's command. Where
libseccomp is missing, or the kernel refuses the program (tried once, in a child process),
:func:`filter_problem` says so and both backends refuse untrusted bots.
"""

from __future__ import annotations

import base64
import errno
import functools
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Final

from sandbox.supervisor import SUPERVISE, TOKEN_ENV

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
    # Watching files: a bot could see, through the read-only files every sandbox shares
    # (the staged runtime, bwrap's view of /usr), when its opponent starts or imports a
    # module; inotify instances are also a per-uid quota. No runtime needs it to play.
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    # The page cache of the files every sandbox shares (bwrap's view of the host's /usr, the
    # staged runtime): ``cachestat`` reports which pages of a file are cached; refused here
    # (mincore already reports every page of a file the caller may not write as resident;
    # fadvise64 and readahead are ignored, IGNORED_ADVICE; preadv2's RWF_NOWAIT refused).
    "cachestat",
    # Legacy AIO: ``/proc/sys/fs/aio-nr`` counts the machine's AIO events and
    # ``aio-max-nr`` caps them for the whole machine, no namespace apart. One bot's contexts
    # showed in another's count (a channel) and one bot could take them all (the referee's
    # and every other bot's io_setup then failed). No runtime needs it to play.
    "io_setup",
    "io_destroy",
    "io_submit",
    "io_cancel",
    "io_getevents",
    "io_pgetevents",
    "quotactl",
    "quotactl_fd",
    "swapon",
    "swapoff",
    "ioperm",
    "iopl",
    "modify_ldt",
    "vhangup",
    # Memory: secret memory, and NUMA placement Docker's profile refuses without
    # CAP_SYS_NICE (the runtimes run there without them: the JVM only asks with UseNUMA).
    "memfd_secret",
    "mbind",
    "set_mempolicy",
    "set_mempolicy_home_node",
    "move_pages",
    "migrate_pages",
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

LOCK_COMMANDS: Final = (5, 6, 7, 36, 37, 38)
"""``fcntl`` commands of file locks (``F_GETLK``, ``F_SETLK``, ``F_SETLKW`` and their
open-file-description forms ``F_OFD_*``), refused to a running bot with ``flock``. Two bots
under bwrap share the inodes of the host's ``/usr`` and of the staged runtime (read-only,
but a read-only file can be locked): one locking a file and the other testing the lock was a
channel between two bots of one author at one table (found by a hostile review, 2026-12-05).
Builds keep their locks (Go's build cache, for one, locks its files) and run alone."""

RWF_NOWAIT: Final = 0x8
"""``preadv2``'s flag that reads only what is in the page cache and fails with EAGAIN
otherwise: one byte a page told another bot which pages of a shared read-only file were
cached, exactly (found by a hostile review, round 10)."""

NOWAIT_FLAGS_ARG: Final = 5
"""The argument of ``preadv2``/``pwritev2`` holding its flags: ``(fd, iov, iovcnt, pos_l,
pos_h, flags)`` on every 64-bit ABI the kernel has (the offset is passed split even there),
the sixth register."""

IGNORED_ADVICE: Final = ("fadvise64", "readahead")
"""Page-cache advice a bot's call "succeeds" at without the kernel seeing it (the filter
answers 0): ``posix_fadvise(POSIX_FADV_DONTNEED)`` dropped pages of a shared read-only file
from the page cache, the sender's half of the channel :data:`RWF_NOWAIT` read. Advice may
be ignored (the kernel itself ignores it for files without a backing device), so a
program that gives it keeps working where ``EPERM`` would make Python's
``os.posix_fadvise`` raise."""


@functools.cache
def compiled_filter(build: bool = False) -> bytes | str:
    """The filter as classic BPF (what ``bwrap --seccomp`` reads), or why it cannot be made
    here (one line). A running bot's also refuses file locks (:data:`LOCK_COMMANDS`); a
    ``build``'s does not. Made once a process."""
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
        for name in IGNORED_ADVICE:
            rules.add_rule(pyseccomp.ERRNO(0), name)
        for name in ("preadv2", "pwritev2"):
            # A file system without non-blocking reads answers EOPNOTSUPP to RWF_NOWAIT
            # (overlayfs under Docker does): a program asking for it already falls back.
            flags = NOWAIT_FLAGS_ARG
            nowait = pyseccomp.Arg(flags, pyseccomp.MASKED_EQ, RWF_NOWAIT, RWF_NOWAIT)
            rules.add_rule(pyseccomp.ERRNO(errno.EOPNOTSUPP), name, nowait)
        if not build:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), "flock")
            for command in LOCK_COMMANDS:
                # The kernel reads the command as a 32-bit int: compare only those bits, so
                # that a caller setting the upper half of the register cannot slip past.
                lock = pyseccomp.Arg(1, pyseccomp.MASKED_EQ, 0xFFFF_FFFF, command)
                rules.add_rule(pyseccomp.ERRNO(errno.EPERM), "fcntl", lock)
        with os.fdopen(os.memfd_create("kryt-seccomp", os.MFD_CLOEXEC), "w+b") as scratch:
            rules.export_bpf(scratch)
            scratch.seek(0)
            program = scratch.read()
    except (OSError, ValueError, RuntimeError) as exc:
        return f"no seccomp filter: libseccomp failed ({exc})"
    if not program or len(program) % 8:
        return f"no seccomp filter: libseccomp gave {len(program)} bytes, not a BPF program"
    return kernel_refusal(program) or program


def kernel_refusal(program: bytes) -> str | None:
    """Why this machine's kernel refuses ``program`` (one line), or None when it loads it.

    Tried once in a child process through :data:`LAUNCHER` (the kernel is the one every
    sandbox shares), so a refusal is known before a bot starts: otherwise each bot would die
    at its start, which would read as the bot's fault."""
    argv = [sys.executable, "-I", "-S", "-c", LAUNCHER, base64.b64encode(program).decode()]
    try:
        done = subprocess.run(
            [*argv, sys.executable, "-I", "-S", "-c", ""],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no seccomp filter: could not try it ({exc})"
    if done.returncode == 0:
        return None
    said = " ".join(done.stderr.split())[-300:] or f"exit status {done.returncode}"
    return f"no seccomp filter: this kernel refuses it ({said})"


def filter_problem() -> str | None:
    """Why bots here run without the filter (one line), or None (then both the running
    bots' and the builds' filters are made)."""
    for build in (False, True):
        made = compiled_filter(build)
        if isinstance(made, str):
            return made
    return None


def filter_fd(build: bool = False) -> int:
    """A new descriptor, at offset 0, holding the compiled filter (a running bot's, or a
    ``build``'s) for one bwrap to read (``--seccomp FD``; the caller passes it to the child
    and closes it after the start). RuntimeError when there is no filter (check
    :func:`filter_problem` first)."""
    made = compiled_filter(build)
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


LAUNCHER: Final = (
    """\
import binascii, ctypes, os, sys
"""
    + SUPERVISE
    + """
program = binascii.a2b_base64(sys.argv[1])
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
libc = ctypes.CDLL(None, use_errno=True)
prog = Program(len(program) // 8, program)
ulong = ctypes.c_ulong
for option, argument in ((38, ulong(1)), (22, ulong(2))):
    # 38: PR_SET_NO_NEW_PRIVS; 22: PR_SET_SECCOMP with 2, SECCOMP_MODE_FILTER.
    third = ctypes.byref(prog) if option == 22 else ulong(0)
    if libc.prctl(option, argument, third, ulong(0), ulong(0)) != 0:
        error = os.strerror(ctypes.get_errno())
        sys.stderr.write(f"kryt: the sandbox could not load its seccomp filter: {error}\\n")
        sys.stderr.flush()
        os._exit(125)
if os.getpid() != 1:
    _kryt_exec(sys.argv[2:])
_kryt_supervise(sys.argv[2:], -1, os.environ.pop(TOKEN_ENV, ""))
""".replace("TOKEN_ENV", repr(TOKEN_ENV))
)
"""The container side of :func:`confined_command`: ``python3 -I -S -c LAUNCHER FILTER ARGV``
loads the filter (base64 of the classic BPF program), then executes ``ARGV``. ``-I`` keeps
the bot's directory off ``sys.path`` (a ``ctypes`` package shipped with the bot is never
imported; the filter is decoded with ``binascii``, not ``base64``, whose ``re`` import cost
~1 MiB of the bot's memory and ~2 ms a start) and ignores ``PYTHON*`` variables; ``-S``
skips ``site``. It exits 125 with one line on standard error when the kernel refuses the
filter.

As process 1 of a container it stays, under the filter, as the container's init: it runs
``ARGV`` as its child, forwards termination signals to it, reaps every orphan and exits as
the child did (128 + the signal's number for a signal, as Docker's init does), reporting a
signal death on standard error with the secret of :data:`sandbox.supervisor.TOKEN_ENV`
(:mod:`sandbox.supervisor`: a bot's own ``exit(153)`` is not a SIGXFSZ death). An init
outside the filter (Docker's ``docker-init``, of the bot's uid) could be rewritten through
``/proc/1/mem`` and run the bot's code unfiltered; and the bot itself as process 1 would
ignore the signals the kernel sends it by default (``SIGXFSZ`` at its file-size limit)."""

#: Exit status of :data:`LAUNCHER` when the filter could not be loaded.
LAUNCHER_FAILED: Final = 125


def confined_command(argv: Sequence[str], build: bool = False) -> list[str]:
    """``argv`` run under the filter (a running bot's, or a ``build``'s) by the image's
    ``python3`` (Docker's bots and builds): the container's command. RuntimeError when there
    is no filter here (check :func:`filter_problem` first)."""
    made = compiled_filter(build)
    if isinstance(made, str):
        raise RuntimeError(made)
    if not argv:
        raise ValueError("no command to confine")
    encoded = base64.b64encode(made).decode("ascii")
    # Found on the image's PATH: an image may keep its Python elsewhere than /usr/bin.
    return ["python3", "-I", "-S", "-c", LAUNCHER, encoded, *argv]
