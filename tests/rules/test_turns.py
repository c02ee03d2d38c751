"""A turn: lead, cover and lead, cover and go out, take (1 / 3 / all), and the legality gate."""

from __future__ import annotations

import pytest

from referee.rules import Card, Game, IllegalActionError, InvalidActionError
from tests.rules.helpers import cards, deck, position, texts


def test_lead_on_empty_pile_is_the_only_thing_to_do() -> None:
    game = Game.from_deck(deck("6C 7C 8C", "6D 7D 8D", "9H"), dealer=1)
    assert texts(game.legal_actions()) == ["lead 6C", "lead 7C", "lead 8C"]
    for illegal in ["take", "cover 6C 7C", "cover 6C", "lead 6D"]:
        with pytest.raises(IllegalActionError):
            game.play(illegal)
    game.play("lead 7C")
    assert game.pile == (Card.parse("7C"),)
    assert game.to_move == 1


def test_cover_and_lead() -> None:
    game = position(trump="H", mover="9D 6C KS", other="6S 7S 8S", pile="8D", stock="QS JH")
    legal = texts(game.legal_actions())
    assert legal == ["take", "cover 9D 6C", "cover 9D KS"]
    game.play("cover 9D KS")
    assert game.pile[-3:] == tuple(cards("8D 9D KS"))
    assert game.to_move == 1
    # The opponent now answers the new lead KS.
    assert texts(game.legal_actions()) == ["take"]


def test_a_trump_may_cover_even_when_holding_the_suit() -> None:
    game = position(trump="H", mover="9D 6H 7C", other="6S 7S 8S", pile="8D", stock="QS JH")
    assert game.is_legal("cover 6H 9D")
    assert game.is_legal("cover 9D 6H")
    assert not game.is_legal("cover 7C 6H")


def test_only_a_higher_trump_covers_a_trump() -> None:
    game = position(trump="H", mover="AD 7H 6C", other="6S 7S 8S", pile="8H", stock="QS JH")
    assert texts(game.legal_actions()) == ["take"]
    game = position(trump="H", mover="AD 9H 6C", other="6S 7S 8S", pile="8H", stock="QS JH")
    assert texts(game.legal_actions()) == ["take", "cover 9H 6C", "cover 9H AD"]


def test_cover_and_go_out_needs_empty_stock_and_the_last_card() -> None:
    # Stock not empty: no going out, even with a covering card.
    game = position(trump="H", mover="9D 6C 7C", other="6S 7S 8S", pile="8D", stock="QS JH")
    with pytest.raises(IllegalActionError, match="stock is not empty"):
        game.play("cover 9D")
    # Stock empty but two cards: must lead after covering.
    game = position(trump="H", mover="9D 6C", other="6S 7S 8S", pile="8D")
    assert texts(game.legal_actions()) == ["take", "cover 9D 6C"]
    with pytest.raises(IllegalActionError, match="last card"):
        game.play("cover 9D")
    # Stock empty, last card covers: go out and win.
    game = position(trump="H", mover="9D", other="6S 7S 8S", pile="8D")
    assert texts(game.legal_actions()) == ["take", "cover 9D"]
    game.play("cover 9D")
    assert game.over and game.outcome == 0 and game.reason is not None
    assert game.reason.value == "out"


def test_take_one_when_the_top_card_is_not_trump() -> None:
    game = position(trump="H", mover="6S 7S 8S", other="6C 7C 8C", pile="9H 8D", stock="QS JH")
    before = len(game.pile)
    game.play("take")
    assert len(game.pile) == before - 1
    assert Card.parse("8D") in game.hands[0]
    assert game.pile[-1] == Card.parse("9H")


def test_take_three_when_the_top_card_is_a_trump_other_than_the_ace() -> None:
    game = position(
        trump="H", mover="6S 7S 8S", other="6C 7C 8C", pile="9C TC JC KH", stock="AS TH"
    )
    game.play("take")
    assert set(cards("TC JC KH")) <= set(game.hands[0])
    assert game.pile[-1] == Card.parse("9C")


@pytest.mark.parametrize(("pile", "taken"), [("7C 8H", 2), ("8H", 1)])
def test_take_the_whole_pile_when_shorter_than_three(pile: str, taken: int) -> None:
    game = position(
        trump="H", mover="6S 7S 8S", other="6C 9C TC", pile=pile, stock="QS JH", filler="stock"
    )
    assert len(game.pile) == taken
    game.play("take")
    assert game.pile == ()
    assert len(game.hands[0]) == 3 + taken
    # The pile is empty: the next player leads.
    assert texts(game.legal_actions()) == ["lead 6C", "lead 9C", "lead TC"]


def test_take_all_when_the_top_card_is_the_trump_ace() -> None:
    game = position(
        trump="H", mover="6S 7S 8S", other="6C 7C 8C", pile="9C TC JC AH", stock="AS TH"
    )
    size = len(game.pile)
    assert size > 3
    game.play("take")
    assert game.pile == ()
    assert len(game.hands[0]) == 3 + size


def test_after_a_take_the_next_player_answers_the_new_top_even_his_own_card() -> None:
    game = position(trump="H", mover="9D 6C KS", other="6S 7S 8S", pile="8D", stock="QS JS AS JH")
    game.play("cover 9D 6C")  # seat 0 covers 8D with 9D and leads 6C
    game.play("take")  # seat 1 takes 6C: 9D, seat 0's own card, is on top again
    assert game.pile[-1] == Card.parse("9D")
    assert game.to_move == 0
    assert set(texts(game.legal_actions())) == {"take"}  # seat 0 holds nothing above 9D
    game.play("take")  # and may take his own card back
    assert Card.parse("9D") in game.hands[0]


def test_illegal_and_invalid_actions_leave_the_state_unchanged_and_quote_the_input() -> None:
    game = position(trump="H", mover="9D 6C KS", other="6S 7S 8S", pile="8D", stock="QS JH")
    before = (game.hands, game.pile, game.stock, game.history, game.to_move)
    for bad in ["cover 6C 9D", "lead 9D", "cover 9D 9S", "swap take", "cover KS"]:
        with pytest.raises(IllegalActionError) as info:
            game.play(bad)
        assert repr(bad) in str(info.value)
    for malformed in ["cover", "pass", "cover 9D 6C extra", "lead 1X"]:
        with pytest.raises(InvalidActionError) as info2:
            game.play(malformed)
        assert repr(malformed) in str(info2.value)
    assert (game.hands, game.pile, game.stock, game.history, game.to_move) == before


def test_playing_after_the_end_is_illegal() -> None:
    game = position(trump="H", mover="9D", other="6S 7S 8S", pile="8D")
    game.play("cover 9D")
    assert game.legal_actions() == [] and game.to_move is None
    with pytest.raises(IllegalActionError, match="over"):
        game.play("take")


def test_turn_limit_adjudicates_a_draw() -> None:
    import random

    rng = random.Random(3)
    for seed in range(20):
        game = Game.new(seed=seed, dealer=0, turn_limit=12)
        while not game.over:
            game.play_random(rng)
        if game.reason is not None and game.reason.value == "turn limit":
            assert len(game.history) == 12 and game.outcome is None
            return
    pytest.fail("no game reached the turn limit of 12")


@pytest.mark.parametrize("limit", [0, -5, 1.5, "10"])
def test_bad_turn_limit_is_rejected(limit: object) -> None:
    with pytest.raises(ValueError, match="turn_limit"):
        Game.new(seed=1, turn_limit=limit)  # type: ignore[call-overload]
