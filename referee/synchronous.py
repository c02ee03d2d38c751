"""Blocking facades over the asynchronous referee.

The game loop and the series loop are coroutines (a referee process plays all its series as
tasks of one event loop). Callers that hold blocking players (a bot in the same process, a
:class:`~referee.client.BotClient` driven from its own thread) run the same coroutines with
:func:`drive`: their players never suspend, so the coroutine runs to its end in one step,
with no event loop and no cost per decision beyond a few awaits of finished coroutines.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopNeededError", "drive"]

T = TypeVar("T")


class LoopNeededError(RuntimeError):
    """A coroutine run by :func:`drive` waited for I/O: it needs an event loop."""


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end without an event loop; it must never suspend.

    Raises LoopNeededError (after closing the coroutine) when it does: something it awaited
    was real I/O, so it must be run on an event loop (``asyncio.run``) instead."""
    try:
        suspended_on = coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    except RuntimeError as exc:
        if "no running event loop" not in str(exc):
            raise
        raise LoopNeededError(f"{exc}: run it on an event loop") from exc
    coro.close()
    name = getattr(coro, "__qualname__", coro)
    raise LoopNeededError(f"{name} waited for {suspended_on!r}: run it on an event loop")
