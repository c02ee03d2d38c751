"""[ruling] The swap of the trump six for the face-up card, in every combination."""

from __future__ import annotations

import pytest

from referee.rules import Card, IllegalActionError
from tests.rules.helpers import cards, hand, position, texts


def test_swap_take() -> None:
    game = position(trump="H", mover="6H 7S 8S", other="6C 7C 8C", pile="9D", stock="QS JH")
    assert "swap take" in texts(game.legal_actions())
    game.play("swap take")
    assert game.hands[0] == hand("9D 7S 8S JH")
    assert game.face_up == Card.parse("6H")
    assert game.stock == tuple(cards("QS 6H"))
    assert game.known_cards(0) == hand("9D JH")
    assert game.view(1).opponent_known == hand("9D JH")


def test_swap_lead_can_lead_the_card_just_taken_but_not_the_six() -> None:
    game = position(trump="H", mover="6H 7C 8C", other="6D 7D 8D", stock="QS JH", filler="stock")
    legal = texts(game.legal_actions())
    assert legal == [
        *["lead 7C", "lead 8C", "lead 6H"],
        *["swap lead 7C", "swap lead 8C", "swap lead JH"],
    ]
    assert not game.is_legal("swap lead 6H")
    game.play("swap lead JH")
    assert game.pile == (Card.parse("JH"),)
    assert game.hands[0] == hand("7C 8C QS")
    assert game.face_up == Card.parse("6H")
    assert game.known_cards(0) == ()  # JH, once public in his hand, has been played


def test_swap_cover_and_lead() -> None:
    game = position(trump="H", mover="6H 7C 8C", other="6D 7D 8D", pile="AD", stock="QS JS JH")
    legal = texts(game.legal_actions())
    # Without the swap the six covers AD; after it, JH does.
    assert "cover 6H 7C" in legal and "swap cover JH 7C" in legal and "swap cover JH 8C" in legal
    assert "swap cover 6H 7C" not in legal
    game.play("swap cover JH 8C")
    assert game.pile[-2:] == tuple(cards("JH 8C"))
    assert game.hands[0] == hand("7C QS JS")
    assert game.stock == (Card.parse("6H"),)


def test_swap_when_the_face_up_card_is_the_only_one_left() -> None:
    game = position(trump="H", mover="6H 7C 8C", other="6D 7D 8D", pile="AD", stock="JH")
    assert game.is_legal("swap cover JH 7C")
    game.play("swap cover JH 7C")
    # He swapped, covered and led, then drew the six back as the last card of the stock.
    assert game.hands[0] == hand("8C 6H")
    assert game.stock == () and game.face_up is None
    assert game.known_cards(0) == (Card.parse("6H"),)


def test_no_swap_when_the_face_up_card_is_itself_the_six() -> None:
    game = position(trump="H", mover="7H 7C 8C", other="6D 7D 8D", pile="AD", stock="QS 6H")
    assert not any(a.swap for a in game.legal_actions())
    with pytest.raises(IllegalActionError, match="trump six"):
        game.play("swap take")


def test_no_swap_without_the_six_or_once_the_stock_is_empty() -> None:
    game = position(trump="H", mover="7H 7C 8C", other="6H 7D 8D", pile="AD", stock="QS JH")
    with pytest.raises(IllegalActionError, match="trump six"):
        game.play("swap take")
    game = position(trump="H", mover="6H 7C 8C", other="6D 7D 8D", pile="AD")
    assert not any(a.swap for a in game.legal_actions())
    with pytest.raises(IllegalActionError, match="drawn"):
        game.play("swap take")


def test_after_a_swap_the_six_is_face_up_and_cannot_be_swapped_again() -> None:
    game = position(trump="H", mover="6H 7C 8C", other="6D 7D 8D", pile="AD", stock="QS KS JH")
    game.play("swap take")
    assert not any(a.swap for a in game.legal_actions())  # seat 1 has no six
    game.play("take")
    assert not any(a.swap for a in game.legal_actions())  # seat 0 no longer holds it
