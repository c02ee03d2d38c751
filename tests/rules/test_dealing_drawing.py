"""Setup and drawing: deal order for both dealers, the face-up trump, who draws and how much."""

from __future__ import annotations

import pytest

from referee.rules import Card, Game, InvalidDeckError, Suit, shuffled_deck
from tests.rules.helpers import cards, deck, hand, position


@pytest.mark.parametrize("dealer", [0, 1])
def test_deal_order_alternates_starting_with_the_non_dealer(dealer: int) -> None:
    d = deck("6C 7C 8C", "6D 7D 8D", "9H", stock="KS QS")
    game = Game.from_deck(d, dealer)
    non_dealer = 1 - dealer
    assert game.hands[non_dealer] == tuple(cards("6C 7C 8C"))
    assert game.hands[dealer] == tuple(cards("6D 7D 8D"))
    assert game.trump is Suit.HEARTS
    assert game.face_up == Card.parse("9H")
    assert game.stock[:2] == tuple(cards("KS QS"))
    assert game.stock[-1] == Card.parse("9H")
    assert len(game.stock) == 30
    assert game.to_move == non_dealer
    assert game.pile == ()
    assert game.deck == tuple(Card.parse(c) for c in d)


def test_deal_takes_exact_deck_indices() -> None:
    d = shuffled_deck(7)
    game = Game.from_deck(d, dealer=1)
    assert set(game.hands[0]) == {d[0], d[2], d[4]}
    assert set(game.hands[1]) == {d[1], d[3], d[5]}
    assert game.stock == (*d[7:], d[6])
    assert game.trump is d[6].suit


def test_seeded_shuffle_is_reproducible() -> None:
    assert shuffled_deck(1234) == shuffled_deck(1234)
    assert shuffled_deck(1234) != shuffled_deck(1235)
    assert sorted(shuffled_deck("x")) == sorted(Card.all())
    assert Game.new(seed=5, dealer=1).deck == Game.new(seed=5, dealer=0).deck


@pytest.mark.parametrize(
    "bad",
    [
        [],
        ["6C"] * 36,
        [str(c) for c in Card.all()][:35],
        [*[str(c) for c in Card.all()], "6C"],
        "6C 7C",
    ],
)
def test_invalid_decks_are_rejected(bad: object) -> None:
    with pytest.raises(InvalidDeckError):
        Game.from_deck(bad, 0)  # type: ignore[call-overload]


@pytest.mark.parametrize("dealer", [-1, 2, "0", None, True])
def test_invalid_dealer_is_rejected(dealer: object) -> None:
    with pytest.raises(InvalidDeckError, match="dealer"):
        Game.from_deck(shuffled_deck(1), dealer)  # type: ignore[call-overload]


def test_only_the_player_who_acted_draws_and_only_up_to_three() -> None:
    d = deck("6C 7C 8C", "6D 7D 8H", "9H", stock="KS QS JS TS")
    game = Game.from_deck(d, dealer=1)  # seat 0 moves first
    game.play("lead 6C")
    assert game.hands[0] == hand("7C 8C KS")  # drew exactly one
    assert game.hands[1] == hand("6D 7D 8H")  # the other player did not draw
    assert len(game.stock) == 29
    game.play("take")  # seat 1 takes 6C: four cards, none drawn, none discarded
    assert game.hands[1] == hand("6C 6D 7D 8H")
    assert len(game.stock) == 29
    game.play("lead 7C")  # seat 0 again
    assert game.hands[0] == hand("8C QS KS")
    game.play("cover 8H 6C")  # seat 1 plays two of four: holds two, draws one
    assert game.hands[1] == hand("6D 7D JS")
    assert game.hands[0] == hand("8C QS KS")
    assert len(game.stock) == 27


def test_hands_over_three_are_never_reduced() -> None:
    game = position(trump="H", mover="7S 8S 9S", other="6C KC QC", pile="AH 6D", stock="JD TH")
    game.play("take")  # 6D is not trump: one card, and four in hand stay four
    assert game.hands[0] == hand("6D 7S 8S 9S")
    assert len(game.stock) == 2
    game.play("take")  # the trump ace: seat 1 takes the whole pile
    assert game.pile == ()
    game.play("lead 7S")  # three cards left: nothing to draw
    assert game.hands[0] == hand("6D 8S 9S")
    assert len(game.stock) == 2


def test_face_up_trump_is_drawn_last_and_becomes_public() -> None:
    game = position(trump="H", mover="7S 6C 8C", other="6D 7D 8D", pile="6S", stock="KS 9H")
    assert game.face_up == Card.parse("9H")
    game.play("cover 7S 6C")
    assert game.hands[0] == hand("8C 9H KS")
    assert game.stock == ()
    assert game.face_up is None
    assert game.known_cards(0) == (Card.parse("9H"),)
    assert game.view(1).opponent_known == (Card.parse("9H"),)


def test_face_up_stays_while_other_cards_remain() -> None:
    game = position(trump="H", mover="7S 6C 8C", other="6D 7D 8D", pile="6S", stock="KS QS 9H")
    game.play("cover 7S 6C")
    assert game.hands[0] == hand("8C QS KS")
    assert game.stock == (Card.parse("9H"),)
    assert game.face_up == Card.parse("9H")
    assert game.known_cards(0) == ()


def test_drawing_stops_when_the_stock_runs_out() -> None:
    game = position(trump="H", mover="7S 6C", other="6D 7D 8D", pile="6S", stock="9H")
    game.play("cover 7S 6C")
    assert game.hands[0] == (Card.parse("9H"),)
    assert game.stock == ()
