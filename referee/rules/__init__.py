"""The rules core of Kryt'-navalivat': pure, deterministic, no I/O.

    >>> from referee.rules import Game
    >>> game = Game.new(seed=1234, dealer=1)
    >>> action = game.legal_actions()[0]
    >>> game.play(action) == action
    True

This package must not import grpc, docker, sqlmodel, typer, time or anything else with side
effects: bots simulate with it and the referee trusts it (a test guards the imports).
"""

from referee.rules.actions import Action, ActionKind
from referee.rules.cards import Card, Rank, Suit
from referee.rules.classic import (
    CLASSIC_TURN_LIMIT,
    ClassicAction,
    ClassicActionKind,
    ClassicEndReason,
    ClassicGame,
    ClassicView,
)
from referee.rules.errors import (
    ActionTypeError,
    CardTypeError,
    DeckTypeError,
    IllegalActionError,
    InvalidActionError,
    InvalidCardError,
    InvalidDeckError,
    InvalidParameterError,
    InvalidViewError,
    RulesError,
)
from referee.rules.game import DEFAULT_TURN_LIMIT, HAND_TARGET, Game, shuffled_deck
from referee.rules.rulesets import CLASSIC_RULESET, DEFAULT_RULESET, RULESETS
from referee.rules.view import EndReason, View

__all__ = [
    "CLASSIC_RULESET",
    "CLASSIC_TURN_LIMIT",
    "DEFAULT_RULESET",
    "DEFAULT_TURN_LIMIT",
    "HAND_TARGET",
    "RULESETS",
    "Action",
    "ActionKind",
    "ActionTypeError",
    "Card",
    "CardTypeError",
    "ClassicAction",
    "ClassicActionKind",
    "ClassicEndReason",
    "ClassicGame",
    "ClassicView",
    "DeckTypeError",
    "EndReason",
    "Game",
    "IllegalActionError",
    "InvalidActionError",
    "InvalidCardError",
    "InvalidDeckError",
    "InvalidParameterError",
    "InvalidViewError",
    "Rank",
    "RulesError",
    "Suit",
    "View",
    "shuffled_deck",
]
