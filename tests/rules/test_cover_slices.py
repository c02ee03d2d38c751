"""The precomputed runs of "cover x, lead y" actions the lister concatenates (six 6-bit slices of
the hand per covering card), and the lists built from them against a plain statement of the
rules: "take", then for each covering card in card order every other card of the hand led."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import Action, ActionKind, Card
from referee.rules.game import _COVER_SLICES
from tests.rules.helpers import position, texts

RANKS = "6789TJQKA"


def plain_covers(x: Card, y: Card, trump: str) -> bool:
    """rules.md: X covers Y (higher of Y's suit, or any trump on a non-trump)."""
    xs, ys = str(x), str(y)
    if xs[1] == ys[1]:
        return RANKS.index(xs[0]) > RANKS.index(ys[0])
    return xs[1] == trump


def test_every_run_holds_the_covers_of_its_slice_cards_in_card_order_without_x() -> None:
    assert len(_COVER_SLICES) == 36
    for x in range(36):
        assert len(_COVER_SLICES[x]) == 6
        for j, by_bits in enumerate(_COVER_SLICES[x]):
            assert len(by_bits) == 64
            for bits, run in enumerate(by_bits):
                expected = tuple(
                    Action(
                        ActionKind.COVER_AND_LEAD,
                        cover=Card.from_index(x),
                        lead=Card.from_index(6 * j + i),
                    )
                    for i in range(6)
                    if bits >> i & 1 and 6 * j + i != x
                )
                # Interned: the very objects the rest of the engine hands out.
                assert all(a is e for a, e in zip(run, expected, strict=True)), (x, j, bits)


def expected_texts(hand: list[Card], top: Card, trump: str, stock_empty: bool) -> list[str]:
    out = ["take"]
    for x in sorted(hand):
        if not plain_covers(x, top, trump):
            continue
        if len(hand) >= 2:
            out += [f"cover {x} {y}" for y in sorted(hand) if y != x]
        elif stock_empty:
            out.append(f"cover {x}")
    return out


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 16),
    trump=st.sampled_from("CDHS"),
    stock_empty=st.booleans(),
)
def test_lists_on_a_pile_match_the_plain_rules(
    seed: int, size: int, trump: str, stock_empty: bool
) -> None:
    deck = list(Card.all())
    random.Random(seed).shuffle(deck)
    six = Card.parse("6" + trump)
    if not stock_empty and six in deck[:size]:
        # The trump six with a stock would add the swap half (listed by another path).
        deck.remove(six)
        deck.append(six)
    hand, top, other = deck[:size], deck[size], deck[size + 1 : size + 4]
    stock = "" if stock_empty else " ".join(map(str, deck[size + 4 : size + 8]))
    game = position(
        trump=trump,
        mover=" ".join(map(str, hand)),
        other=" ".join(map(str, other)),
        pile=str(top),
        stock=stock,
    )
    assert texts(game.legal_actions()) == expected_texts(hand, top, trump, stock_empty)


def test_a_long_list_over_all_six_slices() -> None:
    # Trump spades: every spade covers the heart top, and so does the higher heart; the hand
    # has cards in every 6-bit slice of the card indices, including the top ones (AS = 35).
    hand = "6C QC 8D AD 9H KH 7S TS AS"
    game = position(trump="S", mover=hand, other="6D 7D 8C", pile="JH", stock="")
    listed = texts(game.legal_actions())
    cards = sorted(Card.parse(t) for t in hand.split())
    covering = ["KH", "7S", "TS", "AS"]
    assert listed == ["take"] + [
        f"cover {x} {y}" for x in covering for y in map(str, cards) if y != x
    ]
    assert len(listed) == 1 + 4 * 8
    # Every listed action plays through the trusted path and leaves the state consistent.
    for action in game.legal_actions():
        copy = game.copy()
        copy.legal_actions()
        assert copy.play(action) is action
        assert action.cover not in copy.hands[0] and action.lead not in copy.hands[0]


def test_a_hand_of_only_covering_cards() -> None:
    game = position(trump="H", mover="9H QH", other="6D 7D 8C", pile="7H", stock="")
    assert texts(game.legal_actions()) == ["take", "cover 9H QH", "cover QH 9H"]
