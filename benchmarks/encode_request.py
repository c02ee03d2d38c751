#!/usr/bin/env python3
"""Microseconds per decision-request encode: the regular encoder against the fast one.

    python benchmarks/encode_request.py [--games 40] [--interleave 16] [--repeat 7]

Positions are recorded from random games of both rulesets (the two-player game, and the
classic table of 2, 3 and 4 seats): the view of the seat to move at every move, the requests
the referee sends. ``--interleave`` games are taken in turn, as one event loop serving many
games sends them. Each position is then encoded by

(a) regular: ``encode_referee_message(DecisionRequest(...))`` (``referee/protocol/wire.py``);
(b) fast, game order: ``referee.protocol.fast_encode.encode_decision_request`` on the
    positions in that order, so each history extends an earlier one (the incremental path);
(c) fast, shuffled: the same positions in random order, so nearly every history is encoded
    from its fragments (the cold path).

Every fast encoding is first checked byte for byte against the regular one. The figure is CPU
time of this process per encode, the best of ``--repeat`` rounds (noise only adds); the
rounds of (a), (b), (c) alternate, so the ratios come from one run. The history caches are
emptied before each round of (b) and (c), so no round starts from another's entries.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from itertools import zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.protocol import fast_encode  # noqa: E402
from referee.protocol.messages import AnyView, Clock, DecisionRequest  # noqa: E402
from referee.protocol.wire import encode_referee_message  # noqa: E402
from referee.rules import ClassicGame, Game  # noqa: E402

Request = tuple[int, int, AnyView, Clock]


def default_game(seed: int) -> list[AnyView]:
    """The mover's view at every move of a random two-player game."""
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    views: list[AnyView] = []
    while not game.over:
        views.append(game.view(game.to_move or 0))
        game.play_random(rng)
    return views


def classic_game(seed: int, players: int) -> list[AnyView]:
    """The mover's view at every move of a random game of the classic table."""
    rng = random.Random(seed)
    game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
    views: list[AnyView] = []
    while not game.over:
        views.append(game.view(game.to_move or 0))
        game.play(rng.choice(game.legal_actions()))
    return views


def requests(games: Sequence[list[AnyView]], interleave: int, seed: int) -> list[Request]:
    """The games' positions as requests, ``interleave`` games at a time taken in turn."""
    rng = random.Random(seed)
    out: list[Request] = []
    for start in range(0, len(games), interleave):
        for round_ in zip_longest(*games[start : start + interleave]):
            for view in round_:
                if view is not None:
                    clock = Clock(move_ms=1000, bank_ms=rng.randrange(0, 10_000))
                    out.append((rng.getrandbits(31) | 1, 1 + start, view, clock))
    return out


def regular(request_id: int, game_number: int, view: AnyView, clock: Clock) -> bytes:
    return encode_referee_message(
        DecisionRequest(request_id=request_id, game_number=game_number, view=view, clock=clock)
    )


def reset_history_caches() -> None:
    """Empty the fast encoder's incremental history entries (measurement hygiene only: a
    round must not find the entries a previous round of the same positions left)."""
    fast_encode._V_HISTORY.entries.clear()
    fast_encode._T_HISTORY.entries.clear()


def cpu_per_encode(
    encode: Callable[[int, int, AnyView, Clock], bytes], batch: list[Request]
) -> float:
    """CPU seconds per encode of one round over ``batch``."""
    reset_history_caches()
    start = time.process_time()
    for request_id, game_number, view, clock in batch:
        encode(request_id, game_number, view, clock)
    return (time.process_time() - start) / len(batch)


def measure(name: str, batch: list[Request], repeat: int, seed: int) -> dict[str, float]:
    """Check, then time (a), (b), (c) over ``batch``; print one line and return the figures."""
    for request in batch:
        if fast_encode.encode_decision_request(*request) != regular(*request):
            raise SystemExit(f"{name}: the fast encoder's bytes differ for {request!r}")
    shuffled = random.Random(seed).sample(batch, len(batch))
    best = {"regular": float("inf"), "fast": float("inf"), "cold": float("inf")}
    for _ in range(repeat):
        best["regular"] = min(best["regular"], cpu_per_encode(regular, batch))
        fast = fast_encode.encode_decision_request
        best["fast"] = min(best["fast"], cpu_per_encode(fast, batch))
        best["cold"] = min(best["cold"], cpu_per_encode(fast, shuffled))
    us = {k: v * 1e6 for k, v in best.items()}
    history = statistics.mean(len(r[2].history) for r in batch)
    size = statistics.mean(len(regular(*r)) for r in batch[:: max(1, len(batch) // 500)])
    print(
        f"{name:<16} {len(batch):>6} {history:>7.0f} {size:>6.0f}   "
        f"{us['regular']:>8.1f} {us['fast']:>8.1f} {us['cold']:>8.1f}   "
        f"{us['regular'] / us['fast']:>6.1f}x {us['regular'] / us['cold']:>6.1f}x"
    )
    return us


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=40, help="games per ruleset and table")
    parser.add_argument("--interleave", type=int, default=16, help="games taken in turn")
    parser.add_argument("--repeat", type=int, default=7, help="rounds (the best is kept)")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args(argv)
    if not fast_encode.ENABLED:
        raise SystemExit(f"the fast encoder is off: {fast_encode.SCHEMA_PROBLEM}")
    seeds = range(args.seed, args.seed + args.games)
    batches = {
        "default": requests([default_game(s) for s in seeds], args.interleave, args.seed),
        **{
            f"classic {n} seats": requests(
                [classic_game(s, n) for s in seeds], args.interleave, args.seed
            )
            for n in (2, 3, 4)
        },
    }
    print(
        f"µs per encode, CPU time, best of {args.repeat}; fast = game order (incremental "
        "history), cold = shuffled (fragments only)"
    )
    print(
        f"{'positions':<16} {'count':>6} {'history':>7} {'bytes':>6}   "
        f"{'regular':>8} {'fast':>8} {'cold':>8}   {'fast':>7} {'cold':>7}"
    )
    results = {
        name: measure(name, batch, args.repeat, args.seed) for name, batch in batches.items()
    }
    everything = [r for batch in batches.values() for r in batch]
    results["all"] = measure("all", everything, args.repeat, args.seed)
    return results


if __name__ == "__main__":
    main()
