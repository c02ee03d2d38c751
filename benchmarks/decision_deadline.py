#!/usr/bin/env python3
"""CPU per decision of the decision's deadline: ``asyncio.timeout_at`` around each wait
against :class:`referee.client.Deadline` (one alarm per connection).

    python benchmarks/decision_deadline.py [--tasks 128] [--rounds 2000] [--repeat 5]

``--tasks`` tasks of one event loop (two per stream, as a referee's connections at 64
streams) each wait ``--rounds`` times for a future resolved at the next turn of the loop,
as a decision waits for its reply: bare, under ``asyncio.timeout_at`` (what
``AsyncBotClient.decide`` used), and under a :class:`~referee.client.Deadline`. The deadline's
cost is the difference to the bare wait, CPU time of this process, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.client import Deadline

Waits = Callable[[Deadline, int], Coroutine[Any, Any, None]]


async def _turn(loop: asyncio.AbstractEventLoop) -> None:
    future = loop.create_future()
    loop.call_soon(future.set_result, None)
    await future


async def bare(deadline: Deadline, rounds: int) -> None:
    """Waits without a deadline."""
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        await _turn(loop)


async def timeout_at(deadline: Deadline, rounds: int) -> None:
    """Each wait under ``asyncio.timeout_at``, ten seconds away."""
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        async with asyncio.timeout_at(loop.time() + 10):
            await _turn(loop)


async def alarm(deadline: Deadline, rounds: int) -> None:
    """Each wait under the :class:`Deadline`, as ``AsyncBotClient.decide`` uses it."""
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        deadline.start(loop.time() + 10)
        try:
            await _turn(loop)
        except asyncio.CancelledError:
            if not deadline.passed():
                raise
        finally:
            deadline.stop()


async def measure(tasks: int, rounds: int, repeat: int) -> dict[str, float]:
    """Best CPU µs per wait of each way."""
    loop = asyncio.get_running_loop()
    deadlines = [Deadline(loop) for _ in range(tasks)]
    best: dict[str, float] = {}
    ways: tuple[Waits, ...] = (bare, timeout_at, alarm)
    for _ in range(repeat):
        for way in ways:
            cpu = time.process_time()
            await asyncio.gather(*(way(d, rounds) for d in deadlines))
            cost = (time.process_time() - cpu) / (tasks * rounds) * 1e6
            best[way.__name__] = min(best.get(way.__name__, cost), cost)
    for deadline in deadlines:
        deadline.close()
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    best = asyncio.run(measure(opts.tasks, opts.rounds, opts.repeat))
    print(f"{opts.tasks} tasks, best of {opts.repeat}; CPU µs per wait")
    for name, cost in best.items():
        print(f"{name:>12} {cost:7.2f}   deadline {cost - best['bare']:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
