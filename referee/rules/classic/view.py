"""What one seat at a classic table may know: public information and that seat's own hand."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from referee.rules.cards import Card, Suit
from referee.rules.classic.actions import ClassicAction


class ClassicEndReason(Enum):
    """Why a game of the classic table ended."""

    LAST_HOLDER = "last holder"
    """The stock is empty and exactly one player still holds cards: he lost (``loser``)."""
    ALL_OUT = "all out"
    """[ruling] The last lead was covered with the defender's last cards: nobody holds cards,
    the game is a draw."""
    TURN_LIMIT = "turn limit"
    """[ruling] The game reached the turn limit: seats that are out beat those that are not,
    who draw with each other."""
    LOSER = "last holder"
    """The former name of :attr:`LAST_HOLDER` (an alias: the same member)."""


@dataclass(frozen=True, slots=True)
class ClassicView:
    """Everything ``seat`` may know about a game of the classic table, and nothing more.

    Per-seat tuples (``hand_sizes``, ``out``, ``known``) are indexed by seat. ``known[s]`` are
    the cards of seat ``s``'s hand that every player saw go there (led cards he took, the face-up
    card he drew) and that he has not played since; ``known[seat]`` is what the others know of
    this seat's hand. ``led`` are the cards led in the current trick, in suit order; a cover
    completes the trick in the same action, so covering cards never wait on the table: the
    covered trick is at the end of ``discard`` (led card, its cover, led card, its cover ...).
    ``history[i]`` was played by seat ``movers[i]``. ``leader``, ``defender`` and ``to_move`` are
    ``None`` once the game is over; ``legal_actions`` is empty unless it is this seat's move.
    ``loser`` is the seat that lost, ``None`` for a draw and while the game runs.
    """

    ruleset: str
    seat: int
    players: int
    dealer: int
    hand: tuple[Card, ...]
    hand_sizes: tuple[int, ...]
    out: tuple[bool, ...]
    known: tuple[tuple[Card, ...], ...]
    leader: int | None
    defender: int | None
    led: tuple[Card, ...]
    discard: tuple[Card, ...]
    trump: Suit
    face_up: Card | None
    stock_count: int
    to_move: int | None
    legal_actions: tuple[ClassicAction, ...]
    history: tuple[ClassicAction, ...]
    movers: tuple[int, ...]
    turn_limit: int
    over: bool
    loser: int | None
    reason: ClassicEndReason | None

    @property
    def my_turn(self) -> bool:
        """True when this seat is to move."""
        return self.to_move == self.seat
