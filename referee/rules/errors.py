"""Typed errors of the rules core; every one is a ``ValueError`` quoting the offending input.

Inputs are quoted through :func:`quote`, which bounds them: a bot (or a corrupt record) may
send megabytes, and an error message is logged, stored with a forfeit and shown on pages.

The ``...TypeError`` classes are raised when an argument is not even of the right type (``None``
for a list of cards, text where a list of actions is expected); they are also ``TypeError``\\ s,
which is what such a call raised before it was typed, and subclasses of the error of the same
input, so that a caller catching that one (or :class:`RulesError`) catches them too.
"""

from __future__ import annotations

from typing import Final

QUOTE_LIMIT: Final = 80
"""At most this many characters of an input are quoted in an error message."""


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, bounded: text longer than ``limit`` characters is
    quoted as its first ``limit`` characters then ``... (N characters)``; any other value's
    ``repr`` is cut the same way. Never raises: a ``repr`` that fails gives ``<type object>``.
    """
    try:
        if isinstance(value, str):
            # A plain copy: a str subclass's own methods (slicing, repr) are not trusted.
            text = str.__str__(value)
            if len(text) <= limit:
                return repr(text)
            return f"{text[:limit]!r}... ({len(text)} characters)"
        if (type(value) is list or type(value) is tuple) and len(value) > limit:
            # Only what can be shown is repr'd: each item takes at least one character.
            head = repr(value[:limit])
            return f"{head[:limit]}... ({len(value)} items)"
        shown = repr(value)
    except Exception:  # any object may reach an error message, its repr included
        return f"<{type(value).__name__} object>"
    if len(shown) <= limit:
        return shown
    return f"{shown[:limit]}... ({len(shown)} characters)"


class RulesError(ValueError):
    """Base class of every error raised by the rules core."""


class InvalidCardError(RulesError):
    """A card's text does not name one of the 36 cards."""


class CardTypeError(InvalidCardError, TypeError):
    """Something that is neither a card nor text was given where a card is expected."""


class InvalidDeckError(RulesError):
    """A deck is not a permutation of the 36 cards, the hidden cards given to ``from_view`` do
    not complete the view, or a game parameter is malformed (see :class:`InvalidParameterError`).
    """


class DeckTypeError(InvalidDeckError, TypeError):
    """A deck, view, hand or stock argument is not of the expected type (``None``, text where a
    collection of cards is expected, not a view of this ruleset)."""


class InvalidViewError(InvalidDeckError):
    """A view given to ``from_view`` is not one the rules can reach: a card twice, a face-up
    card that is not a trump or lies under an empty stock, a seat to move that the history
    contradicts, an outcome while the game runs... (A subclass of :class:`InvalidDeckError`,
    which ``from_view`` raised before for a view whose cards do not add up.)"""


class InvalidParameterError(InvalidDeckError):
    """A game parameter is out of range or of the wrong type: ``dealer``, ``seat``,
    ``players``, ``ruleset`` or ``turn_limit``. (A subclass of :class:`InvalidDeckError`, which
    these errors were before they had their own class.)"""


class InvalidActionError(RulesError):
    """An action's text cannot be parsed (malformed, unknown word, bad card)."""


class ActionTypeError(InvalidActionError, TypeError):
    """An action is neither an action of this ruleset nor text, or a list of actions is not a
    collection of actions (``None``, or a single text, which would be read letter by letter)."""


class IllegalActionError(RulesError):
    """A well-formed action that the rules do not allow in the current position."""
