"""Law review of the classic table against its law (rules-classic.md), edge case by edge case.

Each test quotes the sentence of rules-classic.md it checks and builds a concrete position: seat
order with 3 and 4 players, seats going out and being skipped, the end of the stock and the
face-up card, how a game of 3-4 players ends, the turn limit, views and the notation.
"""

from __future__ import annotations

import pytest

from referee.rules import (
    CLASSIC_TURN_LIMIT,
    Card,
    ClassicEndReason,
    ClassicGame,
    Game,
    IllegalActionError,
    InvalidActionError,
    shuffled_deck,
)
from referee.table import next_table_dealer
from tests.rules.classic.helpers import cards, deck, hand, position, texts

# ------------------------------------------------------------------ table and deal


def test_the_dealer_in_the_last_seat_deals_from_seat_0_which_leads_to_seat_1() -> None:
    # "deck card i (i < 3n) goes to seat (dealer + 1 + i) mod n" / "seat 0 follows seat n-1" /
    # "The seat after the dealer leads first."
    d = shuffled_deck(12)
    game = ClassicGame.from_deck(d, 3, players=4)
    assert [set(h) for h in game.hands] == [{d[s], d[s + 4], d[s + 8]} for s in range(4)]
    assert game.face_up == d[12] and game.stock == (*d[13:], d[12])
    assert (game.leader, game.defender, game.to_move) == (0, 1, 0)


def test_no_trump_six_swap_at_the_classic_table() -> None:
    # "No trump-six swap in this ruleset."
    game = ClassicGame.from_deck(deck(2, ["6H 7C 8C", "6D 7D 8D", "6S 7S 8S"], "JH"), 2,
                                 players=3)  # fmt: skip
    assert not any("swap" in a.text for a in game.legal_actions())
    with pytest.raises(InvalidActionError, match="'swap lead 7C'"):
        game.play("swap lead 7C")


# ------------------------------------------------------------------ a trick


def test_a_multi_card_lead_is_bounded_by_the_defenders_hand_not_the_next_seats() -> None:
    # "[ruling] He may lead at most as many cards as the defender holds." The defender is the
    # next seat that still plays: seat 1 is out, so seat 2 (two cards) defends.
    game = position(trump="H", hands=["7C 7D 7S 9C", "", "6C QD", "KS KC KD KH"], leader=0,
                    out=[1])  # fmt: skip
    assert game.defender == 2
    assert "lead 7C 7D" in texts(game.legal_actions())
    assert "lead 7C 7D 7S" not in texts(game.legal_actions())
    with pytest.raises(IllegalActionError, match="holds only 2"):
        game.play("lead 7C 7D 7S")


def test_after_a_take_the_next_leader_skips_the_taker_and_seats_that_are_out() -> None:
    # "The next trick is led by the next seat clockwise after the taker that still plays"
    game = position(trump="H", hands=["7C 9D", "8D", "", "AS KS"], leader=0, out=[2])
    game.play("lead 7C")
    game.play("take")
    assert (game.leader, game.defender, game.to_move) == (3, 0, 3)


def test_after_a_take_of_a_last_lead_the_leader_is_out_and_skipped() -> None:
    # "When the stock is empty, a player who holds no cards after a trick (and its drawing) is
    # out" — the next leader after the taker (seat 2), then seat 0 is out: seat 1 defends.
    game = position(trump="H", hands=["7C", "8D 9D", "AS KS"], leader=0)
    game.play("lead 7C")
    game.play("take")
    assert game.out == (True, False, False) and not game.over
    assert (game.leader, game.defender) == (2, 1)


def test_a_defender_out_by_covering_passes_the_lead_to_the_next_seat_that_plays() -> None:
    # "The defender leads the next trick." / "If the seat that should lead is out, the next seat
    # clockwise that still plays leads."
    game = position(trump="H", hands=["7C 9D", "8C", "", "AS KS"], leader=0, out=[2])
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.out == (False, True, True, False)
    assert (game.leader, game.defender) == (3, 0)


def test_the_face_up_card_drawn_by_the_defender_is_last_and_public() -> None:
    # "draw ... one card at a time, alternately, the leader first" / "The face-up trump is drawn
    # last, by whoever draws when it is the only card left."
    game = position(trump="H", hands=["7C 9D", "8C 9S", "AS KS QS"], leader=0, stock="6S AH")
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.hands[0] == hand("9D 6S") and game.hands[1] == hand("9S AH")
    assert game.known_cards(1) == hand("AH") and game.view(2).known[1] == hand("AH")
    assert game.stock == () and game.face_up is None and game.view(2).face_up is None


def test_a_defender_left_without_cards_when_the_stock_runs_out_is_out() -> None:
    # The leader draws first; the stock ends before the defender's turn to draw: he holds
    # nothing once the stock is empty, so he is out and skipped.
    game = position(trump="H", hands=["7C 9D", "8C", "AS KS QS"], leader=0, stock="AH")
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.hands[0] == hand("9D AH") and game.hands[1] == ()
    assert game.out == (False, True, False)
    assert (game.leader, game.defender) == (2, 0)


def test_drawing_after_a_cover_stops_when_both_hold_three() -> None:
    # "until both hold at least 3 or the stock is empty"
    game = position(trump="H", hands=["7C 9D", "8C 9S", "AS"], leader=0,
                    stock="6S 7S 8S 6D 7D AH")  # fmt: skip
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.hands[0] == hand("9D 6S 8S") and game.hands[1] == hand("9S 7S 6D")
    assert game.stock == tuple(cards("7D AH"))


# ------------------------------------------------------------------ end and result


def test_four_players_all_out_on_the_last_trick_is_a_draw_for_everyone() -> None:
    # "[ruling] Nobody holds cards (the last lead was covered with the defender's last cards):
    # the game is a draw."
    game = position(trump="H", hands=["", "", "7C", "8C"], leader=2, out=[0, 1])
    game.play("lead 7C")
    assert not game.over
    game.play("cover 7C:8C")
    assert game.over and game.loser is None and game.reason is ClassicEndReason.ALL_OUT
    assert game.pairwise_results() == ()


def test_four_players_the_last_holder_loses_to_all_three() -> None:
    # "Exactly one player holds cards: he loses; every other player wins."
    game = position(trump="H", hands=["", "7C", "8C 9C", ""], leader=1, out=[0, 3])
    game.play("lead 7C")
    game.play("cover 7C:9C")
    assert game.over and game.loser == 2 and game.reason is ClassicEndReason.LAST_HOLDER
    assert set(game.pairwise_results()) == {(0, 2), (1, 2), (3, 2)}


def test_a_game_ending_trick_at_the_turn_limit_is_a_loss_not_a_limit_draw() -> None:
    # "The game ends when at most one player still holds cards and the stock is empty." A game
    # that ends on the last allowed action is no longer "still running after 1000 actions".
    assert CLASSIC_TURN_LIMIT == 1000
    game = position(trump="H", hands=["", "7C", "8C 6D"], leader=1, out=[0], turn_limit=2)
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.loser == 2 and game.reason is ClassicEndReason.LAST_HOLDER


def test_turn_limit_with_four_players_out_seats_win_the_others_draw() -> None:
    # "Players already out count as winners against those still holding cards; those still
    # holding cards draw with each other."
    game = position(trump="H", hands=["7C", "8C 9C", "", "AS"], leader=0, out=[2], turn_limit=2)
    game.play("lead 7C")
    game.play("cover 7C:9C")  # seat 0 is out after the trick; the limit ends the game
    assert game.over and game.reason is ClassicEndReason.TURN_LIMIT and game.loser is None
    assert game.out == (True, False, True, False)
    assert set(game.pairwise_results()) == {(0, 1), (0, 3), (2, 1), (2, 3)}


def test_the_loser_deals_next_and_a_game_without_loser_keeps_the_dealer() -> None:
    # "[ruling] ... afterwards the loser deals; after a draw the same dealer deals again."
    class Record:
        def __init__(self, loser: int | None) -> None:
            self.loser = loser

    assert next_table_dealer(0, Record(2)) == 2  # type: ignore[arg-type]
    assert next_table_dealer(1, Record(None)) == 1  # type: ignore[arg-type]


# ------------------------------------------------------------------ views


def test_a_view_hides_the_other_hands_and_the_stock_order() -> None:
    # "Never another player's unseen cards or the stock order."
    # The same public cards; seats 1 and 2 exchange hidden cards, the stock's middle is permuted
    # (seat 0 draws 6S and JS after the take in both games).
    one = position(trump="H", hands=["7C 7S 9D", "6D 9S 8C", "KC QC"], leader=0,
                   stock="6S JS QS KD AH")  # fmt: skip
    two = position(trump="H", hands=["7C 7S 9D", "6D QC 8C", "KC 9S"], leader=0,
                   stock="6S JS KD QS AH")  # fmt: skip
    assert one.view(0) == two.view(0)
    for game in (one, two):
        game.play("lead 7C 7S")
    assert one.view(0) == two.view(0)
    for game in (one, two):
        game.play("take")
    assert one.view(0) == two.view(0)
    assert one.view(0).known[1] == hand("7C 7S") == two.view(2).known[1]


def test_a_view_shows_who_deals_leads_defends_and_moves_and_the_legal_actions_to_the_mover() -> (
    None
):
    # "the dealer, the leader, the defender and who is to move; the history of actions; the
    # legal actions when it is his move"
    game = position(trump="H", hands=["7C 9D", "8C", "AS KS", "QD"], leader=0, dealer=3,
                    stock="6S AH")  # fmt: skip
    game.play("lead 7C")
    for seat in range(4):
        view = game.view(seat)
        assert (view.dealer, view.leader, view.defender, view.to_move) == (3, 0, 1, 1)
        assert texts(view.history) == ["lead 7C"] and view.movers == (0,)
        assert view.led == (Card.parse("7C"),)
        assert bool(view.legal_actions) is (seat == 1)
        assert view.hand_sizes == (1, 1, 2, 1) and view.stock_count == 2
        assert view.face_up == Card.parse("AH")


# ------------------------------------------------------------------ notation


@pytest.mark.parametrize(
    "text",
    ["lead 7C 8C", "cover 7C:9C 7C:6H", "cover 7C-9C", "cover 7C:9C:8C", "lead", "take 7C",
     "lead 7C 7D 7H 7S 7C", "cover 7C:7C", "cover 7C:9C 7S:9C", ""],
)  # fmt: skip
def test_the_gate_refuses_malformed_text_with_a_typed_error_naming_it(text: str) -> None:
    # "`lead 7S` or `lead 7C 7S` — the led cards, one rank" / "`cover 7C:9C 7S:6H` — each led
    # card, a colon, the card put on it"
    game = position(trump="H", hands=["7C 7S", "9C 6H 8C"], leader=0, led="", stock="6S AH")
    before = (game.hands, game.led, game.history, game.to_move)
    with pytest.raises(InvalidActionError) as info:
        game.play(text)
    assert repr(text) in str(info.value)
    assert (game.hands, game.led, game.history, game.to_move) == before


def test_canonical_text_lists_led_cards_and_pairs_in_suit_order() -> None:
    # "the led cards, one rank, in suit order C D H S" / "pairs in the order of the led cards"
    game = position(trump="D", hands=["8S 8C 8H", "9C TH 9S QD"], leader=0, stock="6S AD")
    assert game.play("lead 8♠ 8H 8c").text == "lead 8C 8H 8S"
    assert game.play("cover 8s:9s 8c:9c 8h:10♥").text == "cover 8C:9C 8H:TH 8S:9S"
    assert texts(game.history) == ["lead 8C 8H 8S", "cover 8C:9C 8H:TH 8S:9S"]
    assert game.discard[-6:] == tuple(cards("8C 9C 8H TH 8S 9S"))


def test_default_and_classic_factories_agree_on_the_deal() -> None:
    # Both entry points deal the same classic game from the same deck.
    d = shuffled_deck(5)
    a = Game.from_deck(d, 1, players=3, ruleset="classic")
    b = ClassicGame.from_deck(d, 1, players=3)
    assert a.hands == b.hands and a.stock == b.stock and (a.leader, a.defender) == (2, 0)
