"""Golden playthroughs: a seeded game recorded step by step as plain JSON-able data.

Each step records who moved, the number of legal actions, the action, and the state after it,
so that any change in the rules shows up as a precise difference in a committed file.
"""

from __future__ import annotations

import random
from typing import Any

from referee.rules.game import Game


def _cards(cards: tuple[Any, ...]) -> str:
    return " ".join(str(c) for c in cards)


def record_playthrough(seed: int, dealer: int) -> dict[str, Any]:
    """Play ``Game.new(seed, dealer)`` choosing uniformly (``random.Random(seed)``) from
    ``legal_actions()``, and record every step and the result."""
    game = Game.new(seed=seed, dealer=dealer)
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
                "action": str(action),
                "hands": [_cards(game.hands[0]), _cards(game.hands[1])],
                "pile": _cards(game.pile),
                "stock": len(game.stock),
                "face_up": str(game.face_up) if game.face_up else None,
            }
        )
    return {
        "seed": seed,
        "dealer": dealer,
        "deck": _cards(game.deck),
        "trump": game.trump.letter,
        "steps": steps,
        "outcome": game.outcome,
        "reason": game.reason.value if game.reason else None,
        "final_cover": str(game.final_cover) if game.final_cover else None,
    }
