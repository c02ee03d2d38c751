"""``benchmarks/referee_breakdown.py`` times what it says it times, and leaves nothing patched.

The figures themselves are the benchmark's business (never a timed test); this checks the
instrument: every piece is called and timed once per decision where it should be, the
in-process player's own work is kept apart, and the wrappers are removed afterwards.
"""

from __future__ import annotations

import asyncio

from referee.rules import Game
from tests.referee.bench_loader import load_benchmark

rb = load_benchmark("referee_breakdown")


def test_the_pieces_are_timed_once_a_decision_and_unpatched_after() -> None:
    originals = [getattr(owner, name) for owner, name, _ in rb.PIECES]
    loop = asyncio.new_event_loop()
    try:
        with rb.timed_pieces() as spent:
            assert Game.view is not originals[0]  # wrapped while inside
            loop_cpu, process_cpu = loop.run_until_complete(rb.in_process(2, 200, spent))
    finally:
        loop.close()
    assert [getattr(owner, name) for owner, name, _ in rb.PIECES] == originals
    decisions = spent["encoding the request calls"]
    assert decisions >= 200
    # One view, one request, one reply, one play, one charge and one record per decision
    # (the game end's views are encoded by the regular encoder, not this function).
    for label in ("decoding the reply", "the legality gate and play", "the move's record"):
        assert spent[label + " calls"] == decisions, label
    assert spent["charging the clock calls"] == decisions
    assert spent["the engine's view calls"] >= decisions
    assert all(spent[label] > 0 for _, _, label in rb.PIECES)
    assert spent[rb.BOT_SIDE] > 0
    assert 0 < loop_cpu <= process_cpu + 0.001  # two clocks, read one after the other
    breakdown = rb._per_decision(spent, loop_cpu, process_cpu)
    pieces = sum(breakdown[label] for _, _, label in rb.PIECES)
    assert 0 < pieces <= breakdown["loop thread"]
