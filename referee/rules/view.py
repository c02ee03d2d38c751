"""What one seat may know: a pure function of public information and that seat's own hand."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from referee.rules.actions import Action
from referee.rules.cards import Card, Suit


class EndReason(Enum):
    """Why a game ended."""

    OUT = "out"
    """A player emptied his hand with the stock empty and won."""
    DRAW_BY_FINAL_ANSWER = "draw by final answer"
    """The last card was led and the opponent's single card covered it: a draw."""
    TURN_LIMIT = "turn limit"
    """The game reached the turn limit and was adjudicated a draw ([ruling])."""


@dataclass(frozen=True, slots=True)
class View:
    """Everything ``seat`` may know about a game, and nothing more.

    ``pile`` is bottom→top; ``history`` lists every action played so far (action ``i`` was made
    by seat ``1 - dealer`` when ``i`` is even, else by ``dealer``); ``opponent_known`` are the
    opponent's cards that became public (taken from the pile, the face-up card he drew or
    swapped for) and are still in his hand; ``own_known`` is the same about this seat's hand.
    ``legal_actions`` is empty unless it is this seat's turn.
    """

    seat: int
    dealer: int
    hand: tuple[Card, ...]
    pile: tuple[Card, ...]
    trump: Suit
    face_up: Card | None
    stock_count: int
    opponent_count: int
    opponent_known: tuple[Card, ...]
    own_known: tuple[Card, ...]
    to_move: int | None
    legal_actions: tuple[Action, ...]
    history: tuple[Action, ...]
    turn_limit: int
    over: bool
    outcome: int | None
    reason: EndReason | None
    final_cover: Card | None

    @property
    def top(self) -> Card | None:
        """The card to answer, or ``None`` on an empty pile."""
        return self.pile[-1] if self.pile else None

    @property
    def my_turn(self) -> bool:
        """True when this seat is to move."""
        return self.to_move == self.seat
