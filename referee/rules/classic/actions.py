"""Actions of the classic table: lead one or several cards of one rank, cover them all, or take.

Canonical text (rules-classic.md): ``lead 7S``, ``lead 7C 7S`` (led cards in suit order
C D H S), ``cover 7C:9C 7S:6H`` (each led card, a colon, the card put on it; pairs in the order
of the led cards) and ``take``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from referee.rules.actions import fold_keyword
from referee.rules.cards import Card
from referee.rules.errors import ActionTypeError, InvalidActionError, InvalidCardError, quote

MAX_LED: Final = 4
"""At most the four cards of one rank can be led at once."""


class ClassicActionKind(Enum):
    """What an action of the classic table does."""

    LEAD = "lead"
    """The leader puts one card, or several of one rank, on the table."""
    COVER = "cover"
    """The defender covers every led card, one card on each."""
    TAKE = "take"
    """The defender takes every led card into his hand."""


@dataclass(frozen=True, slots=True, repr=False)
class ClassicAction:
    """One action of the classic table. Immutable; ``str(action)`` is the canonical text.

    ``led`` are the led cards (for a lead: the cards put down; for a cover: the cards covered),
    always in suit order; ``covers[i]`` is the card put on ``led[i]`` (covers only). A ``take``
    has neither. Build actions with :meth:`lead`, :meth:`cover`, :meth:`take` or :meth:`parse`;
    the constructor checks the shape (one rank, distinct cards, 1–4 led cards) and puts the
    cards in canonical order, raising :class:`InvalidActionError` otherwise.
    """

    kind: ClassicActionKind
    led: tuple[Card, ...] = ()
    covers: tuple[Card, ...] = ()
    text: str = field(default="", compare=False)
    """The canonical text (computed; also what ``str()`` gives)."""

    def __post_init__(self) -> None:
        kind = self.kind
        if not isinstance(kind, ClassicActionKind):
            raise ActionTypeError(f"not an action kind: {quote(kind)}")
        try:
            led = tuple(Card.parse(c) for c in self.led)
            covers = tuple(Card.parse(c) for c in self.covers)
        except (InvalidCardError, TypeError) as exc:
            # Not cards at all (None, numbers, not iterable): a type error, not a bad card.
            error = ActionTypeError if isinstance(exc, TypeError) else InvalidActionError
            raise error(
                f"malformed {kind.value}: led={quote(self.led)} covers={quote(self.covers)}: {exc}"
            ) from None
        shape = (
            f"{kind.value} with led={quote([c.text for c in led])}, "
            f"covers={quote([c.text for c in covers])}"
        )
        if kind is ClassicActionKind.TAKE:
            if led or covers:
                raise InvalidActionError(f"malformed {shape}: take names no cards")
        else:
            if not 1 <= len(led) <= MAX_LED:
                raise InvalidActionError(f"malformed {shape}: 1 to {MAX_LED} led cards")
            if len(set(led)) != len(led):
                raise InvalidActionError(f"malformed {shape}: a led card is repeated")
            if len({c.rank for c in led}) != 1:
                raise InvalidActionError(f"malformed {shape}: the led cards must be of one rank")
            if kind is ClassicActionKind.LEAD:
                if covers:
                    raise InvalidActionError(f"malformed {shape}: a lead covers nothing")
                led = tuple(sorted(led))
            else:
                if len(covers) != len(led):
                    raise InvalidActionError(f"malformed {shape}: one covering card per led card")
                if len(set(covers)) != len(covers) or set(covers) & set(led):
                    raise InvalidActionError(f"malformed {shape}: the cards must be distinct")
                pairs = sorted(zip(led, covers, strict=True))
                led = tuple(p[0] for p in pairs)
                covers = tuple(p[1] for p in pairs)
        object.__setattr__(self, "led", led)
        object.__setattr__(self, "covers", covers)
        object.__setattr__(self, "text", _text(kind, led, covers))

    @classmethod
    def _trusted(
        cls, kind: ClassicActionKind, led: tuple[Card, ...], covers: tuple[Card, ...]
    ) -> ClassicAction:
        """Build an action the engine generated (already canonical) without re-checking it."""
        action = object.__new__(cls)
        object.__setattr__(action, "kind", kind)
        object.__setattr__(action, "led", led)
        object.__setattr__(action, "covers", covers)
        object.__setattr__(action, "text", _text(kind, led, covers))
        return action

    @classmethod
    def lead(cls, *cards: Card | str) -> ClassicAction:
        """``lead`` of these cards (one rank; any order)."""
        return cls(ClassicActionKind.LEAD, tuple(Card.parse(c) for c in cards))

    @classmethod
    def cover(cls, *pairs: tuple[Card | str, Card | str]) -> ClassicAction:
        """``cover``: each pair is (led card, the card put on it); any order of pairs.
        Anything but such pairs is refused with :class:`ActionTypeError`, quoting it."""
        for pair in pairs:
            paired = isinstance(pair, tuple | list) and len(pair) == 2
            if not paired:
                raise ActionTypeError(
                    f"cover takes (led card, covering card) pairs, got {quote(pair)}"
                )
        return cls(
            ClassicActionKind.COVER,
            tuple(Card.parse(led) for led, _ in pairs),
            tuple(Card.parse(cover) for _, cover in pairs),
        )

    @classmethod
    def take(cls) -> ClassicAction:
        """``take``."""
        return _TAKE

    @classmethod
    def parse(cls, text: str | ClassicAction) -> ClassicAction:
        """Parse action text: ASCII letter case and whitespace (any run of what ``str.split()``
        splits on) are forgiven, cards may be given in any order and spelt as
        :meth:`Card.parse` accepts (``10H``, ``T♥``). The result is canonical.

        Raises :class:`InvalidActionError` (quoting ``text``) when it is not an action of the
        classic table (:class:`ActionTypeError` when it is not even text). Whether the action
        is *legal* is the game's business.
        """
        if isinstance(text, ClassicAction):
            return text
        if not isinstance(text, str):
            raise ActionTypeError(
                f"not a classic action: {quote(text)} (expected text such as 'take')"
            )
        # Only the keyword is lower-cased (cards: Card.parse), and only when ASCII.
        words = text.split()
        verb = fold_keyword(words[0]) if words else ""
        if len(words) > MAX_LED + 1 and verb in ("lead", "cover"):
            # Refused before parsing any card: a hostile reply of a million cards costs a split.
            raise InvalidActionError(
                f"malformed action {quote(text)}: 1 to {MAX_LED} led cards, got {len(words) - 1}"
            )
        try:
            if verb == "take" and len(words) == 1:
                return _TAKE
            if verb == "lead" and len(words) >= 2:
                return cls(ClassicActionKind.LEAD, tuple(Card.parse(w) for w in words[1:]))
            if verb == "cover" and len(words) >= 2:
                pairs = [w.split(":") for w in words[1:]]
                if all(len(p) == 2 for p in pairs):
                    return cls(
                        ClassicActionKind.COVER,
                        tuple(Card.parse(p[0]) for p in pairs),
                        tuple(Card.parse(p[1]) for p in pairs),
                    )
        except (InvalidCardError, InvalidActionError) as exc:
            raise InvalidActionError(f"malformed action {quote(text)}: {exc}") from None
        raise InvalidActionError(
            f"malformed action {quote(text)} (expected 'lead C [C ...]', "
            "'cover LED:COVER [LED:COVER ...]' or 'take')"
        )

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"ClassicAction({self.text!r})"


def _text(kind: ClassicActionKind, led: tuple[Card, ...], covers: tuple[Card, ...]) -> str:
    if kind is ClassicActionKind.TAKE:
        return "take"
    if kind is ClassicActionKind.LEAD:
        return "lead " + " ".join(c.text for c in led)
    return "cover " + " ".join(f"{a.text}:{b.text}" for a, b in zip(led, covers, strict=True))


_TAKE: Final = ClassicAction(ClassicActionKind.TAKE)
