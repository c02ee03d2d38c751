"""Which cards a seat has seen and which are still hidden, derived from a :class:`View`.

The 36 cards are always somewhere: in my hand, on the pile, in the opponent's hand or in the
stock. A view shows my hand, the pile, the face-up card and the opponent's publicly known
cards; everything else is *unseen* (in the opponent's hand or in the stock, equally likely
as far as the view tells).
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.rules import Card, ClassicView, View


class InconsistentViewError(ValueError):
    """A view's counts do not add up to 36 cards (a corrupted or hand-made view)."""


@dataclass(frozen=True, slots=True)
class CardTracker:
    """Card knowledge of one view. Build it with :meth:`from_view` at each decision."""

    view: View
    unseen: frozenset[Card]
    """Cards whose place this seat does not know (opponent's hidden cards and the stock)."""

    @classmethod
    def from_view(cls, view: View) -> CardTracker:
        """The tracker of ``view``; raises :class:`InconsistentViewError` if counts disagree."""
        seen = set(view.hand) | set(view.pile) | set(view.opponent_known)
        if view.face_up is not None:
            seen.add(view.face_up)
        unseen = frozenset(c for c in Card.all() if c not in seen)
        hidden_opp = view.opponent_count - len(view.opponent_known)
        hidden_stock = view.stock_count - (1 if view.face_up is not None else 0)
        if hidden_opp < 0 or hidden_stock < 0 or len(unseen) != hidden_opp + hidden_stock:
            raise InconsistentViewError(
                f"view of seat {view.seat} does not add up: {len(unseen)} unseen cards but "
                f"{hidden_opp} hidden in the opponent's hand and {hidden_stock} in the stock"
            )
        return cls(view=view, unseen=unseen)

    @property
    def opponent_known(self) -> tuple[Card, ...]:
        """The opponent's cards this seat knows (e.g. taken from the pile)."""
        return self.view.opponent_known

    @property
    def opponent_hidden_count(self) -> int:
        """How many of the opponent's cards are unknown."""
        return self.view.opponent_count - len(self.view.opponent_known)

    @property
    def stock_hidden_count(self) -> int:
        """How many stock cards are face down (the face-up trump is known)."""
        return self.view.stock_count - (1 if self.view.face_up is not None else 0)

    @property
    def unseen_trumps(self) -> frozenset[Card]:
        """Unseen cards of the trump suit."""
        return frozenset(c for c in self.unseen if c.suit == self.view.trump)

    def possible_opponent_cards(self) -> frozenset[Card]:
        """Every card the opponent may hold: his known cards plus the unseen ones."""
        return self.unseen | frozenset(self.view.opponent_known)

    def coverers(self, card: Card) -> frozenset[Card]:
        """Cards the opponent may hold that cover ``card`` (per the engine's covering rule)."""
        trump = self.view.trump
        return frozenset(c for c in self.possible_opponent_cards() if c.covers(card, trump))

    def opponent_surely_covers(self, card: Card) -> bool:
        """True when a card the opponent is known to hold covers ``card``."""
        trump = self.view.trump
        return any(c.covers(card, trump) for c in self.view.opponent_known)


@dataclass(frozen=True, slots=True)
class TableTracker:
    """Card knowledge of one seat at a classic table (:class:`ClassicView`).

    Seen: my hand, the led cards, the discard (public), the face-up trump and the cards each
    other seat is known to hold. Everything else is *unseen*: in another seat's hidden cards
    or in the stock, equally likely as far as the view tells.
    """

    view: ClassicView
    unseen: frozenset[Card]
    hidden: tuple[int, ...]
    """Per seat: how many of its cards are unknown to this seat (0 for this seat)."""

    @classmethod
    def from_view(cls, view: ClassicView) -> TableTracker:
        """The tracker of ``view``; raises :class:`InconsistentViewError` if counts disagree."""
        seen = set(view.hand) | set(view.led) | set(view.discard)
        for seat, cards in enumerate(view.known):
            if seat != view.seat:
                seen |= set(cards)
        if view.face_up is not None:
            seen.add(view.face_up)
        unseen = frozenset(c for c in Card.all() if c not in seen)
        hidden = tuple(
            0 if s == view.seat else view.hand_sizes[s] - len(view.known[s])
            for s in range(view.players)
        )
        stock = view.stock_count - (1 if view.face_up is not None else 0)
        if min(hidden, default=0) < 0 or stock < 0 or len(unseen) != sum(hidden) + stock:
            raise InconsistentViewError(
                f"table view of seat {view.seat} does not add up: {len(unseen)} unseen cards "
                f"but {list(hidden)} hidden in hands and {stock} in the stock"
            )
        return cls(view=view, unseen=unseen, hidden=hidden)

    @property
    def stock_hidden_count(self) -> int:
        """How many stock cards are face down (the face-up trump is known)."""
        return self.view.stock_count - (1 if self.view.face_up is not None else 0)

    def possible_cards(self, seat: int) -> frozenset[Card]:
        """Every card ``seat`` may hold: its known cards plus the unseen ones."""
        if seat == self.view.seat:
            return frozenset(self.view.hand)
        return self.unseen | frozenset(self.view.known[seat])

    def may_cover(self, seat: int, card: Card) -> bool:
        """True when ``seat`` may hold a card covering ``card``."""
        trump = self.view.trump
        return any(c.covers(card, trump) for c in self.possible_cards(seat))
