"""Keep the traceback of a bot that crashed in its own code with the tournament game.

When a bot's ``act()`` raises, the SDK prints the traceback to the bot's stderr and reports
one line to the referee (``KeyError: 'AS' at bot.py:12 in act``); that line becomes the
forfeit's detail. In a tournament nobody watches the bot's stderr, so before the game is
recorded the runner looks up the traceback in the sandbox's output tail and appends it to
the detail (cut at :data:`referee.record.MAX_TEXT`), so ``kryt replay`` shows every file
and line and ``kryt games list`` the crash site. Everything here is bot text: it is stored
as it is and made printable only where it is shown.

A bot that timed out keeps its last output the same way (it usually says where it hung):
read once, when the game is recorded with that forfeit, never while the bot decides.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace

from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, clip
from sandbox.death import OUTPUT_LINES as SANDBOX_OUTPUT_LINES
from sandbox.death import STILL_RUNNING, output_note, tail_lines

HEAD = "Traceback (most recent call last):"
"""How a Python traceback starts (the SDK prints it with :func:`traceback.print_exc`)."""
BOT_ERROR = "bot reported an error: "
"""How the referee's detail of a crash the bot reported itself starts (referee.client)."""
MAX_LINES = 80
"""Longest traceback kept, in lines (the detail is cut at MAX_TEXT characters anyway)."""
LOG_WAIT_SECONDS = 1.0
"""How long to wait for the traceback to reach the sandbox's output tail (it is read by
a thread or from the engine's log, a moment after the bot printed it)."""

_SITE = re.compile(r" at ([^\s:]+:\d+) in \S+$")


def last_traceback(output: str) -> str:
    """The last Python traceback in ``output`` (head, frames, exception line), or ''."""
    start = output.rfind(HEAD)
    if start < 0:
        return ""
    lines = output[start:].replace("\r\n", "\n").split("\n")
    kept = [lines[0]]
    for line in lines[1:MAX_LINES]:
        kept.append(line)
        if line and not line[0].isspace():  # the exception line ends the traceback
            break
    return "\n".join(kept).rstrip()


OUTPUT_LINES = SANDBOX_OUTPUT_LINES
"""Last output lines kept with a crash the bot did not report itself, or a timeout."""


def with_traceback(
    record: GameRecord,
    output_of: Callable[[int], str],
    *,
    death_of: Callable[[int], str] | None = None,
    wait: float = LOG_WAIT_SECONDS,
) -> GameRecord:
    """``record`` with the offender's traceback appended to its crash detail, when the bot
    reported an exception of its own code (the detail names where it was raised) and its
    output holds a traceback; else ``record`` unchanged. ``output_of(seat)`` reads the
    seat's output tail.

    A crash the bot did not report (its process died: a Go panic, a JVM exception, an
    exit) keeps, with ``death_of(seat)`` (how the process ended, '' while it runs), that
    line and the last :data:`OUTPUT_LINES` lines of its output, whatever its language. So
    does a timeout (the bot usually still runs: "still running"), when the bot wrote
    anything."""
    forfeit = record.forfeit
    if (
        death_of is not None
        and forfeit is not None
        and forfeit.reason is GameEndReason.TIMEOUT
        and "\nlast output:" not in forfeit.detail
    ):
        output = output_of(forfeit.seat)
        if not tail_lines(output, 1):
            return record
        said = output_note(death_of(forfeit.seat) or STILL_RUNNING, output, OUTPUT_LINES)
        return replace(record, forfeit=replace(forfeit, detail=clip(forfeit.detail + said)))
    if (
        death_of is not None
        and forfeit is not None
        and forfeit.reason is GameEndReason.CRASH
        and not forfeit.detail.startswith(BOT_ERROR)
        and "\nlast output:" not in forfeit.detail
    ):
        death = death_of(forfeit.seat)
        if not death:
            return record
        said = output_note(death, output_of(forfeit.seat), OUTPUT_LINES)
        return replace(record, forfeit=replace(forfeit, detail=clip(forfeit.detail + said)))
    if (
        forfeit is None
        or forfeit.reason is not GameEndReason.CRASH
        or not forfeit.detail.startswith(BOT_ERROR)
        or not crash_site(forfeit.detail)  # the SDK names a frame when it printed a traceback
        or HEAD in forfeit.detail
    ):
        return record
    deadline = time.monotonic() + wait
    found = last_traceback(output_of(forfeit.seat))
    while not found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = last_traceback(output_of(forfeit.seat))
    if not found:
        return record
    detail = clip(f"{forfeit.detail}\n{found}")
    return replace(record, forfeit=replace(forfeit, detail=detail))


def crash_site(detail: str | None) -> str:
    """``bot.py:12``: where the bot's code raised, from the first line of a crash detail
    (the SDK names the innermost frame), or '' when the detail does not say."""
    if not detail:
        return ""
    found = _SITE.search(detail.split("\n", 1)[0])
    return found.group(1) if found else ""
