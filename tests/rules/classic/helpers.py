"""Building exact classic-table positions for rule tests."""

from __future__ import annotations

from collections.abc import Sequence

from referee.rules import Card, ClassicGame, ClassicView, Suit


def cards(text: str) -> list[Card]:
    """``"7C QC 8D"`` → cards."""
    return [Card.parse(t) for t in text.split()]


def hand(text: str) -> tuple[Card, ...]:
    """Cards in hand order (card index), as ``ClassicGame.hands`` and views give them."""
    return tuple(sorted(cards(text)))


def texts(actions: Sequence[object]) -> list[str]:
    return [str(a) for a in actions]


def deck(dealer: int, hands: Sequence[str], face_up: str, stock: str = "") -> list[str]:
    """A deck dealing ``hands[s]`` (3 cards each) to seat ``s`` with ``dealer`` dealing, turning
    ``face_up`` up; ``stock`` starts the stock (draw order), the other cards follow in index
    order."""
    n = len(hands)
    per_seat = [cards(h) for h in hands]
    head = [per_seat[(dealer + 1 + i) % n][i // n] for i in range(3 * n)]
    head += [Card.parse(face_up), *cards(stock)]
    rest = [c for c in Card.all() if c not in head]
    return [str(c) for c in head + rest]


def position(
    *,
    trump: str,
    hands: Sequence[str],
    leader: int,
    defender: int | None = None,
    led: str = "",
    stock: str = "",
    out: Sequence[int] = (),
    dealer: int = 0,
    known: Sequence[str] | None = None,
    turn_limit: int = 1000,
) -> ClassicGame:
    """A game with these hands, ``stock`` in draw order (its last card is the face-up card, or
    empty), ``led`` on the table (then the defender is to move); every card not named is in the
    discard. ``defender`` defaults to the next seat after the leader that is not out."""
    n = len(hands)
    if defender is None:
        defender = next((leader + k) % n for k in range(1, n + 1) if (leader + k) % n not in out)
    named = [c for h in hands for c in cards(h)] + cards(led) + cards(stock)
    discard = tuple(c for c in Card.all() if c not in named)
    stock_cards = cards(stock)
    view = ClassicView(
        ruleset="classic",
        seat=leader,
        players=n,
        dealer=dealer,
        hand=hand(hands[leader]),
        hand_sizes=tuple(len(cards(h)) for h in hands),
        out=tuple(s in out for s in range(n)),
        known=tuple(hand(k) for k in (known or [""] * n)),
        leader=leader,
        defender=defender,
        led=hand(led),
        discard=discard,
        trump=Suit.parse(trump),
        face_up=stock_cards[-1] if stock_cards else None,
        stock_count=len(stock_cards),
        to_move=defender if led else leader,
        legal_actions=(),
        history=(),
        movers=(),
        turn_limit=turn_limit,
        over=False,
        loser=None,
        reason=None,
    )
    return ClassicGame.from_view(view, [cards(h) for h in hands], stock_cards)
