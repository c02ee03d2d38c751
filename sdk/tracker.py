"""Which cards a seat has seen and which are still hidden, derived from a :class:`View`.

The 36 cards are always somewhere: in my hand, on the pile, in the opponent's hand or in the
stock. A view shows my hand, the pile, the face-up card and the opponent's publicly known
cards; everything else is *unseen* (in the opponent's hand or in the stock, equally likely
as far as the view tells).
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.rules import Card, ClassicView, DeckTypeError, InvalidViewError, View
from referee.rules.errors import quote
from referee.rules.viewcheck import view_cards


class InconsistentViewError(InvalidViewError):
    """A view's counts do not add up to 36 cards (a corrupted or hand-made view). An
    :class:`~referee.rules.InvalidViewError` (so an ``InvalidDeckError`` and a
    ``ValueError``), as ``Game.from_view`` refuses such a view: ``sample_game``, which asks
    the tracker first, raises what the guide promises."""


@dataclass(frozen=True, slots=True)
class CardTracker:
    """Card knowledge of one view. Build it with :meth:`from_view` at each decision."""

    view: View
    unseen: frozenset[Card]
    """Cards this seat has not seen: the opponent's hidden cards and the face-down stock.
    When one of the two hides no card, the other holds them all: :meth:`possible_opponent_cards`
    and :meth:`opponent_surely_holds` make that deduction."""

    @classmethod
    def from_view(cls, view: View) -> CardTracker:
        """The tracker of ``view``; raises :class:`InconsistentViewError` if counts disagree
        (``DeckTypeError`` when ``view`` is not a view of the default game)."""
        _check_kind(view, View, "CardTracker needs a View of the default game")
        # Cards, each once (else the engine's typed errors, naming the field).
        seen = {
            *view_cards(view.hand, "view.hand"),
            *view_cards(view.pile, "view.pile"),
            *view_cards(view.opponent_known, "view.opponent_known"),
        }
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
        """Every card the opponent may hold: his known cards, plus the unseen ones unless
        every card of his is known (then the unseen ones are all in the stock)."""
        known = frozenset(self.view.opponent_known)
        return known | self.unseen if self.opponent_hidden_count else known

    def opponent_surely_holds(self) -> frozenset[Card]:
        """Every card the opponent surely holds: his known cards, plus the unseen ones once no
        stock card is face down (they can be nowhere else)."""
        known = frozenset(self.view.opponent_known)
        return known if self.stock_hidden_count else known | self.unseen

    def coverers(self, card: Card) -> frozenset[Card]:
        """Cards the opponent may hold that cover ``card`` (per the engine's covering rule)."""
        trump = self.view.trump
        return frozenset(c for c in self.possible_opponent_cards() if c.covers(card, trump))

    def opponent_surely_covers(self, card: Card) -> bool:
        """True when a card the opponent surely holds (:meth:`opponent_surely_holds`) covers
        ``card``."""
        trump = self.view.trump
        return any(c.covers(card, trump) for c in self.opponent_surely_holds())


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
        """The tracker of ``view``; raises :class:`InconsistentViewError` if counts disagree
        (``DeckTypeError`` when ``view`` is not a view of the classic table)."""
        _check_kind(view, ClassicView, "TableTracker needs a ClassicView of the classic table")
        seen = {
            *view_cards(view.hand, "view.hand"),
            *view_cards(view.led, "view.led"),
            *view_cards(view.discard, "view.discard"),
        }
        for name in ("hand_sizes", "known"):
            value = getattr(view, name)
            if not isinstance(value, tuple | list) or len(value) != view.players:
                raise InvalidViewError(
                    f"view.{name} must have one entry per seat ({view.players}), got {quote(value)}"
                )
        for seat, cards in enumerate(view.known):
            if seat != view.seat:
                seen |= set(view_cards(cards, f"view.known[{seat}]"))
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
        """Every card ``seat`` may hold: its known cards, plus the unseen ones if some of its
        cards are unknown (a seat that is out, or whose every card is known, holds no other)."""
        if seat == self.view.seat:
            return frozenset(self.view.hand)
        known = frozenset(self.view.known[seat])
        return known | self.unseen if self.hidden[seat] else known

    def surely_holds(self, seat: int) -> frozenset[Card]:
        """Every card ``seat`` surely holds: its known cards, plus the unseen ones when it is
        the only place left for them (no stock card face down, no other seat hiding a card)."""
        if seat == self.view.seat:
            return frozenset(self.view.hand)
        known = frozenset(self.view.known[seat])
        elsewhere = self.stock_hidden_count + sum(self.hidden) - self.hidden[seat]
        return known | self.unseen if self.hidden[seat] and not elsewhere else known

    def may_cover(self, seat: int, card: Card) -> bool:
        """True when ``seat`` may hold a card covering ``card``."""
        trump = self.view.trump
        return any(c.covers(card, trump) for c in self.possible_cards(seat))


def _check_kind(view: object, wanted: type, needs: str) -> None:
    """DeckTypeError (``needs``, what was given, and which tracker takes a view of the other
    ruleset) unless ``view`` is a ``wanted``."""
    if isinstance(view, wanted):
        return
    other = {View: " (a two-player View: CardTracker)", ClassicView: " (a table's ClassicView:"
             " TableTracker)"}  # fmt: skip
    hint = next((text for kind, text in other.items() if isinstance(view, kind)), "")
    raise DeckTypeError(f"{needs}, got {quote(view)}{hint}")
