"""End of the game: going out, the draw by final answer and its negatives, the worked example."""

from __future__ import annotations

from referee.rules import Card, EndReason, Game, Suit, View
from tests.rules.helpers import cards, hand, position, texts


def test_out_by_cover_and_lead_with_a_single_covering_card_left_is_a_draw() -> None:
    game = position(trump="H", mover="9D 7C", other="8C", pile="8D")
    game.play("cover 9D 7C")
    assert game.over
    assert game.outcome is None
    assert game.reason is EndReason.DRAW_BY_FINAL_ANSWER
    assert game.final_cover == Card.parse("8C")
    assert game.pile[-3:] == tuple(cards("9D 7C 8C"))  # the referee played the answer
    assert game.hands == ((), ())
    assert texts(game.history)[-1] == "cover 9D 7C"
    assert game.view(1).final_cover == Card.parse("8C")


def test_draw_when_the_single_card_is_a_trump_covering_the_lead() -> None:
    game = position(trump="H", mover="9D AS", other="6H", pile="8D")
    game.play("cover 9D AS")
    assert game.outcome is None and game.reason is EndReason.DRAW_BY_FINAL_ANSWER


def test_no_draw_with_two_cards_left_even_if_one_covers() -> None:
    game = position(trump="H", mover="9D 7C", other="8C 6S", pile="8D")
    game.play("cover 9D 7C")
    assert game.over and game.outcome == 0 and game.reason is EndReason.OUT
    assert game.final_cover is None
    assert game.hands[1] == hand("8C 6S")


def test_no_draw_when_the_last_card_was_a_cover() -> None:
    game = position(trump="H", mover="9D", other="AH", pile="8D")
    game.play("cover 9D")
    assert game.over and game.outcome == 0 and game.reason is EndReason.OUT


def test_no_draw_when_the_single_card_does_not_cover() -> None:
    game = position(trump="H", mover="9D 7C", other="6C", pile="8D")
    game.play("cover 9D 7C")
    assert game.outcome == 0 and game.reason is EndReason.OUT
    game = position(trump="H", mover="9D 7H", other="AC", pile="8D")
    game.play("cover 9D 7H")  # a non-trump never covers a trump lead
    assert game.outcome == 0


def test_out_by_lead_on_an_empty_pile_wins_against_a_full_hand() -> None:
    # With both hands holding all 36 cards the other can never hold a single card: he loses.
    rest = [c for c in Card.all() if c != Card.parse("7C")]
    view = View(
        seat=0, dealer=1, hand=(Card.parse("7C"),), pile=(), trump=Suit.HEARTS, face_up=None,
        stock_count=0, opponent_count=35, opponent_known=(), own_known=(), to_move=0,
        legal_actions=(), history=(), turn_limit=1000, over=False, outcome=None, reason=None,
        final_cover=None,
    )  # fmt: skip
    game = Game.from_view(view, rest, [])
    assert texts(game.legal_actions()) == ["lead 7C"]
    game.play("lead 7C")
    assert game.outcome == 0 and game.reason is EndReason.OUT


def test_the_seed_worked_example_with_a_six_of_trumps() -> None:
    # Hearts trump. Pile 7C, QC, 8D. The player answers `cover JD 6H` (pile: 5 cards).
    game = position(
        trump="H",
        mover="JD 6H 9S",
        other="7S 8S TS",
        pile="7C QC 8D",
        stock="KS AS KH",
        filler="stock",
    )
    assert game.pile == tuple(cards("7C QC 8D"))
    game.play("cover JD 6H")
    assert game.pile == tuple(cards("7C QC 8D JD 6H"))
    # The opponent takes: 6H is trump but not the ace, so he takes 3: 6H, JD, 8D.
    game.play("take")
    assert set(cards("6H JD 8D")) <= set(game.hands[1])
    assert game.pile == tuple(cards("7C QC"))
    # ...and the first player must answer QC.
    assert game.to_move == 0
    assert game.view(0).top == Card.parse("QC")


def test_the_seed_worked_example_with_the_ace_of_trumps() -> None:
    game = position(
        trump="H",
        mover="JD AH 9S",
        other="7S 8S TS",
        pile="7C QC 8D",
        stock="KS AS KH",
        filler="stock",
    )
    game.play("cover JD AH")
    game.play("take")  # the trump ace: the taker takes all 5
    assert game.pile == ()
    assert set(cards("7C QC 8D JD AH")) <= set(game.hands[1])
    assert game.to_move == 0 and texts(game.legal_actions())[0].startswith("lead")
