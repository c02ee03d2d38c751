"""The bot's first process in the bwrap and Docker sandboxes: runs the bot as its child and
reports how it ended in a way the bot cannot forge.

A sandbox flattens a signal death into an exit status: bwrap and a container's init exit
with ``128 + N`` for signal N, which a bot can return on its own (``exit(153)``). The labels
that rest on a signal (``FILE_SIZE``: killed by SIGXFSZ) need the wait status itself, so the
sandbox's process 1 is this supervisor (bwrap ``--as-pid-1``; Docker: the seccomp launcher,
:data:`sandbox.seccomp.LAUNCHER`, continues with it). It

- makes itself non-dumpable (``PR_SET_DUMPABLE`` 0) before the bot exists: a process of the
  bot's uid can then neither read nor write it through ``/proc`` (memory, descriptors,
  environment); where that fails it reports nothing;
- forks the bot with SIGPIPE and SIGXFSZ at their default actions (CPython ignores both, and
  an ignored signal stays ignored across ``exec``: a native bot would get EFBIG instead of
  dying of SIGXFSZ), forwards termination signals to it and reaps every orphan (a namespace's
  process 1 is spared the signals it has no handler for, so the bot cannot kill it);
- when the bot ends by a signal, kills what is left of the bot (nothing it writes follows)
  and reports ``signal N`` (then exits ``128 + N``), else exits with the bot's status. The
  report goes to a descriptor the referee holds the other end of (bwrap: ``report_fd``) or,
  where no descriptor reaches (Docker), as a line :data:`STATUS_MARK` ``<token> signal N``
  on standard error: the token is a per-bot secret the supervisor takes out of its
  environment (:data:`TOKEN_ENV`) before the bot starts, so no bot can print the line;
- reports a SIGXFSZ death as ``signal 25 at-limit`` only with the file-size limit's evidence:
  a wait status does not say who sent the signal (``os.kill(os.getpid(), SIGXFSZ)`` looks
  like the kernel's), so after the bot's death it looks in the places the bot may write
  (:data:`WRITABLE_PLACES`) for a file the limit stopped (:func:`file_at_limit`). The limit is
  its own ``RLIMIT_FSIZE``, read before the bot exists (the bot inherits it; the hard limit
  equals the soft one, so the bot can only lower its own). Without that evidence it reports a
  plain ``signal 25``, which the backends turn into a crash (:func:`proven_signal`).
"""

from __future__ import annotations

import inspect
import re
import signal
from typing import Final, NamedTuple

__all__ = [
    "AT_LIMIT",
    "STATUS_MARK",
    "SUPERVISE",
    "SUPERVISOR",
    "TOKEN_ENV",
    "TOKEN_SUPERVISOR",
    "WRITABLE_PLACES",
    "Report",
    "file_at_limit",
    "host_report",
    "parse_report",
    "proven_signal",
    "reported",
    "strip_status",
    "unproven_file_size",
]

STATUS_MARK: Final = "kryt-sandbox-status"
"""First word of the supervisor's report line on standard error (Docker)."""
TOKEN_ENV: Final = "KRYT_STATUS_TOKEN"
"""Environment variable handing the supervisor its secret (Docker); removed before the bot
starts."""
AT_LIMIT: Final = "at-limit"
"""Last word of a SIGXFSZ report when a file of the bot's had reached its file-size limit."""
WRITABLE_PLACES: Final = ("/tmp", "/dev/shm", "/run/kryt")
"""Where a bot in a bwrap or Docker sandbox can write files (every other mount is read-only
or not its own): its ``/tmp`` and ``/dev/shm`` tmpfs and its socket directory
(:data:`sandbox.backend.SANDBOX_SOCKET_DIR`)."""


def file_at_limit(
    places: tuple[str, ...], limit: int, since: float = 0.0, seconds: float = 1.0
) -> bool:
    """True when a regular file under ``places`` (not crossing into other mounts, not
    following links) is at least ``limit`` bytes long and its data fill it (allocated
    blocks of at least ``limit`` bytes: a ``truncate`` to the limit costs nothing and is not
    enough), modified at ``since`` (seconds since the epoch) or later.

    That is what a real breach of ``RLIMIT_FSIZE`` leaves: the kernel cuts a write that
    crosses the limit short at the limit and sends SIGXFSZ for the next one. A bot that made
    such a file itself did reach its limit. The search gives up (False) after ``seconds`` or
    100,000 entries: a bot that hides its file among more loses the evidence, not the
    label's safety. Runs in the sandbox as part of :data:`SUPERVISE` (standard library
    only, no module beyond ``os`` and ``time``)."""
    import os
    import time

    deadline, left = time.monotonic() + seconds, 100000
    for place in places:
        try:
            device = os.lstat(place).st_dev
        except OSError:
            continue
        pending = [place]
        while pending:
            try:
                entries = list(os.scandir(pending.pop()))
            except OSError:
                continue
            for entry in entries:
                left -= 1
                if left < 0 or time.monotonic() > deadline:
                    return False
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_dev != device:
                    continue
                kind = info.st_mode & 0o170000
                if kind == 0o040000:
                    pending.append(entry.path)
                elif (
                    kind == 0o100000
                    and info.st_size >= limit
                    and info.st_blocks * 512 >= limit
                    and info.st_mtime >= since
                ):
                    return True
    return False


SUPERVISE: Final = (
    inspect.getsource(file_at_limit)
    + r"""
def _kryt_exec(command):
    import _signal
    for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
        if hasattr(_signal, name):
            _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"kryt: cannot run {command[0]!r}: {exc}\n")
        sys.stderr.flush()
        os._exit(127)
def _kryt_write(fd, data):
    try:
        os.write(fd, data)
    except OSError:
        pass
def _kryt_fsize():
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except Exception:
        return -1
    return -1 if limit == resource.RLIM_INFINITY else limit  # unlimited: no kernel SIGXFSZ
def _kryt_supervise(command, report_fd, token):
    import _signal as signal  # not signal.py: its enums cost the sandbox's memory
    try:
        import ctypes
        hidden = ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE
    except Exception:
        hidden = False
    if report_fd >= 0:
        os.set_inheritable(report_fd, False)
    if not hidden:  # the bot could reach this process through /proc: no report at all
        if report_fd >= 0:
            os.close(report_fd)
        report_fd, token = -1, ""
    fsize = _kryt_fsize()  # what the kernel holds the bot to, read before the bot exists
    child = os.fork()
    if child == 0:
        _kryt_exec(command)
    def forward(number, frame):
        try:
            os.kill(child, number)
        except ProcessLookupError:
            pass
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), forward)
    while True:
        pid, status = os.wait()
        if pid == child:
            break
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if os.getpid() == 1:  # a namespace's init: -1 is the rest of the bot, nothing else
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        said = b"signal %d" % number
        if number == signal.SIGXFSZ and fsize > 0 and file_at_limit(PLACES, fsize):
            said += b" " + AT_LIMIT
        if report_fd >= 0:
            _kryt_write(report_fd, said + b"\n")
        if token:
            _kryt_write(2, b"\n" + MARK + b" " + token.encode() + b" " + said + b"\n")
        os._exit(128 + number)
    code = os.waitstatus_to_exitcode(status)
    if report_fd >= 0:
        _kryt_write(report_fd, b"exit %d\n" % code)
    os._exit(code)
""".replace("MARK", repr(STATUS_MARK.encode()), 1)
    .replace("PLACES", repr(WRITABLE_PLACES), 1)
    .replace("AT_LIMIT", repr(AT_LIMIT.encode()), 1)
)
"""Python source defining ``_kryt_supervise(command, report_fd, token)`` (needs ``os`` and
``sys`` imported), shared by :data:`SUPERVISOR` and Docker's launcher."""

SUPERVISOR: Final = (
    "import os, sys\n" + SUPERVISE + "_kryt_supervise(sys.argv[2:], int(sys.argv[1]), '')\n"
)
"""``python3 -I -S -c SUPERVISOR REPORT_FD COMMAND...`` (bwrap, as ``--as-pid-1``)."""

TOKEN_SUPERVISOR: Final = (
    "import os, sys\n"
    + SUPERVISE
    + f"_kryt_supervise(sys.argv[1:], -1, os.environ.pop({TOKEN_ENV!r}, ''))\n"
)
"""``python3 -I -S -c TOKEN_SUPERVISOR COMMAND...``: reports on standard error with the
secret in :data:`TOKEN_ENV` (a Docker bot without the seccomp launcher: trusted only)."""


class Report(NamedTuple):
    """A supervisor's report of a signal death."""

    signal: int
    at_limit: bool = False
    """SIGXFSZ only: a file of the bot's had reached its file-size limit
    (:func:`file_at_limit`), the evidence a ``disk limit`` needs."""


def parse_report(data: bytes) -> Report | None:
    """The signal death a bwrap supervisor reported (``signal N``, ``signal 25 at-limit``),
    or None (an exit, or no report: its word is missing, the status is then only an exit
    status)."""
    match = re.fullmatch(rb"signal (\d{1,2})( %s)?\n" % re.escape(AT_LIMIT.encode()), data)
    return Report(int(match[1]), bool(match[2])) if match else None


def _line(token: str) -> str:
    mark, token = re.escape(STATUS_MARK), re.escape(token)
    return rf"{mark} {token} signal (\d{{1,2}})( {re.escape(AT_LIMIT)})?\r?"


def reported(output: str, token: str) -> Report | None:
    """The signal death the Docker supervisor reported in ``output`` with ``token``, or
    None."""
    match = re.search(rf"^{_line(token)}$", output, re.M)
    return Report(int(match[1]), bool(match[2])) if match else None


def strip_status(output: str, token: str) -> str:
    """``output`` without the supervisor's report line (the bot's words only)."""
    if not token or token not in output:
        return output
    # The report's own line break before it goes too (it begins with one).
    return re.sub(rf"\n?{_line(token)}(\n|\Z)", "", output)


def unproven_file_size(limit: int) -> str:
    """The detail of a SIGXFSZ death without a file at the file-size limit ``limit``."""
    return (
        f"killed by SIGXFSZ, but no file it could write had reached its file-size limit of"
        f" {limit} bytes: no evidence of a disk-limit breach (a signal it can send itself)"
    )


def proven_signal(report: Report | None, limit: int) -> tuple[int | None, str]:
    """The signal a death may be classified on (``classify_exit``'s ``signal_number``) and
    a detail, from a supervisor's ``report``: SIGXFSZ only with the file-size limit's
    evidence (:attr:`Report.at_limit`); without it, no signal (the flattened ``128 + 25``
    is then a crash's exit status) and a detail naming SIGXFSZ (:func:`unproven_file_size`).
    ``limit``: the bot's ``fsize_bytes``, for the detail."""
    if report is None:
        return None, ""
    if report.signal == signal.SIGXFSZ and not report.at_limit:
        return None, unproven_file_size(limit)
    return report.signal, ""


def host_report(exit_code: int, places: tuple[str, ...], limit: int, since: float) -> Report | None:
    """The report of a process the referee waited for itself (the process backend, where
    no supervisor of ours stands between: a negative ``Popen.returncode`` is its wait
    status), with the same evidence as a supervisor's: a SIGXFSZ death is ``at_limit`` when
    :func:`file_at_limit` finds a file modified since ``since`` under ``places``."""
    if exit_code >= 0:
        return None
    number = -exit_code
    found = number == signal.SIGXFSZ and bool(places) and file_at_limit(places, limit, since)
    return Report(number, found)
