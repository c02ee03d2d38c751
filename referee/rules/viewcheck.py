"""Checks that a view given to ``from_view`` is one the rules can reach.

A view is a bot's input to its own simulator (a sampled or hand-made position): a game built
from an impossible one (a card twice, no face-up card under a stock, an outcome while the
game runs) would not give that view back, or would play on from a state no game has, so the
simulator's answers would be wrong without any sign. Both rulesets share these checks; each
``from_view`` adds its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from referee.rules.cards import Card, Suit
from referee.rules.errors import DeckTypeError, InvalidViewError, quote


def view_cards(cards: object, what: str) -> tuple[Card, ...]:
    """``cards`` (a field of a view) as distinct :class:`Card` objects, else DeckTypeError
    (not a tuple of cards) or InvalidViewError (a card twice)."""
    if not isinstance(cards, tuple | list):
        raise DeckTypeError(f"{what} must be a tuple of Card objects, got {quote(cards)}")
    seen: set[Card] = set()
    for card in cards:
        if not isinstance(card, Card):
            raise DeckTypeError(
                f"{what} must hold Card objects, got {quote(card)} (Card.parse reads a text)"
            )
        if card in seen:
            raise InvalidViewError(f"{what} holds {card} twice: {quote(cards)}")
        seen.add(card)
    return tuple(cards)


def check_subset(part: Iterable[Card], whole: Iterable[Card], what: str, of: str) -> None:
    """Every card of ``part`` is in ``whole``, else InvalidViewError."""
    present = set(whole)
    missing = [card for card in part if card not in present]
    if missing:
        raise InvalidViewError(f"{what} names {missing[0]}, which is not in {of}")


def check_face_up(face_up: object, stock_count: object, trump: object) -> None:
    """The face-up card lies under a stock that is not empty; no face-up card once the stock
    is empty. (Its suit is not checked against the trump: a position set up by hand, as
    tests and puzzles do, may choose them apart; the game plays ``trump``.)"""
    if not isinstance(trump, Suit):
        raise DeckTypeError(f"view.trump must be a Suit, got {quote(trump)}")
    if type(stock_count) is not int or not 0 <= stock_count <= 36:
        raise InvalidViewError(f"view.stock_count must be 0..36, got {quote(stock_count)}")
    if face_up is None:
        if stock_count:
            raise InvalidViewError(
                f"no face-up card under a stock of {stock_count}: the face-up card is drawn last"
            )
        return
    if not isinstance(face_up, Card):
        raise DeckTypeError(f"view.face_up must be a Card or None, got {quote(face_up)}")
    if not stock_count:
        raise InvalidViewError(f"face-up card {face_up} under an empty stock")


def check_progress(
    *,
    over: object,
    to_move: object,
    expected_to_move: int | None,
    moves: int,
    turn_limit: int,
    ended: Iterable[tuple[str, object]],
) -> None:
    """A running game has fewer moves than its turn limit, none of the ``ended`` fields
    (outcome, reason...) set and, once it has a history, the seat to move the history
    gives (``expected_to_move``; a position set up by hand, with no history, may give the
    move to either seat); a finished one has no seat to move and a reason."""
    if type(over) is not bool:
        raise DeckTypeError(f"view.over must be True or False, got {quote(over)}")
    fields = dict(ended)
    if over:
        if to_move is not None:
            raise InvalidViewError(f"view.to_move is {quote(to_move)} in a finished game")
        if fields.get("reason") is None:
            raise InvalidViewError("a finished game needs its end reason (view.reason)")
        return
    for name, value in fields.items():
        if value is not None:
            raise InvalidViewError(
                f"view.{name} is {quote(value)} while the game runs (view.over is False)"
            )
    if moves >= turn_limit:
        raise InvalidViewError(
            f"{moves} moves played under a turn limit of {turn_limit}, and the game runs"
        )
    if moves and expected_to_move is not None and to_move != expected_to_move:
        raise InvalidViewError(
            f"view.to_move is {quote(to_move)}, but after {moves} moves seat"
            f" {expected_to_move} moves"
        )
