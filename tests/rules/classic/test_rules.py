"""The classic table rule by rule: deal, lead, cover, take, drawing, out, the end, the limit."""

from __future__ import annotations

import pytest

from referee.rules import (
    Card,
    ClassicEndReason,
    ClassicGame,
    EndReason,
    Game,
    IllegalActionError,
    InvalidDeckError,
    Suit,
    shuffled_deck,
)
from tests.rules.classic.helpers import cards, deck, hand, position, texts

# ------------------------------------------------------------------ table and deal


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_deal_three_rounds_clockwise_from_the_dealers_left(players: int, dealer: int) -> None:
    if dealer >= players:
        return
    d = shuffled_deck(players * 10 + dealer)
    game = Game.from_deck(d, dealer, players=players, ruleset="classic")
    for seat in range(players):
        mine = {d[i] for i in range(3 * players) if (dealer + 1 + i) % players == seat}
        assert set(game.hands[seat]) == mine and len(mine) == 3
    assert game.face_up == d[3 * players] and game.trump is d[3 * players].suit
    assert game.stock == (*d[3 * players + 1 :], d[3 * players])
    first = (dealer + 1) % players
    assert (game.to_move, game.leader, game.defender) == (first, first, (first + 1) % players)
    assert game.dealer == dealer and game.players == players and game.deck == d


def test_seeded_classic_game_uses_the_same_shuffle_as_the_default_game() -> None:
    game = Game.new(seed=99, dealer=1, players=4, ruleset="classic")
    assert isinstance(game, ClassicGame) and game.ruleset == "classic"
    assert game.deck == shuffled_deck(99)
    default = Game.new(seed=99, dealer=1)
    assert isinstance(default, Game) and default.deck == shuffled_deck(99)


def test_the_explicit_deck_helper_deals_what_it_says() -> None:
    game = Game.from_deck(deck(3, ["6C 7C 8C", "6D 7D 8D", "6H 7H 8H", "6S 7S 8S"], "AD"),
                          dealer=3, players=4, ruleset="classic")  # fmt: skip
    assert game.hands == (hand("6C 7C 8C"), hand("6D 7D 8D"), hand("6H 7H 8H"), hand("6S 7S 8S"))
    assert game.trump is Suit.DIAMONDS and game.stock[-1] == Card.parse("AD")
    assert len(game.stock) == 36 - 12


# ------------------------------------------------------------------ lead


def test_lead_one_card_or_several_of_one_rank_at_most_the_defenders_count() -> None:
    game = position(trump="H", hands=["7C 7S 7D 9C", "6C QD"], leader=0, stock="8H 9H AH")
    assert texts(game.legal_actions()) == [
        "lead 7C", "lead 7D", "lead 7S", "lead 7C 7D", "lead 7C 7S", "lead 7D 7S", "lead 9C",
    ]  # fmt: skip
    with pytest.raises(IllegalActionError, match="defender, seat 1, holds only 2"):
        game.play("lead 7C 7D 7S")
    with pytest.raises(IllegalActionError, match="not in your hand: 7H"):
        game.play("lead 7H 7S")
    assert game.play("lead 7S 7C").text == "lead 7C 7S"
    assert game.led == tuple(cards("7C 7S")) and game.hands[0] == hand("7D 9C")
    assert game.to_move == 1


# ------------------------------------------------------------------ cover


def test_every_led_card_must_be_covered_by_distinct_covering_cards() -> None:
    game = position(trump="H", hands=["KC", "8C 9C 6H 9S"], leader=0, led="7C 7S", stock="6D AD")
    assert texts(game.legal_actions()) == [
        "take",
        "cover 7C:8C 7S:6H",
        "cover 7C:8C 7S:9S",
        "cover 7C:9C 7S:6H",
        "cover 7C:9C 7S:9S",
        "cover 7C:6H 7S:9S",
    ]
    with pytest.raises(IllegalActionError, match="one card on each led card: 7C 7S"):
        game.play("cover 7C:8C")  # covering only some is not allowed
    with pytest.raises(IllegalActionError, match="8C does not cover 7S"):
        game.play("cover 7C:9C 7S:8C")


def test_only_a_higher_trump_covers_a_trump_and_take_is_always_allowed() -> None:
    game = position(trump="H", hands=["KC", "AC 7H 9H"], leader=0, led="8H", stock="6D AD")
    assert texts(game.legal_actions()) == ["take", "cover 8H:9H"]
    with pytest.raises(IllegalActionError, match="AC does not cover 8H"):
        game.play("cover 8H:AC")


def test_a_cover_discards_the_trick_and_the_defender_leads_next() -> None:
    game = position(trump="H", hands=["7D 8S", "8C 9C", "AS"], leader=0, led="7C", stock="6D AD")
    game.play("cover 7C:8C")
    assert game.discard[-2:] == tuple(cards("7C 8C"))
    assert (game.leader, game.defender) == (1, 2)


def test_drawing_after_a_cover_alternates_leader_first_and_skips_a_full_hand() -> None:
    # The leader keeps 4 cards after leading: only the defender draws, three cards in a row.
    game = position(trump="H", hands=["7C 8D 9D TD JD", "8C", "AS KS QS"], leader=0, led="",
                    stock="6S 7S 8S 9S AH")  # fmt: skip
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.hands[0] == hand("8D 9D TD JD")
    assert game.hands[1] == hand("6S 7S 8S")
    assert game.stock == tuple(cards("9S AH"))


def test_drawing_stops_when_the_stock_runs_out_and_the_face_up_card_comes_last() -> None:
    game = position(trump="H", hands=["7C", "8C 6D", "AS"], leader=0, stock="6S 7S AH")
    game.play("lead 7C")
    game.play("cover 7C:8C")
    # Leader 6S, defender 7S, leader AH (the face-up card: public), stock empty.
    assert game.hands[0] == hand("6S AH") and game.hands[1] == hand("6D 7S")
    assert game.stock == () and game.face_up is None
    assert game.known_cards(0) == hand("AH") and game.known_cards(1) == ()


# ------------------------------------------------------------------ take


def test_a_take_picks_up_every_led_card_only_the_leader_draws_next_seat_leads() -> None:
    game = position(trump="H", hands=["7C 7S 9D", "6D", "AS", "KS"], leader=0,
                    stock="6S 8S TS AH")  # fmt: skip
    with pytest.raises(IllegalActionError, match="holds only 1"):
        game.play("lead 7C 7S")
    game.play("lead 7C")
    game.play("take")
    assert game.hands[1] == hand("6D 7C") and game.known_cards(1) == hand("7C")
    assert game.hands[0] == hand("7S 9D 6S") and game.hands[2] == hand("AS")
    assert game.stock == tuple(cards("8S TS AH"))
    # The taker is skipped: seat 2 leads to seat 3.
    assert (game.to_move, game.leader, game.defender) == (2, 2, 3)


def test_with_two_players_the_leader_leads_again_after_a_take() -> None:
    game = position(trump="H", hands=["7C 7S 9D", "6D"], leader=1, stock="6S 8S AH")
    game.play("lead 6D")
    game.play("take")
    assert (game.to_move, game.leader, game.defender) == (1, 1, 0)
    assert game.hands[1] == hand("6S 8S AH")  # he drew up to 3
    assert game.hands[0] == hand("7C 7S 9D 6D")  # hands over 3 are never reduced


def test_known_cards_stay_known_until_played() -> None:
    game = position(trump="H", hands=["7C 7S", "6D 9S 8S"], leader=0, stock="6S JS QS AH")
    game.play("lead 7C 7S")
    game.play("take")
    assert game.known_cards(1) == hand("7C 7S")
    game.play("lead 6S")  # the leader leads again (two players)
    game.play("cover 6S:7S")  # the defender plays a known card: it is no longer known
    assert game.known_cards(1) == hand("7C") and game.view(0).known[1] == hand("7C")
    assert game.view(0).known[0] == hand("AH")  # the face-up card he drew after the cover


# ------------------------------------------------------------------ out, end, result


def test_a_player_without_cards_once_the_stock_is_empty_is_out_and_skipped() -> None:
    game = position(trump="H", hands=["7C", "8C 9D", "AS 6S", "KD"], leader=0)
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.out == (True, False, False, False)
    assert (game.leader, game.defender) == (1, 2)
    game.play("lead 9D")  # seat 1 leads his last card...
    game.play("take")
    assert game.out == (True, True, False, False)  # ...and is out after the trick
    assert (game.leader, game.defender) == (3, 2)  # after the taker 2: seat 3, then 0, 1 are out
    game.play("lead KD")
    game.play("take")
    assert game.over and game.loser == 2 and game.out == (True, True, False, True)
    assert game.pairwise_results() == ((0, 2), (1, 2), (3, 2))


def test_a_defender_who_covers_with_his_last_card_is_out_and_the_next_seat_leads() -> None:
    game = position(trump="H", hands=["7C TC", "8C", "AS 6S"], leader=0)
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.out == (False, True, False)
    assert (game.leader, game.defender) == (2, 0)


def test_the_defender_answers_even_the_last_lead_and_the_last_holder_loses() -> None:
    game = position(trump="H", hands=["7C", "8C 9D"], leader=0)
    game.play("lead 7C")
    assert not game.over and game.to_move == 1  # the game ends after the trick, not the lead
    game.play("cover 7C:8C")
    assert game.over and game.loser == 1 and game.reason is ClassicEndReason.LAST_HOLDER
    assert game.pairwise_results() == ((0, 1),)
    assert game.to_move is None and game.leader is None and game.defender is None


def test_covering_the_last_lead_with_the_last_card_is_a_draw() -> None:
    game = position(trump="H", hands=["7C", "8C"], leader=0)
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.over and game.loser is None and game.reason is ClassicEndReason.ALL_OUT
    assert game.pairwise_results() == () and game.out == (True, True)


def test_three_players_one_left_holding_cards_loses_to_both() -> None:
    game = position(trump="H", hands=["", "7C", "8C 6D"], leader=1, out=[0])
    game.play("lead 7C")
    game.play("cover 7C:8C")
    assert game.loser == 2 and game.pairwise_results() == ((0, 2), (1, 2))


def test_a_take_of_the_last_lead_loses() -> None:
    game = position(trump="H", hands=["", "7C", "AH", "8D"], leader=1, out=[0])
    game.play("lead 7C")
    game.play("take")  # could have covered: taking is still allowed
    assert not game.over  # seat 3 still holds cards
    assert game.out == (True, True, False, False)
    assert (game.leader, game.defender) == (3, 2)


def test_turn_limit_out_seats_beat_those_still_playing_who_draw_with_each_other() -> None:
    game = position(trump="H", hands=["", "7C 9D", "8C JD", "AS"], leader=1, out=[0],
                    turn_limit=2)  # fmt: skip
    game.play("lead 7C")
    game.play("take")
    assert game.over and game.loser is None and game.reason is ClassicEndReason.TURN_LIMIT
    assert game.pairwise_results() == ((0, 1), (0, 2), (0, 3))


def test_a_leader_whose_last_cards_meet_the_turn_limit_is_not_out_and_draws() -> None:
    """Out is decided after a trick: at the limit, a leader who has just led his last cards
    (stock empty) still draws with the other seats that are not out (docs/rules.md)."""
    game = position(trump="H", hands=["7C", "8C JD", "AS"], leader=0, turn_limit=1)
    game.play("lead 7C")
    assert game.hands[0] == ()
    assert game.over and game.loser is None and game.reason is ClassicEndReason.TURN_LIMIT
    assert game.out == (False, False, False)
    assert game.pairwise_results() == ()


def test_default_game_reports_its_loser() -> None:
    game = Game.new(seed=3, dealer=0)
    assert game.loser is None
    while not game.over:
        game.play(game.legal_actions()[0])
    if game.reason is EndReason.OUT:
        assert game.loser == 1 - game.outcome  # type: ignore[operator]
    else:
        assert game.loser is None


# ------------------------------------------------------------------ views


def test_view_shows_own_hand_counts_and_public_cards_only() -> None:
    game = position(trump="H", hands=["7C 7S 9D", "6D 9S 8C", "KC QC"], leader=0,
                    stock="6S JS QS AH", dealer=2)  # fmt: skip
    game.play("lead 7C 7S")
    view = game.view(1)
    assert view.ruleset == "classic" and view.players == 3 and view.seat == 1 and view.dealer == 2
    assert view.hand == hand("6D 9S 8C") and view.hand_sizes == (1, 3, 2)
    assert view.out == (False, False, False)
    assert (view.leader, view.defender, view.to_move) == (0, 1, 1) and view.my_turn
    assert view.led == hand("7C 7S") and view.trump is Suit.HEARTS
    assert view.face_up == Card.parse("AH") and view.stock_count == 4
    assert texts(view.legal_actions) == ["take", "cover 7C:8C 7S:9S"]
    assert texts(view.history) == ["lead 7C 7S"] and view.movers == (0,)
    other = game.view(2)
    assert other.legal_actions == () and not other.my_turn and other.hand == hand("KC QC")
    assert other.discard == view.discard and len(view.discard) == 36 - 8 - 4
    with pytest.raises(InvalidDeckError, match=r"seat must be 0\.\.2"):
        game.view(3)


def test_the_default_ruleset_is_unchanged_when_named_explicitly() -> None:
    d = shuffled_deck(8)
    plain = Game.from_deck(d, 1)
    named = Game.from_deck(d, 1, players=2, ruleset="default")
    assert type(named) is Game and named.view(0) == plain.view(0) and named.view(1) == plain.view(1)
    assert Game.new(seed=8, dealer=1, ruleset="default").deck == d
