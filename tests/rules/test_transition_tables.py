"""The precomputed effects the transition applies: every action's pile cards and keep mask,
and the batched draw (one to three cards at once, the face-up card last and public)."""

from __future__ import annotations

from referee.rules import Action, Card
from referee.rules.actions import BY_CODE, ActionKind, canonical_codes
from referee.rules.cards import FULL_MASK
from tests.rules.helpers import cards, position


def test_every_action_carries_its_pile_cards_and_keep_mask() -> None:
    codes = canonical_codes()
    assert len(codes) == 2666
    for code in codes:
        action = BY_CODE[code]
        assert action is not None
        played = [c.index for c in (action.cover, action.lead) if c is not None]
        assert list(action._push) == played, action
        expected_keep = FULL_MASK
        for index in played:
            expected_keep &= ~(1 << index)
        assert action._keep == expected_keep, action
        assert (action.kind == ActionKind.TAKE) == (not action._push), action


def test_emptying_the_hand_draws_three_at_once_in_stock_order() -> None:
    game = position(trump="H", mover="JD 7C", other="6S 7S 8S", pile="TD", stock="QS JH 6C 9S AC")
    game.play("cover JD 7C")
    assert game.hands[0] == tuple(sorted(cards("QS JH 6C")))
    assert game.stock == tuple(cards("9S AC"))
    assert game.known_cards(0) == ()
    assert [str(c) for c in game.pile[-2:]] == ["JD", "7C"]


def test_a_short_stock_is_drawn_to_the_end_and_the_face_up_card_becomes_public() -> None:
    game = position(trump="H", mover="JD 7C", other="6S 7S 8S", pile="TD", stock="QS AC")
    game.play(Action.parse("cover JD 7C"))
    assert game.hands[0] == tuple(sorted(cards("QS AC")))
    assert game.stock == ()
    assert game.face_up is None
    assert game.known_cards(0) == (Card.parse("AC"),)


def test_known_cards_leave_with_the_played_cards_and_stay_otherwise() -> None:
    # The mover took TD and 8D earlier (public); covering with JD and leading 8D drops 8D
    # from what is known, the other known card stays known.
    game = position(
        trump="H",
        mover="JD 8D 9C",
        other="6S 7S 8S",
        pile="TD",
        stock="QS KS AC",
        mover_known="8D 9C",
    )
    game.play("cover JD 8D")
    assert game.known_cards(0) == (Card.parse("9C"),)
    assert game.hands[0] == tuple(sorted(cards("9C QS KS")))
