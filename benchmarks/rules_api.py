#!/usr/bin/env python3
"""Random games/s through the rules core's public API, against its internal loop and a yardstick.

In one run, on one core (CPU time of this process), the same games (same seeds, same random
draws) are played by:

(a) internal: ``Game.play_random`` (the engine's own loop: counts the legal actions and decodes
    the drawn one, never lists them);
(b) public: ``game.legal_actions()`` then ``game.play()`` of a random listed action, what a
    bot's simulator does;
(c) naive: ``benchmarks/naive_engine.py``, a plain readable implementation of the rules
    (strings and lists) listing its actions and playing one.

All three list actions in the same order and draw the index the same way
(``int(rng.random() * len(legal))``), so they play identical games; the script checks that
they agree on every game's length and outcome before printing any figure. Targets: public /
internal >= 0.8 and public / naive >= 4. A last line shows the public path with
``rng.choice`` (slower draws, different games) for reference.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from naive_engine import NaiveGame  # noqa: E402

from referee.rules import Game, shuffled_deck  # noqa: E402

INTERNAL_TARGET = 0.8
NAIVE_TARGET = 4.0

Outcome = tuple[int, int | None, str]
"""(actions played, winning seat or None, end reason text) of one game."""


def internal(games: int, seed: int) -> list[Outcome]:
    """(a) The engine's own loop."""
    rng = random.Random(seed)
    out = []
    for i in range(games):
        game = Game.new(seed=seed + i, dealer=i % 2)
        played = 0
        while not game.over:
            game.play_random(rng)
            played += 1
        out.append(_outcome(game, played))
    return out


def public(games: int, seed: int) -> list[Outcome]:
    """(b) The public API: list the legal actions, play a random one of them."""
    rng = random.Random(seed)
    out = []
    for i in range(games):
        game = Game.new(seed=seed + i, dealer=i % 2)
        played = 0
        while not game.over:
            legal = game.legal_actions()
            game.play(legal[int(rng.random() * len(legal))])
            played += 1
        out.append(_outcome(game, played))
    return out


def public_choice(games: int, seed: int) -> list[Outcome]:
    """(b') As (b), drawing with ``rng.choice`` (as most bots write it)."""
    rng = random.Random(seed)
    out = []
    for i in range(games):
        game = Game.new(seed=seed + i, dealer=i % 2)
        played = 0
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
            played += 1
        out.append(_outcome(game, played))
    return out


def naive(games: int, seed: int) -> list[Outcome]:
    """(c) The naive yardstick engine, dealt the same decks."""
    rng = random.Random(seed)
    out = []
    for i in range(games):
        deck = [str(card) for card in shuffled_deck(seed + i)]
        game = NaiveGame.deal(deck, dealer=i % 2)
        played = 0
        while not game.over:
            legal = game.legal_actions()
            game.play(legal[int(rng.random() * len(legal))])
            played += 1
        assert game.reason is not None
        out.append((played, game.winner, game.reason))
    return out


def _outcome(game: Game, played: int) -> Outcome:
    # Actions are counted in every loop alike (``game.history`` would build Action objects
    # that the naive engine's list of strings does not need).
    assert game.reason is not None
    return played, game.outcome, game.reason.value


def timed(
    runner: Callable[[int, int], list[Outcome]], games: int, seed: int
) -> tuple[float, list[Outcome]]:
    """Games per CPU second of ``runner`` over ``games`` games, and their outcomes.

    CPU time of this process, not wall time: on a shared machine another process taking the
    core would otherwise count against whichever variant happened to be running.
    """
    start = time.process_time()
    outcomes = runner(games, seed)
    return games / max(time.process_time() - start, 1e-9), outcomes


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=3000, help="games for (a) and (b)")
    parser.add_argument("--naive-games", type=int, default=300, help="games for (c)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5, help="best of this many runs each")
    args = parser.parse_args(argv)
    rates: dict[str, float] = {}
    runs: list[tuple[str, Callable[[int, int], list[Outcome]], int]] = [
        ("internal", internal, args.games),
        ("public", public, args.games),
        ("naive", naive, args.naive_games),
        ("public_choice", public_choice, args.games),
    ]
    outcomes: dict[str, list[Outcome]] = {}
    # Interleaved rounds, best of each: a noisy machine slows all of them alike.
    for _ in range(args.rounds):
        for name, runner, n in runs:
            rate, outcomes[name] = timed(runner, n, args.seed)
            rates[name] = max(rates.get(name, 0.0), rate)
    if outcomes["public"] != outcomes["internal"]:
        raise SystemExit("the public API and the internal loop played different games")
    if outcomes["naive"] != outcomes["internal"][: args.naive_games]:
        raise SystemExit("the naive engine and the real engine played different games")
    actions = sum(n for n, _, _ in outcomes["internal"]) / args.games
    print(
        f"same {args.games} games in (a) and (b), first {args.naive_games} in (c); "
        f"{actions:.1f} actions/game"
    )
    labels = {
        "internal": "(a) internal  play_random",
        "public": "(b) public    legal_actions + play",
        "naive": "(c) naive     benchmarks/naive_engine.py",
        "public_choice": "(b') public   with rng.choice",
    }
    for name, label in labels.items():
        print(f"{label:42s} {rates[name]:8.0f} games/s")
    rates["public/internal"] = rates["public"] / rates["internal"]
    rates["public/naive"] = rates["public"] / rates["naive"]
    for key, target in (("public/internal", INTERNAL_TARGET), ("public/naive", NAIVE_TARGET)):
        verdict = "met" if rates[key] >= target else "NOT met"
        print(f"{key:42s} {rates[key]:8.2f}   (target >= {target}: {verdict})")
    return rates


if __name__ == "__main__":
    main()
