"""Actions: the four kinds of turn, optionally preceded by the swap of the trump six.

Canonical text (rules.md): ``lead 7S``, ``cover 9H 6C``, ``cover 9H``, ``take``, each optionally
prefixed by ``swap ``. Every action has a compact integer code used by the engine's fast path.
All 2,666 possible actions are built once, at import, and interned per code: an action equal to
another *is* that other object, so equality is identity (and membership in a list of actions
is a C-level identity scan, which the engine's trusted play path relies on).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final, Never, NoReturn

from referee.rules.cards import FULL_MASK, Card
from referee.rules.errors import ActionTypeError, InvalidActionError, InvalidCardError, quote


class ActionKind(IntEnum):
    """What a turn does (after the optional swap)."""

    LEAD = 0
    """Put one card on the empty pile."""
    COVER_AND_LEAD = 1
    """Cover the top card, then lead another card on top of it."""
    COVER_AND_GO_OUT = 2
    """Cover the top card with the last card in hand while the stock is empty."""
    TAKE = 3
    """Take the top 1, 3 or all cards of the pile."""


SWAP_BIT: Final = 1 << 14
_KIND_SHIFT: Final = 12


def encode(kind: int, first: int = 0, second: int = 0, swap: bool = False) -> int:
    """Pack an action into its integer code (see module docstring)."""
    return (SWAP_BIT if swap else 0) | kind << _KIND_SHIFT | first << 6 | second


class Action:
    """One turn. Immutable and interned (equal actions are the same object, so ``==`` is
    ``is``); ``str(action)`` is the canonical text.

    Every game, view and bot of the process shares the interned instances, so assigning or
    deleting an attribute raises ``AttributeError`` (as on a frozen dataclass): one bot must not
    be able to rename the ``take`` of every other game.

    ``cover`` is the covering card (cover kinds), ``lead`` the card put on top (lead kinds),
    ``swap`` whether the trump six is exchanged for the face-up card first.
    """

    __slots__ = ("_keep", "_push", "code", "cover", "kind", "lead", "swap", "text")

    code: int
    kind: ActionKind
    cover: Card | None
    lead: Card | None
    swap: bool
    text: str
    """The canonical text (also what ``str()`` gives)."""
    _push: tuple[int, ...]
    # The card indices this action puts on the pile, bottom first (empty for take): what the
    # engine's transition applies without decoding the code again.
    _keep: int
    # The mask of the cards left in hand by playing this action's cards (all 36 for take).

    def __new__(
        cls,
        kind: ActionKind,
        *,
        cover: Card | str | None = None,
        lead: Card | str | None = None,
        swap: bool = False,
    ) -> Action:
        """Build (the interned instance of) an action; cards may be given as text."""
        if kind not in _KINDS:
            raise ActionTypeError(f"not an action kind: {quote(kind)}")
        cover_card = None if cover is None else Card.parse(cover)
        lead_card = None if lead is None else Card.parse(lead)
        needs = {
            ActionKind.LEAD: (False, True),
            ActionKind.COVER_AND_LEAD: (True, True),
            ActionKind.COVER_AND_GO_OUT: (True, False),
            ActionKind.TAKE: (False, False),
        }[ActionKind(kind)]
        if (cover_card is not None, lead_card is not None) != needs:
            raise InvalidActionError(
                f"{ActionKind(kind).name} takes cover={needs[0]}, lead={needs[1]}; "
                f"got cover={quote(cover)}, lead={quote(lead)}"
            )
        if cover_card is not None and cover_card == lead_card:
            raise InvalidActionError(f"cannot cover and lead the same card {cover_card}")
        if kind == ActionKind.LEAD:
            assert lead_card is not None
            code = encode(kind, lead_card.index, 0, swap)
        else:
            code = encode(
                kind,
                cover_card.index if cover_card else 0,
                lead_card.index if lead_card else 0,
                swap,
            )
        return cls.from_code(code)

    @classmethod
    def from_code(cls, code: int) -> Action:
        """The interned action of an integer code (as produced by the engine)."""
        action = _INTERNED.get(code)
        if action is None:
            action = _INTERNED[code] = cls._build(code)
        return action

    @classmethod
    def _build(cls, code: int) -> Action:
        """Build the one instance of ``code`` (at import, or once for a non-canonical code)."""
        kind = _KINDS[code >> _KIND_SHIFT & 3]
        first = Card.from_index(code >> 6 & 63)
        second = Card.from_index(code & 63)
        swap = "swap " if code & SWAP_BIT else ""
        cover: Card | None
        lead: Card | None
        if kind is ActionKind.LEAD:
            cover, lead = None, first
            text = f"{swap}lead {first.text}"
        elif kind is ActionKind.COVER_AND_LEAD:
            cover, lead = first, second
            text = f"{swap}cover {first.text} {second.text}"
        elif kind is ActionKind.COVER_AND_GO_OUT:
            cover, lead = first, None
            text = f"{swap}cover {first.text}"
        else:
            cover = lead = None
            text = f"{swap}take"
        push = tuple(c.index for c in (cover, lead) if c is not None)
        keep = FULL_MASK
        for index in push:
            keep &= ~(1 << index)
        action = object.__new__(cls)
        # object.__setattr__: this class's own __setattr__ refuses every assignment.
        for name, value in (
            ("code", code),
            ("kind", kind),
            ("swap", bool(swap)),
            ("cover", cover),
            ("lead", lead),
            ("text", text),
            ("_push", push),
            ("_keep", keep),
        ):
            object.__setattr__(action, name, value)
        return action

    def __setattr__(self, name: str, value: Never) -> NoReturn:
        raise AttributeError(
            f"cannot assign to field {name!r}: actions are immutable (interned, shared by "
            "every game)"
        )

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(
            f"cannot delete field {name!r}: actions are immutable (interned, shared by every game)"
        )

    @classmethod
    def parse(cls, text: str | Action) -> Action:
        """Parse action text: the canonical text, or one differing only in ASCII letter case,
        whitespace (any run of what ``str.split()`` splits on, before, between and after the
        words) and card spelling (see :meth:`Card.parse`). The result is canonical.

        Raises :class:`InvalidActionError` (quoting ``text``) when it is not an action at all
        (:class:`ActionTypeError` when it is not even text). Whether the action is *legal* is
        the game's business, not the parser's.
        """
        if type(text) is str:
            cached = _BY_TEXT.get(text)
            if cached is not None:
                return cached
        action = cls._parse(text)
        if type(text) is str and text == action.text:
            _BY_TEXT[text] = action  # bounded: there are 2,666 canonical texts
        return action

    @classmethod
    def _parse(cls, text: str | Action) -> Action:
        """The parser behind :meth:`parse` (which caches canonical texts)."""
        if isinstance(text, Action):
            return text
        if not isinstance(text, str):
            raise ActionTypeError(f"not an action: {quote(text)} (expected text such as 'take')")
        # Only the keywords are lower-cased (cards: Card.parse), and only ASCII ones.
        words = text.split()
        swap = bool(words) and fold_keyword(words[0]) == "swap"
        if swap:
            words = words[1:]
        verb = fold_keyword(words[0]) if words else ""
        try:
            if verb == "take" and len(words) == 1:
                return cls(ActionKind.TAKE, swap=swap)
            if verb == "lead" and len(words) == 2:
                return cls(ActionKind.LEAD, lead=words[1], swap=swap)
            if verb == "cover" and len(words) == 2:
                return cls(ActionKind.COVER_AND_GO_OUT, cover=words[1], swap=swap)
            if verb == "cover" and len(words) == 3:
                return cls(ActionKind.COVER_AND_LEAD, cover=words[1], lead=words[2], swap=swap)
        except (InvalidCardError, InvalidActionError) as exc:
            raise InvalidActionError(f"malformed action {quote(text)}: {exc}") from None
        raise InvalidActionError(
            f"malformed action {quote(text)} (expected '[swap] lead C', '[swap] cover C [C]' "
            "or '[swap] take')"
        )

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Action({self.text!r})"

    # No __eq__: every way to obtain an Action (constructor, parse, from_code, unpickling,
    # copy) returns the interned instance of its code, so the default identity equality is
    # value equality; leaving it to the interpreter keeps `action in legal_list` in C.

    def __hash__(self) -> int:
        return self.code

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (Action.from_code, (self.code,))


def fold_keyword(word: str) -> str:
    """``word`` lower-cased when it is ASCII; other text is left as is, because Unicode case
    mapping turns lookalikes into ASCII letters (the Kelvin sign lower-cases to ``k``)."""
    return word.lower() if word.isascii() else word


_KINDS: Final = tuple(ActionKind)
_INTERNED: dict[int, Action] = {}
_BY_TEXT: Final[dict[str, Action]] = {}


def canonical_codes() -> list[int]:
    """The codes of all 2,666 possible actions (both swap flags; every lead, go-out, ordered
    cover-and-lead pair of distinct cards, and take), in code order."""
    codes = []
    for swap in (0, SWAP_BIT):
        for x in range(36):
            codes.append(swap | encode(ActionKind.LEAD, x))
            codes += [swap | encode(ActionKind.COVER_AND_LEAD, x, y) for y in range(36) if y != x]
            codes.append(swap | encode(ActionKind.COVER_AND_GO_OUT, x))
        codes.append(swap | encode(ActionKind.TAKE))
    return sorted(codes)


def _intern_all() -> tuple[Action | None, ...]:
    """Build every action once; returns the table indexed by code (``None`` off the codes).

    The short actions' texts are also put in the parse cache, so parsing them is one lookup.
    """
    table: list[Action | None] = [None] * (SWAP_BIT << 1)
    for code in canonical_codes():
        action = table[code] = _INTERNED[code] = Action._build(code)
        if action.kind != ActionKind.COVER_AND_LEAD:
            _BY_TEXT[action.text] = action
    return tuple(table)


BY_CODE: Final[tuple[Action | None, ...]] = _intern_all()
"""``BY_CODE[code]``: the interned action of a canonical code (``None`` for non-codes); the
engine lists legal actions by indexing tables built from this, never by encoding or parsing."""
