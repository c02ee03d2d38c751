"""Golden playthroughs of the classic table: a seeded game recorded step by step as JSON data.

Each step records who moved, the number of legal actions, the action, and the state after it,
so that any change in the rules shows up as a precise difference in a committed file.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from referee.rules.cards import Card
from referee.rules.classic.game import ClassicGame


def _cards(cards: Iterable[Card]) -> str:
    return " ".join(c.text for c in cards)


def record_playthrough(seed: int, dealer: int, players: int) -> dict[str, Any]:
    """Play ``ClassicGame.new(seed, dealer, players=players)`` choosing uniformly
    (``random.Random(seed)``) from ``legal_actions()``, and record every step and the result."""
    game = ClassicGame.new(seed=seed, dealer=dealer, players=players)
    chooser = random.Random(seed)
    assert game.deck is not None
    steps = []
    while not game.over:
        seat = game.to_move
        legal = game.legal_actions()
        action = game.play(chooser.choice(legal))
        steps.append(
            {
                "seat": seat,
                "legal": len(legal),
                "action": action.text,
                "hands": [_cards(h) for h in game.hands],
                "led": _cards(game.led),
                "discard": len(game.discard),
                "stock": len(game.stock),
                "out": [s for s in range(players) if game.out[s]],
                "leader": game.leader,
                "defender": game.defender,
            }
        )
    return {
        "ruleset": game.ruleset,
        "seed": seed,
        "dealer": dealer,
        "players": players,
        "deck": _cards(game.deck),
        "trump": game.trump.letter,
        "steps": steps,
        "loser": game.loser,
        "reason": game.reason.value if game.reason else None,
        "pairwise": [list(p) for p in game.pairwise_results()],
    }
