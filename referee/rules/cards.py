"""Cards, suits and ranks of the 36-card deck, and the covering relation.

A card has a dense index ``suit * 9 + rank`` (0..35) so that sets of cards are 36-bit masks;
the rules core works on those indices and hands out interned :class:`Card` objects at its edge.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from referee.rules.errors import InvalidCardError


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
        """Parse ``C``/``d``/``♥``/``spades`` style suit names."""
        key = text.strip()
        suit = _SUIT_NAMES.get(key) or _SUIT_NAMES.get(key.upper())
        if suit is None:
            raise InvalidCardError(f"not a suit: {text!r} (expected one of C D H S or ♣♦♥♠)")
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
    "10": Rank.TEN,
}

N_CARDS: Final = 36
FULL_MASK: Final = (1 << N_CARDS) - 1


class Card:
    """One of the 36 cards. Instances are interned: ``Card.parse("10H") is Card.parse("TH")``.

    ``str(card)`` is the canonical text (rank letter then suit letter, e.g. ``TH``).
    """

    __slots__ = ("index", "rank", "suit", "text")

    index: int
    rank: Rank
    suit: Suit
    text: str
    """The canonical text, e.g. ``TH`` (also what ``str()`` gives)."""

    def __new__(cls, rank: Rank | int, suit: Suit | int) -> Card:
        """Return the interned card of this rank and suit."""
        if not (0 <= int(rank) < 9 and 0 <= int(suit) < 4):
            raise InvalidCardError(f"no such card: rank={rank!r} suit={suit!r}")
        return _CARDS[int(suit) * 9 + int(rank)]

    @classmethod
    def _make(cls, index: int) -> Card:
        card = object.__new__(cls)
        card.index = index
        card.rank = Rank(index % 9)
        card.suit = Suit(index // 9)
        card.text = card.rank.letter + card.suit.letter
        return card

    @classmethod
    def parse(cls, text: str | Card) -> Card:
        """Parse ``TH``, ``10H``, ``th``, ``10♥`` (any case, surrounding spaces ignored)."""
        if isinstance(text, Card):
            return text
        if not isinstance(text, str):
            raise InvalidCardError(f"not a card: {text!r} (expected text such as 'TH')")
        card = _BY_TEXT.get(text)
        if card is not None:
            return card
        key = text.strip().upper()
        if len(key) >= 2:
            rank = _RANK_NAMES.get(key[:-1])
            suit = _SUIT_NAMES.get(key[-1])
            if rank is not None and suit is not None:
                return _CARDS[suit * 9 + rank]
        raise InvalidCardError(
            f"not a card: {text!r} (expected rank 6 7 8 9 T/10 J Q K A then suit C D H S or ♣♦♥♠)"
        )

    @classmethod
    def from_index(cls, index: int) -> Card:
        """The card with dense index ``index`` (``suit * 9 + rank``)."""
        if not 0 <= index < N_CARDS:
            raise InvalidCardError(f"no card has index {index!r} (expected 0..35)")
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
