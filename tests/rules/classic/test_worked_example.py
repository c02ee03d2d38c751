"""The worked example of rules-classic.md, played from an exact deck."""

from __future__ import annotations

import pytest

from referee.rules import Card, Game, IllegalActionError, Suit
from tests.rules.classic.helpers import cards, deck, hand, texts

# Three players, seat 2 deals, hearts trump (the face-up AH), the stock starts 7D KS 9S TC.
DECK = deck(2, ["8C 8S JD", "9C 6H QD", "6C 7C TS"], "AH", stock="7D KS 9S TC")


def test_seat_0_leads_two_eights_to_seat_1() -> None:
    game = Game.from_deck(DECK, dealer=2, players=3, ruleset="classic")
    assert game.trump is Suit.HEARTS and len(game.stock) == 27
    assert (game.to_move, game.leader, game.defender) == (0, 0, 1)
    assert "lead 8C 8S" in texts(game.legal_actions())
    game.play("lead 8C 8S")
    assert game.led == tuple(cards("8C 8S"))
    assert game.to_move == 1
    assert game.hands[1] == hand("9C 6H QD")
    legal = texts(game.legal_actions())
    assert "cover 8C:9C 8S:6H" in legal  # 9C beats 8C, a trump beats 8S
    assert not any(a.startswith("cover 8C:QD") for a in legal)  # QD does not beat 8C
    assert legal == ["take", "cover 8C:9C 8S:6H"]
    with pytest.raises(IllegalActionError, match="QD does not cover 8C"):
        game.play("cover 8C:QD 8S:6H")


def test_the_cover_discards_the_trick_and_both_draw_alternately_leader_first() -> None:
    game = Game.from_deck(DECK, dealer=2, players=3, ruleset="classic")
    game.play("lead 8C 8S")
    game.play("cover 8C:9C 8S:6H")
    assert game.discard == tuple(cards("8C 9C 8S 6H"))
    assert game.led == ()
    # Stock in draw order 7D KS 9S TC: seat 0 draws 7D, seat 1 KS, seat 0 9S, seat 1 TC.
    assert game.hands[0] == hand("JD 7D 9S")
    assert game.hands[1] == hand("QD KS TC")
    assert game.hands[2] == hand("6C 7C TS")
    assert len(game.stock) == 23
    # Seat 1 now leads to seat 2.
    assert (game.to_move, game.leader, game.defender) == (1, 1, 2)


def test_had_seat_1_taken_seat_2_would_lead_to_seat_0() -> None:
    game = Game.from_deck(DECK, dealer=2, players=3, ruleset="classic")
    game.play("lead 8C 8S")
    game.play("take")
    assert game.hands[1] == hand("9C 6H QD 8C 8S")
    assert game.known_cards(1) == hand("8C 8S")  # everyone saw him take them
    assert game.hands[0] == hand("JD 7D KS")  # seat 0 drew up to 3, nobody else drew
    assert game.discard == ()
    assert (game.to_move, game.leader, game.defender) == (2, 2, 0)
    assert Card.parse("9S") == game.stock[0]
