"""Determinization: complete a view into a full game by sampling the hidden cards.

The engine does the rest (:meth:`referee.rules.Game.from_view`): the sampled game can be
copied, played forward and searched like any other game.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from referee.rules import Card, ClassicGame, ClassicView, Game, View
from sdk.tracker import CardTracker, TableTracker


def sample_hidden(view: View, rng: random.Random) -> tuple[list[Card], list[Card]]:
    """A uniformly random placement of the unseen cards: (opponent's hand, stock in draw
    order ending with the face-up card)."""
    tracker = CardTracker.from_view(view)
    unseen = sorted(tracker.unseen)  # sorted first: the same rng state gives the same sample
    rng.shuffle(unseen)
    k = tracker.opponent_hidden_count
    opponent = [*view.opponent_known, *unseen[:k]]
    stock = unseen[k:]
    if view.face_up is not None:
        stock.append(view.face_up)
    return opponent, stock


def sample_game(view: View, rng: random.Random) -> Game:
    """A full game consistent with ``view``, hidden cards drawn uniformly with ``rng``."""
    opponent, stock = sample_hidden(view, rng)
    return Game.from_view(view, opponent, stock)


def determinizations(view: View, rng: random.Random, count: int) -> Iterator[Game]:
    """``count`` independent samples of :func:`sample_game`."""
    for _ in range(count):
        yield sample_game(view, rng)


def sample_table_hidden(
    view: ClassicView, rng: random.Random
) -> tuple[list[list[Card]], list[Card]]:
    """A uniformly random placement of the unseen cards of a classic table: (every seat's
    hand, known cards first; stock in draw order ending with the face-up card)."""
    tracker = TableTracker.from_view(view)
    unseen = sorted(tracker.unseen)  # sorted first: the same rng state gives the same sample
    rng.shuffle(unseen)
    hands: list[list[Card]] = []
    at = 0
    for seat in range(view.players):
        if seat == view.seat:
            hands.append(list(view.hand))
            continue
        k = tracker.hidden[seat]
        hands.append([*view.known[seat], *unseen[at : at + k]])
        at += k
    stock = unseen[at:]
    if view.face_up is not None:
        stock.append(view.face_up)
    return hands, stock


def sample_table_game(view: ClassicView, rng: random.Random) -> ClassicGame:
    """A full classic-table game consistent with ``view``, hidden cards drawn with ``rng``."""
    hands, stock = sample_table_hidden(view, rng)
    return ClassicGame.from_view(view, hands, stock)
