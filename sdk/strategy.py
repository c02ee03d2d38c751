"""Small heuristics authors can build on (the greedy example bot is one call to
:func:`greedy_action`). They rank the engine's legal actions; they never decide legality."""

from __future__ import annotations

from collections.abc import Sequence

from referee.rules import Action, ActionKind, Card, ClassicAction, ClassicActionKind, Suit


def card_value(card: Card, trump: Suit) -> int:
    """How precious a card is for covering: rank 0..8, plus 9 for a trump."""
    return int(card.rank) + (9 if card.suit == trump else 0)


def lead_key(card: Card, trump: Suit) -> tuple[int, int]:
    """Smaller is a better lead: the lowest non-trump first (it is the worst card for
    covering, so get rid of it), trumps only when nothing else is left, the lowest first."""
    return (1 if card.suit == trump else 0, int(card.rank))


def greedy_key(action: Action, trump: Suit) -> tuple[int, int, int, int]:
    """Sort key of :func:`greedy_action` (smaller is better)."""
    swap = 0 if action.swap else 1  # the face-up trump is worth more than the six
    kind = action.kind
    if kind == ActionKind.COVER_AND_GO_OUT:
        return (0, swap, 0, 0)
    if kind == ActionKind.TAKE:
        return (3, swap, 0, 0)
    if kind == ActionKind.LEAD:
        assert action.lead is not None
        return (1, swap, *lead_key(action.lead, trump))
    assert action.cover is not None and action.lead is not None
    first, second = lead_key(action.lead, trump)
    return (2, swap, card_value(action.cover, trump), first * 100 + second)


def greedy_action(actions: Sequence[Action], trump: Suit) -> Action:
    """Go out if possible; else cover with the cheapest card (keeping trumps) and lead the
    lowest non-trump; take only when nothing covers. Always swaps the trump six."""
    if not actions:
        raise ValueError("greedy_action needs at least one legal action, got none")
    return min(actions, key=lambda a: greedy_key(a, trump))


def table_key(action: ClassicAction, trump: Suit) -> tuple[int, ...]:
    """Sort key of :func:`greedy_table_action` (smaller is better): a cover first, the
    cheapest; else a lead holding a non-trump if there is one, the lowest rank, with as many
    cards as it can and, of those, as few trumps; a take last."""
    if action.kind is ClassicActionKind.TAKE:
        return (2,)
    if action.kind is ClassicActionKind.COVER:
        return (0, sum(card_value(c, trump) for c in action.covers))
    trumps = sum(card.suit == trump for card in action.led)
    only_trumps = 1 if trumps == len(action.led) else 0
    return (1, only_trumps, int(action.led[0].rank), -len(action.led), trumps)


def greedy_table_action(actions: Sequence[ClassicAction], trump: Suit) -> ClassicAction:
    """The classic table's greedy choice: cover whenever possible with the cheapest cards
    (keeping trumps), lead the lowest rank that has a non-trump with every card of it (the
    trump of that rank too, whatever the order of suits; when the defender cannot take them
    all, the non-trumps first; trumps alone only when nothing else is left), take only when
    nothing covers."""
    if not actions:
        raise ValueError("greedy_table_action needs at least one legal action, got none")
    return min(actions, key=lambda a: table_key(a, trump))
