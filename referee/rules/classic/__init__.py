"""The classic table of Kryt'-navalivat' (2–4 players, ``rules-classic.md``): pure, no I/O.

>>> from referee.rules import Game
>>> game = Game.new(seed=1234, dealer=2, players=3, ruleset="classic")
>>> game.to_move
0
>>> action = game.legal_actions()[0]
>>> game.play(str(action)) == action
True
"""

from referee.rules.classic.actions import ClassicAction, ClassicActionKind
from referee.rules.classic.game import (
    CLASSIC_TURN_LIMIT,
    PLAYERS,
    RULESET,
    ClassicGame,
)
from referee.rules.classic.view import ClassicEndReason, ClassicView

__all__ = [
    "CLASSIC_TURN_LIMIT",
    "PLAYERS",
    "RULESET",
    "ClassicAction",
    "ClassicActionKind",
    "ClassicEndReason",
    "ClassicGame",
    "ClassicView",
]
