"""An error the bot reports itself (``BotError``) ends the game at once as a crash: the bot
is alive, so the sandbox's death diagnosis (which waits for a death report) is not asked."""

from __future__ import annotations

import asyncio

from referee.client import BotCrashedError, BotReportedError
from referee.match import faulted
from referee.protocol.messages import GameEndReason


def test_a_reported_error_is_a_crash_without_a_diagnosis() -> None:
    asked: list[int] = []

    async def diagnose(seat: int) -> GameEndReason | None:
        asked.append(seat)
        return GameEndReason.MEMORY_LIMIT

    reported = asyncio.run(faulted(1, BotReportedError("bot reported an error: boom"), diagnose))
    assert reported.forfeit.reason is GameEndReason.CRASH and asked == []
    # A broken stream is still diagnosed: the sandbox may know the bot ran out of memory.
    broken = asyncio.run(faulted(1, BotCrashedError("bot closed the stream"), diagnose))
    assert broken.forfeit.reason is GameEndReason.MEMORY_LIMIT and asked == [1]
