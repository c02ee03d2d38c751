"""Law review of the two-player engine against the law (rules.md), edge case by edge case.

Each test quotes the sentence of rules.md it checks and builds a concrete position: the end of
the stock, the face-up card and the swap of the trump six, the last card, the draw by final
answer, the turn limit, who moves first, what a view shows, and the notation of actions.
"""

from __future__ import annotations

import dataclasses

import pytest

from referee.rules import (
    DEFAULT_TURN_LIMIT,
    Action,
    Card,
    ClassicAction,
    EndReason,
    Game,
    IllegalActionError,
    InvalidActionError,
    shuffled_deck,
)
from referee.series import first_dealer, next_dealer
from tests.rules.helpers import cards, deck, hand, position, texts


def with_turn_limit(game: Game, limit: int) -> Game:
    """``game`` rebuilt (same hidden cards) with another turn limit."""
    seat = game.to_move
    assert seat is not None
    view = dataclasses.replace(game.view(seat), turn_limit=limit, legal_actions=())
    return Game.from_view(view, game.hands[1 - seat], game.stock)


# ------------------------------------------------------------------ setup, first move


@pytest.mark.parametrize("dealer", [0, 1])
def test_the_non_dealer_moves_first_on_an_empty_pile_with_only_leads(dealer: int) -> None:
    # "The non-dealer moves first, on an empty pile." / "Lead — only when the pile is empty"
    game = Game.from_deck(deck("6C 7C 8C", "6D 7D 8D", "9H"), dealer)
    assert game.to_move == 1 - dealer and game.pile == ()
    assert texts(game.legal_actions()) == ["lead 6C", "lead 7C", "lead 8C"]
    with pytest.raises(IllegalActionError, match="pile is empty"):
        game.play("take")


def test_the_face_up_card_is_index_6_of_the_deck_and_the_last_of_a_29_plus_1_stock() -> None:
    # "Index 6 is turned face up: its suit is trump, and it becomes the last card of the stock"
    d = shuffled_deck(41)
    game = Game.from_deck(d, 0)
    assert game.trump is d[6].suit and game.face_up == d[6]
    assert game.stock == (*d[7:], d[6]) and len(game.stock) == 30
    # "Indices 0,2,4 go to the non-dealer, 1,3,5 to the dealer": dealer 0, so seat 1 gets 0,2,4.
    assert set(game.hands[1]) == {d[0], d[2], d[4]} and set(game.hands[0]) == {d[1], d[3], d[5]}


# ------------------------------------------------------------------ a turn


def test_a_lone_covering_card_cannot_go_out_while_the_stock_lasts_so_only_take() -> None:
    # "Cover and go out — only when the stock is empty and the covering card is the last card
    # in hand"; "Cover and lead" needs "any other card from hand": with one card and a stock,
    # only "take" is left (and the swap cannot change that: the swap keeps one card).
    game = position(trump="H", mover="6H", other="6S 7S 8S", pile="AD", stock="QS JH")
    assert set(texts(game.legal_actions())) == {"take", "swap take"}
    for illegal in ["cover 6H", "swap cover JH"]:
        with pytest.raises(IllegalActionError, match="stock is not empty"):
            game.play(illegal)
    assert game.legal_action_count() == 2


def test_take_of_a_trump_king_takes_exactly_three_of_a_longer_pile() -> None:
    # "3 if the top card is a trump other than the ace" — the cards below stay.
    game = position(trump="S", mover="6C 7C 8C", other="6D 7D 8D", pile="9C TC JC QC KS",
                    stock="AD 9S", filler="stock")  # fmt: skip
    before = game.stock
    game.play("take")
    assert game.pile == tuple(cards("9C TC"))
    assert game.hands[0] == hand("6C 7C 8C JC QC KS")
    assert game.stock == before  # he holds 6: nothing drawn


def test_take_of_the_trump_ace_alone_on_the_pile_empties_it_and_the_other_leads() -> None:
    # "the whole pile if the top card is the trump ace" / "If the pile is now empty, the next
    # player leads."
    game = position(trump="S", mover="6C 7C", other="6D 7D 8D", pile="AS",
                    stock="KD QD 9S", filler="stock")  # fmt: skip
    game.play("take")
    assert game.pile == () and Card.parse("AS") in game.hands[0]
    assert len(game.hands[0]) == 3  # took one, drew nothing more than up to three
    assert all(a.kind.name == "LEAD" for a in game.legal_actions())


# ------------------------------------------------------------------ the swap of the trump six


def test_swapping_a_six_taken_from_the_pile_makes_the_six_face_up_and_not_known() -> None:
    # "exchange it for the face-up trump card ... The 6 then lies face up as the stock's last
    # card." A take of one card leaves four in hand: nothing is drawn, the six stays face up.
    game = position(trump="H", mover="6H 7S 8S", other="6C 7C 8C", pile="9D", stock="QS JH",
                    mover_known="6H")  # fmt: skip
    game.play("swap take")
    assert game.hands[0] == hand("7S 8S 9D JH")
    assert game.face_up == Card.parse("6H") and game.stock == tuple(cards("QS 6H"))
    assert game.known_cards(0) == hand("9D JH")
    assert game.view(1).opponent_known == hand("9D JH")
    assert game.view(1).face_up == Card.parse("6H")


def test_the_swapped_six_is_drawn_last_by_whoever_draws_it_and_becomes_public() -> None:
    # "The face-up trump is drawn last." — after a swap the six is that card.
    game = position(trump="H", mover="6H 7C 8C 9S", other="9C 7D", pile="6C",
                    stock="QS KS JH")  # fmt: skip
    game.play("swap cover JH 7C")  # swap, cover 6C with JH, lead 7C; draws QS only
    assert game.hands[0] == hand("8C 9S QS") and game.stock == tuple(cards("KS 6H"))
    game.play("cover 9C 7D")  # seat 1 covers 7C, leads 7D, draws KS and the six (the last)
    assert game.stock == () and game.face_up is None
    assert Card.parse("6H") in game.hands[1]
    assert game.view(0).opponent_known == (Card.parse("6H"),)


def test_the_swap_counts_as_part_of_one_action() -> None:
    # "before the action above and as part of the same action"
    game = position(trump="H", mover="6H 7S 8S", other="6C 7C 8C", pile="9D", stock="QS JH")
    game.play("swap cover JH 7S")
    assert len(game.history) == 1 and texts(game.history) == ["swap cover JH 7S"]
    assert game.to_move == 1


# ------------------------------------------------------------------ drawing


def test_drawing_the_rest_of_a_short_stock_all_at_once_ends_with_the_face_up_card() -> None:
    # "draws from the stock until he holds 3 cards (all at once ...)" / "The face-up trump is
    # drawn last." / "When the stock is empty, nobody draws."
    game = position(trump="H", mover="9D 7C", other="6S 7S 8S", pile="8D", stock="QS JH")
    game.play("cover 9D 7C")  # empty hand, needs 3, only 2 left: draws QS then the face-up JH
    assert game.hands[0] == hand("QS JH") and game.stock == ()
    assert game.known_cards(0) == hand("JH")
    game.play("take")  # seat 1 takes 7C; the stock is empty: nobody draws
    assert game.hands[1] == hand("6S 7S 8S 7C")


# ------------------------------------------------------------------ end of the game


def test_going_out_on_the_last_action_before_the_turn_limit_is_a_win_not_a_limit_draw() -> None:
    # "With the stock empty, a player whose hand is empty after his completed action is out.
    # With two players, the other player then loses" — "A game still running after 1000
    # actions" is a draw: a game that ended with that action is not still running.
    game = with_turn_limit(position(trump="H", mover="9D", other="6S 7S 8S", pile="8D"), 1)
    game.play("cover 9D")
    assert game.over and game.outcome == 0 and game.reason is EndReason.OUT


def test_the_final_answer_draw_also_applies_on_the_last_action_before_the_limit() -> None:
    # "If the player went out with a lead ... and the remaining player holds exactly one card
    # and it covers that lead, the game is a draw"
    game = with_turn_limit(position(trump="H", mover="9D 7C", other="8C", pile="8D"), 1)
    game.play("cover 9D 7C")
    assert game.over and game.outcome is None
    assert game.reason is EndReason.DRAW_BY_FINAL_ANSWER and game.final_cover == Card.parse("8C")


def test_the_turn_limit_draw_comes_after_exactly_that_many_actions() -> None:
    # "A game still running after 1000 actions (configurable) is adjudicated a draw, and the
    # record says why."
    assert DEFAULT_TURN_LIMIT == 1000 and Game.new(seed=1).turn_limit == 1000
    game = with_turn_limit(position(trump="H", mover="9D 6C KS", other="6S 7S 8S",
                                    pile="8D", stock="QS JS AS JH"), 2)  # fmt: skip
    game.play("take")
    assert not game.over
    game.play("take")
    assert game.over and game.outcome is None and game.loser is None
    assert game.reason is EndReason.TURN_LIMIT and game.reason.value == "turn limit"
    assert game.legal_actions() == [] and game.view(0).to_move is None


def test_going_out_by_covering_loses_for_the_other_even_with_a_single_covering_card() -> None:
    # "If the player went out by covering (case 3), there is no final answer: the remaining
    # player loses even holding a higher card." — here a trump that would cover the cover.
    game = position(trump="H", mover="9D", other="TH", pile="8D")
    game.play("cover 9D")
    assert game.outcome == 0 and game.loser == 1 and game.final_cover is None
    assert game.hands[1] == hand("TH")


def test_a_single_remaining_card_that_does_not_cover_the_last_lead_loses() -> None:
    # "holds exactly one card and it covers that lead" — a lower card of the led suit does not.
    game = position(trump="H", mover="9D 7C", other="6C", pile="8D")
    game.play("cover 9D 7C")
    assert game.outcome == 0 and game.reason is EndReason.OUT


# ------------------------------------------------------------------ views


def test_a_view_does_not_change_with_the_stock_order_or_the_opponents_hidden_cards() -> None:
    # "Nothing of the other player's hand or the stock is revealed to either bot at any time
    # except as the rules make it public."
    one = position(trump="H", mover="9D 6C KS", other="6S 7S 8S", pile="8D", stock="QS JS AS JH")
    two = position(trump="H", mover="9D 6C KS", other="QS JS 8S", pile="8D", stock="AS 7S 6S JH")
    assert one.view(0) == two.view(0)
    one.play("take")
    two.play("take")
    assert one.view(0) == two.view(0)
    assert one.view(1).opponent_known == hand("8D") == two.view(1).opponent_known


def test_the_whole_pile_is_in_both_views() -> None:
    # "[ruling] the whole pile (bottom→top) is public information in every player's view"
    game = position(trump="H", mover="9D 6C KS", other="6S 7S 8S", pile="7C QC 8D",
                    stock="QS JS AS JH", filler="stock")  # fmt: skip
    assert game.view(0).pile == game.view(1).pile == tuple(cards("7C QC 8D"))
    assert game.view(1).top == Card.parse("8D")


# ------------------------------------------------------------------ notation


def test_covering_and_leading_the_same_card_is_malformed_and_named() -> None:
    # "cover the top card with a card from hand, then put any other card from hand on top"
    game = position(trump="H", mover="9D 6C KS", other="6S 7S 8S", pile="8D", stock="QS JH")
    for text in ["cover 9D 9D", "swap swap take", "swap", "lead", "take 9D", "cover 9D 6C KS"]:
        with pytest.raises(InvalidActionError) as info:
            game.play(text)
        assert repr(text) in str(info.value)
        with pytest.raises(InvalidActionError):
            game.is_legal(text)
    assert game.history == () and game.to_move == 0


def test_classic_action_text_is_not_a_two_player_action() -> None:
    # "Canonical action text: `lead 7S`, `cover 9H 6C`, `cover 9H`, `take`" — not `9H:6C` pairs
    # and not several led cards.
    game = position(trump="H", mover="9D 9C KS", other="6S 7S 8S", stock="QS JH", filler="stock")
    for text in ["lead 9C 9D", "cover 8D:9D"]:
        with pytest.raises(InvalidActionError, match="malformed"):
            game.play(text)
    with pytest.raises(InvalidActionError):
        Action.parse(ClassicAction.take())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("swap cover AH 6C", "swap cover AH 6C"),
        ("SWAP Cover 10♥ 6♣", "swap cover TH 6C"),
        ("cover 10H", "cover TH"),
        ("lead 7♠", "lead 7S"),
        ("take", "take"),
    ],
)
def test_parsers_accept_10_and_suit_symbols_and_print_the_canonical_form(
    text: str, canonical: str
) -> None:
    # "Parsers should also accept `10H` and the suit symbols ♣♦♥♠, and print the canonical form."
    assert Action.parse(text).text == canonical == str(Action.parse(text))


# ------------------------------------------------------------------ series (dealing)


def test_the_loser_deals_the_next_game_and_a_draw_keeps_the_dealer() -> None:
    # "afterwards the loser deals the next game; after a draw the same dealer deals again"
    for dealer in (0, 1):
        assert next_dealer(dealer, winner=0) == 1
        assert next_dealer(dealer, winner=1) == 0
        assert next_dealer(dealer, winner=None) == dealer
    # "The first dealer is chosen at random (from the series seed)": a pure function of it.
    assert first_dealer(77) == first_dealer(77) in (0, 1)
    assert {first_dealer(seed) for seed in range(40)} == {0, 1}
