"""Typed errors of the rules core; every one is a ``ValueError`` quoting the offending input."""

from __future__ import annotations


class RulesError(ValueError):
    """Base class of every error raised by the rules core."""


class InvalidCardError(RulesError):
    """A card's text does not name one of the 36 cards."""


class InvalidDeckError(RulesError):
    """A deck is not a permutation of the 36 cards, or a dealer/position is malformed."""


class InvalidActionError(RulesError):
    """An action's text cannot be parsed (malformed, unknown word, bad card)."""


class IllegalActionError(RulesError):
    """A well-formed action that the rules do not allow in the current position."""
