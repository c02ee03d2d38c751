"""Cards, suits and ranks of the 36-card deck, and the covering relation.

A card has a dense index ``suit * 9 + rank`` (0..35) so that sets of cards are 36-bit masks;
the rules core works on those indices and hands out interned :class:`Card` objects at its edge.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final, Never, NoReturn

from referee.rules.errors import CardTypeError, InvalidCardError, quote


class Suit(IntEnum):
    """The four suits, in the order of their letters C D H S."""

    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def letter(self) -> str:
        """Canonical one-letter name: ``C``, ``D``, ``H`` or ``S``."""
        return "CDHS"[self]

    @property
    def symbol(self) -> str:
        """The suit symbol ♣ ♦ ♥ ♠."""
        return "♣♦♥♠"[self]

    @classmethod
    def parse(cls, text: str) -> Suit:
        """Parse ``C``/``d``/``♥``/``♡``/``spades`` style suit names (ASCII letters in any case,
        surrounding whitespace ignored)."""
        if not isinstance(text, str):
            raise CardTypeError(f"not a suit: {quote(text)} (expected text such as 'H')")
        key = text.strip()
        suit = _SUIT_NAMES.get(key)
        if suit is None and key.isascii():
            # ASCII only: Unicode case mapping would turn lookalikes (the long s 'ſ') into S.
            suit = _SUIT_NAMES.get(key.upper())
        if suit is None:
            raise InvalidCardError(f"not a suit: {quote(text)} (expected one of C D H S or ♣♦♥♠)")
        return suit


class Rank(IntEnum):
    """Ranks from low to high: 6 7 8 9 T J Q K A."""

    SIX = 0
    SEVEN = 1
    EIGHT = 2
    NINE = 3
    TEN = 4
    JACK = 5
    QUEEN = 6
    KING = 7
    ACE = 8

    @property
    def letter(self) -> str:
        """Canonical one-character name (``T`` is the ten)."""
        return "6789TJQKA"[self]


_SUIT_NAMES: Final[dict[str, Suit]] = {
    **{s.letter: s for s in Suit},
    **{s.symbol: s for s in Suit},
    **dict(zip("♧♢♡♤", Suit, strict=True)),
    **{s.name: s for s in Suit},
}
_RANK_NAMES: Final[dict[str, Rank]] = {
    **{r.letter: r for r in Rank},
    **{r.letter.lower(): r for r in Rank},
    "10": Rank.TEN,
}
"""The rank part of a card's text: ``6``..``9``, ``T``/``10``, ``J Q K A``, letters in any case."""
_SUIT_CHARS: Final[dict[str, Suit]] = {
    **{s.letter: s for s in Suit},
    **{s.letter.lower(): s for s in Suit},
    **{s.symbol: s for s in Suit},
    **dict(zip("♧♢♡♤", Suit, strict=True)),
}
"""The suit part of a card's text: ``C D H S`` in any case, ``♣♦♥♠`` or the white ``♧♢♡♤``.
Exact lookups, no ``str.upper()``: Unicode case mapping would accept lookalikes such as the
Kelvin sign for ``K`` or the long s for ``S``."""

N_CARDS: Final = 36
FULL_MASK: Final = (1 << N_CARDS) - 1


class Card:
    """One of the 36 cards. Instances are interned: ``Card.parse("10H") is Card.parse("TH")``.

    ``str(card)`` is the canonical text (rank letter then suit letter, e.g. ``TH``). Immutable:
    the 36 instances are shared by every game, view and bot in the process, so assigning or
    deleting an attribute raises ``AttributeError`` (as on a frozen dataclass).
    """

    __slots__ = ("index", "rank", "suit", "text")

    index: int
    rank: Rank
    suit: Suit
    text: str
    """The canonical text, e.g. ``TH`` (also what ``str()`` gives)."""

    def __new__(cls, rank: Rank | int, suit: Suit | int) -> Card:
        """Return the interned card of this rank and suit."""
        if not isinstance(rank, int) or not isinstance(suit, int):
            raise CardTypeError(f"no such card: rank={quote(rank)} suit={quote(suit)}")
        if not (0 <= rank < 9 and 0 <= suit < 4):
            raise InvalidCardError(f"no such card: rank={quote(rank)} suit={quote(suit)}")
        return _CARDS[suit * 9 + rank]

    @classmethod
    def _make(cls, index: int) -> Card:
        """Build the card of ``index`` (once per card, at import)."""
        card = object.__new__(cls)
        # object.__setattr__: this class's own __setattr__ refuses every assignment.
        rank, suit = Rank(index % 9), Suit(index // 9)
        object.__setattr__(card, "index", index)
        object.__setattr__(card, "rank", rank)
        object.__setattr__(card, "suit", suit)
        object.__setattr__(card, "text", rank.letter + suit.letter)
        return card

    def __setattr__(self, name: str, value: Never) -> NoReturn:
        raise AttributeError(
            f"cannot assign to field {name!r}: cards are immutable (shared by every game)"
        )

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(
            f"cannot delete field {name!r}: cards are immutable (shared by every game)"
        )

    @classmethod
    def parse(cls, text: str | Card) -> Card:
        """Parse ``TH``, ``10H``, ``th``, ``10♥``, ``T♡``: a rank (``6``..``9``, ``T`` or ``10``,
        ``J Q K A``) then a suit (``C D H S``, ``♣♦♥♠`` or ``♧♢♡♤``); ASCII letters in any case,
        surrounding whitespace (as ``str.strip()`` sees it) ignored.

        Raises :class:`InvalidCardError` quoting ``text`` (:class:`CardTypeError` when it is
        not text at all).
        """
        if isinstance(text, Card):
            return text
        if not isinstance(text, str):
            raise CardTypeError(f"not a card: {quote(text)} (expected text such as 'TH')")
        card = _BY_TEXT.get(text)
        if card is not None:
            return card
        key = text.strip()
        if len(key) >= 2:
            rank = _RANK_NAMES.get(key[:-1])
            suit = _SUIT_CHARS.get(key[-1])
            if rank is not None and suit is not None:
                return _CARDS[suit * 9 + rank]
        raise InvalidCardError(
            f"not a card: {quote(text)} "
            "(expected rank 6 7 8 9 T/10 J Q K A then suit C D H S or ♣♦♥♠)"
        )

    @classmethod
    def from_index(cls, index: int) -> Card:
        """The card with dense index ``index`` (``suit * 9 + rank``)."""
        if not 0 <= index < N_CARDS:
            raise InvalidCardError(f"no card has index {quote(index)} (expected 0..35)")
        return _CARDS[index]

    @staticmethod
    def all() -> tuple[Card, ...]:
        """All 36 cards in index order (clubs 6..A, diamonds, hearts, spades)."""
        return _CARDS

    def covers(self, other: Card, trump: Suit) -> bool:
        """True when this card may cover ``other`` with ``trump`` as the trump suit."""
        return bool(COVER_MASKS[trump][other.index] >> self.index & 1)

    @property
    def symbol(self) -> str:
        """Display form with the suit symbol, e.g. ``10♥``."""
        return ("10" if self.rank is Rank.TEN else self.rank.letter) + self.suit.symbol

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Card({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Card) and other.index == self.index

    def __hash__(self) -> int:
        return self.index

    def __lt__(self, other: Card) -> bool:
        return self.index < other.index

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (Card.from_index, (self.index,))


_CARDS: Final[tuple[Card, ...]] = tuple(Card._make(i) for i in range(N_CARDS))
_BY_TEXT: Final[dict[str, Card]] = {str(c): c for c in _CARDS}

SUIT_MASKS: Final[tuple[int, ...]] = tuple(0x1FF << (9 * s) for s in range(4))


def _cover_masks(trump: int) -> tuple[int, ...]:
    """For each card Y, the mask of cards X that cover Y when ``trump`` is trump."""
    masks = []
    for y in range(N_CARDS):
        suit = y // 9
        higher_same_suit = SUIT_MASKS[suit] & ~((1 << (y + 1)) - 1)
        if suit == trump:
            masks.append(higher_same_suit)
        else:
            masks.append(higher_same_suit | SUIT_MASKS[trump])
    return tuple(masks)


COVER_MASKS: Final[tuple[tuple[int, ...], ...]] = tuple(_cover_masks(t) for t in range(4))
"""``COVER_MASKS[trump][y]``: bit x set when card x covers card y."""

ACE_RANK: Final = int(Rank.ACE)
SIX_RANK: Final = int(Rank.SIX)


def _suit_tables() -> tuple[tuple[tuple[Card, ...], ...], ...]:
    """``table[suit][bits]``: the cards of a 9-bit rank pattern within ``suit``."""
    return tuple(
        tuple(tuple(_CARDS[suit * 9 + r] for r in range(9) if bits >> r & 1) for bits in range(512))
        for suit in range(4)
    )


_SUIT_TABLES: Final = _suit_tables()


def cards_of(mask: int) -> tuple[Card, ...]:
    """The cards of a bit mask, in index order."""
    clubs, diamonds, hearts, spades = _SUIT_TABLES
    return (
        clubs[mask & 0x1FF]
        + diamonds[mask >> 9 & 0x1FF]
        + hearts[mask >> 18 & 0x1FF]
        + spades[mask >> 27 & 0x1FF]
    )
