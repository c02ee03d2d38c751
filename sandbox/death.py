"""Why a bot stopped running, as reported by every backend."""

from __future__ import annotations

import enum
import signal
import sys
import unicodedata
from dataclasses import dataclass
from typing import TextIO

__all__ = [
    "OUTPUT_LINES",
    "SIGXFSZ_EXIT",
    "STILL_RUNNING",
    "DeathCause",
    "DeathReport",
    "classify_exit",
    "output_note",
    "printable",
    "show_warning_line",
    "tail_lines",
]

SIGXFSZ_EXIT = 128 + signal.SIGXFSZ
"""128 + SIGXFSZ: what shells and inits flatten a SIGXFSZ death to, and what any bot can
return with ``exit(153)``. Never evidence by itself (:func:`classify_exit`)."""


def _visible(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control and format character made visible as an escape.

    Bot output is hostile: ESC sequences retitle or clear the organiser's terminal and
    print fake results, ``\\r`` overwrites a line, bidi overrides reorder it. Tabs are kept;
    newlines too when ``keep_newlines``. Use it wherever bot text reaches a log or terminal.
    """
    out: list[str] = []
    for char in text:
        if char == "\t" or (char == "\n" and keep_newlines):
            out.append(char)
        elif unicodedata.category(char) in {"Cc", "Cf", "Cs", "Zl", "Zp"}:
            out.append(_visible(char))
        else:
            out.append(char)
    return "".join(out)


def show_warning_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A :data:`warnings.showwarning` for command-line programs: one ``warning:`` line, made
    :func:`printable`, where Python prints two with the source file and line."""
    del category, filename, lineno, line
    target = file or sys.stderr
    target.write(f"warning: {printable(str(message))}\n")
    target.flush()


def tail_lines(text: str, count: int = 5) -> list[str]:
    """The last ``count`` non-empty lines of bot output, each made :func:`printable`."""
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    return [printable(line) for line in lines[-count:]]


OUTPUT_LINES = 30
"""Lines of a bot's last output kept with a forfeit it may explain: enough for a whole
traceback or compiler message (node's and the JVM's put the cause before many frames of
their own)."""

STILL_RUNNING = "still running"
"""What :func:`output_note` says of a bot that had not ended (it hung, it did not serve)."""


def output_note(how: str, output: str, count: int = OUTPUT_LINES) -> str:
    """What is appended to a forfeit's detail to explain it: ``"\\nits process: " + how``
    (how the process ended, or :data:`STILL_RUNNING`) and, when the bot wrote anything,
    ``"\\nlast output:\\n"`` with the last ``count`` lines of ``output`` (:func:`tail_lines`:
    one per line, each made printable).

    One shape for every forfeit that carries the bot's output (a crash at or after start-up,
    a start-up or handshake timeout, a move timeout): ``kryt replay`` shows the detail's
    first line on the forfeit's line and everything from ``its process:`` below it, line by
    line, as the bot's. ``how`` is made printable too (a death report's detail may quote the
    engine, which may quote the bot)."""
    tail = tail_lines(output, count)
    said = f"\nits process: {printable(how)}"
    return said + ("\nlast output:\n" + "\n".join(tail) if tail else "")


class DeathCause(enum.Enum):
    """Why a bot's process ended; the referee maps these to forfeit reasons."""

    EXITED = "exited"  # exit status 0: the bot left on its own
    CRASHED = "crashed"  # non-zero exit status (exception, sys.exit(n))
    OOM = "out_of_memory"  # the kernel's OOM killer fired in its cgroup / container
    FILE_SIZE = "file_size_limit"  # killed by SIGXFSZ (in its wait status): file too large
    PROCESS_LIMIT = "process_limit"  # died after the process limit refused it a process
    SIGNALED = "signaled"  # killed by a signal the sandbox did not send
    STOPPED = "stopped"  # still running when the sandbox stopped it (normal end)
    VANISHED = "vanished"  # its container or process disappeared without a status


@dataclass(frozen=True)
class DeathReport:
    """How a bot ended: the cause plus the raw facts it was derived from."""

    cause: DeathCause
    exit_code: int | None = None
    signal: int | None = None
    oom_killed: bool = False
    detail: str = ""
    log_tail: str = ""

    def describe(self) -> str:
        """One line for logs and forfeit messages."""
        parts = [self.cause.value]
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        if self.signal is not None:
            try:
                parts.append(signal.Signals(self.signal).name)
            except ValueError:
                parts.append(f"signal {self.signal}")
        if self.detail:
            parts.append(printable(self.detail))
        return ", ".join(parts)


def classify_exit(
    exit_code: int | None,
    *,
    signal_number: int | None = None,
    oom_killed: bool = False,
    memory_limit_hit: bool = False,
    process_limit_hit: bool = False,
    log_tail: str = "",
    detail: str = "",
) -> DeathReport:
    """Map how a bot ended to a report, on evidence the bot cannot forge.

    ``exit_code``: the status as the backend got it. A negative one is a signal in the wait
    status itself (``Popen.returncode``); a positive one is only ever an exit status, even
    128 + N: a bot can ``exit(153)``. ``signal_number``: the signal a supervisor the bot
    cannot reach saw in the wait status (:mod:`sandbox.supervisor`); the backend then passes
    the flattened ``128 + N`` as ``exit_code``.

    ``oom_killed`` (the kernel's word: a cgroup's ``oom_kill`` count, Docker's
    ``OOMKilled``) wins over everything: it is set when the OOM killer fired in the bot's
    cgroup, even when it killed a child and the main process exited otherwise. A
    ``MemoryError`` in the bot's output is not evidence (the bot can print it): such a bot
    crashed, and the detail says what it reported, unless ``memory_limit_hit`` (the kernel
    recorded its cgroup's charge at the memory limit: ``memory.events`` ``max``, v1
    ``failcnt``), which makes any other unclean end an out-of-memory death. SIGXFSZ in the
    wait status is a file-size death. ``process_limit_hit`` (the kernel's ``pids.events``:
    the process limit refused the bot a process or thread) makes any other unclean end a
    process-limit death.
    """
    sig: int | None = None
    if signal_number is not None:
        sig = signal_number
    elif exit_code is not None and exit_code < 0:
        sig = -exit_code
    if oom_killed:
        cause = DeathCause.OOM
    elif exit_code is None:
        cause = DeathCause.VANISHED
    elif sig == signal.SIGXFSZ:
        cause = DeathCause.FILE_SIZE
    elif exit_code == 0 and sig is None:
        cause = DeathCause.EXITED
    elif memory_limit_hit:
        cause = DeathCause.OOM
    elif process_limit_hit:
        cause = DeathCause.PROCESS_LIMIT
    elif sig is not None:
        cause = DeathCause.SIGNALED
    else:
        cause = DeathCause.CRASHED
        if "MemoryError" in log_tail:
            # Its own words, not the kernel's: a crash (a real one under an address-space
            # rlimit included, where the kernel records nothing), said as such.
            said = "the bot reported MemoryError (no out-of-memory kill recorded)"
            detail = f"{detail}; {said}" if detail else said
    return DeathReport(
        cause=cause,
        exit_code=exit_code,
        signal=sig,
        oom_killed=oom_killed,
        detail=detail,
        log_tail=log_tail,
    )
