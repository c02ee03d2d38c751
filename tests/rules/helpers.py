"""Building exact positions for rule tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from referee.rules import Card, ClassicGame, Game, Suit, View


def cards(text: str) -> list[Card]:
    """``"7C QC 8D"`` → cards."""
    return [Card.parse(t) for t in text.split()]


def position(
    *,
    trump: str,
    mover: str,
    other: str,
    pile: str = "",
    stock: str = "",
    to_move: int = 0,
    dealer: int = 1,
    mover_known: str = "",
    other_known: str = "",
    filler: str = "pile",
) -> Game:
    """A game where seat ``to_move`` holds ``mover`` and the other seat ``other``.

    ``stock`` is in draw order (its last card is the face-up card). Every card not named is
    placed at the bottom of the pile, below ``pile`` (``filler="pile"``), or in the stock after
    the named cards and before the face-up card (``filler="stock"``), so that all 36 cards are
    accounted for.
    """
    named = [*cards(mover), *cards(other), *cards(pile), *cards(stock)]
    rest = [c for c in Card.all() if c not in named]
    stock_cards = cards(stock)
    pile_filler: list[Card] = rest
    if filler == "stock":
        stock_cards = [*stock_cards[:-1], *rest, stock_cards[-1]]
        pile_filler = []
    view = View(
        seat=to_move,
        dealer=dealer,
        hand=tuple(sorted(cards(mover))),
        pile=tuple(pile_filler + cards(pile)),
        trump=Suit.parse(trump),
        face_up=stock_cards[-1] if stock_cards else None,
        stock_count=len(stock_cards),
        opponent_count=len(cards(other)),
        opponent_known=tuple(cards(other_known)),
        own_known=tuple(cards(mover_known)),
        to_move=to_move,
        legal_actions=(),
        history=(),
        turn_limit=1000,
        over=False,
        outcome=None,
        reason=None,
        final_cover=None,
    )
    return Game.from_view(view, cards(other), stock_cards)


def deck(nondealer: str, dealer: str, face_up: str, stock: str = "") -> list[str]:
    """A deck dealing these hands and face-up card; ``stock`` starts the stock (draw order),
    the remaining cards follow in index order."""
    a, b = cards(nondealer), cards(dealer)
    head = [a[0], b[0], a[1], b[1], a[2], b[2], Card.parse(face_up), *cards(stock)]
    rest = [c for c in Card.all() if c not in head]
    return [str(c) for c in head + rest]


def texts(actions: Sequence[object]) -> list[str]:
    return [str(a) for a in actions]


def hand(text: str) -> tuple[Card, ...]:
    """Cards in hand order (card index), as ``Game.hands`` and ``View.hand`` give them."""
    return tuple(sorted(cards(text)))


GameT = TypeVar("GameT", Game, ClassicGame)


def played(game: GameT, n: int, seed: int = 3) -> GameT:
    """``game`` after ``n`` uniformly random legal actions drawn with ``seed``."""
    rng = random.Random(seed)
    for _ in range(n):
        game.play(rng.choice(game.legal_actions()))
    return game
