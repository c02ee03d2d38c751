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
  environment (:data:`TOKEN_ENV`) before the bot starts, so no bot can print the line.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "STATUS_MARK",
    "SUPERVISE",
    "SUPERVISOR",
    "TOKEN_ENV",
    "TOKEN_SUPERVISOR",
    "parse_report",
    "reported_signal",
    "strip_status",
]

STATUS_MARK: Final = "kryt-sandbox-status"
"""First word of the supervisor's report line on standard error (Docker)."""
TOKEN_ENV: Final = "KRYT_STATUS_TOKEN"
"""Environment variable handing the supervisor its secret (Docker); removed before the bot
starts."""

SUPERVISE: Final = r"""
def _kryt_exec(command):
    import signal
    for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
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
def _kryt_supervise(command, report_fd, token):
    import signal
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
        if report_fd >= 0:
            _kryt_write(report_fd, b"signal %d\n" % number)
        if token:
            _kryt_write(2, ("\n%s %s signal %d\n" % (MARK, token, number)).encode())
        os._exit(128 + number)
    code = os.waitstatus_to_exitcode(status)
    if report_fd >= 0:
        _kryt_write(report_fd, b"exit %d\n" % code)
    os._exit(code)
""".replace("MARK", repr(STATUS_MARK), 1)
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


def parse_report(data: bytes) -> int | None:
    """The signal a bwrap supervisor reported (``signal N``), or None (an exit, or no
    report: its word is missing, the status is then only an exit status)."""
    match = re.fullmatch(rb"signal (\d{1,2})\n", data)
    return int(match[1]) if match else None


def _line(token: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(STATUS_MARK)} {re.escape(token)} signal (\d{{1,2}})\r?$", re.M)


def reported_signal(output: str, token: str) -> int | None:
    """The signal the Docker supervisor reported in ``output`` with ``token``, or None."""
    match = _line(token).search(output)
    return int(match[1]) if match else None


def strip_status(output: str, token: str) -> str:
    """``output`` without the supervisor's report line (the bot's words only)."""
    if not token or token not in output:
        return output
    # The report's own line break before it goes too (it begins with one).
    own = rf"\n?{re.escape(STATUS_MARK)} {re.escape(token)} signal \d{{1,2}}\r?(\n|\Z)"
    return re.sub(own, "", output)
