"""``from_view`` refuses a view no game can reach (an outside audit of the determinization
APIs): a game built from one either did not give the view back (a card listed twice, no
face-up card under a stock) or crashed on it (a table's per-seat fields cut short)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from referee.rules import (
    Card,
    ClassicEndReason,
    ClassicGame,
    ClassicView,
    DeckTypeError,
    EndReason,
    Game,
    InvalidDeckError,
    InvalidViewError,
    View,
)
from sdk import sample_game, sample_table_game
from sdk.tracker import CardTracker, TableTracker
from tests.rules.helpers import played


def _default() -> tuple[Game, View, list[Card], list[Card]]:
    """A running two-player game with a history, from the view of the seat to move."""
    game = played(Game.new(seed=3, dealer=0), 6, seed=6)
    seat = game.to_move
    assert seat is not None and game.stock
    return game, game.view(seat), list(game.hands[1 - seat]), list(game.stock)


def _table() -> tuple[ClassicGame, ClassicView, list[list[Card]], list[Card]]:
    game = played(ClassicGame.new(seed=3, dealer=0, players=3), 5, seed=5)
    seat = game.to_move
    assert seat is not None and game.stock
    return game, game.view(seat), [list(h) for h in game.hands], list(game.stock)


def test_the_true_hidden_cards_still_rebuild_both_games() -> None:
    _, view, opponent, stock = _default()
    assert Game.from_view(view, opponent, stock).view(view.seat) == view
    _, table_view, hands, table_stock = _table()
    rebuilt = ClassicGame.from_view(table_view, hands, table_stock)
    assert rebuilt.view(table_view.seat) == table_view


def _default_changes(view: View) -> dict[str, tuple[dict[str, Any], str]]:
    other = next(c for c in Card.all() if c not in view.hand)
    return {
        "a card twice in the hand": ({"hand": (*view.hand, view.hand[0])}, "twice"),
        "no face-up card under a stock": ({"face_up": None}, "no face-up card"),
        "a known card not in the hand": ({"own_known": (other,)}, "not in view.hand"),
        "the wrong seat to move": ({"to_move": 1 - view.seat}, "after 6 moves seat"),
        "an outcome while running": ({"outcome": 0}, "outcome is 0 while the game runs"),
        "a reason while running": ({"reason": EndReason.OUT}, "reason"),
        "a final cover while running": ({"final_cover": view.hand[0]}, "final_cover"),
        "over with no reason": ({"over": True, "to_move": None}, "end reason"),
        "over with a seat to move": ({"over": True}, "to_move"),
        "a turn limit already reached": ({"turn_limit": 6}, "turn limit of 6"),
        "a hand of texts": ({"hand": tuple(c.text for c in view.hand)}, "Card objects"),
    }


@pytest.mark.parametrize("case", list(_default_changes(_default()[1])))
def test_an_impossible_two_player_view_is_refused(case: str) -> None:
    _, view, opponent, stock = _default()
    change, message = _default_changes(view)[case]
    broken = replace(view, **change)
    with pytest.raises(InvalidDeckError, match=message) as refused:
        Game.from_view(broken, opponent, stock)
    assert isinstance(refused.value, InvalidViewError | DeckTypeError)
    # The SDK's sampler answers alike: a typed error, never an AttributeError or a game
    # that does not give the view back.
    with pytest.raises(InvalidDeckError):
        sample_game(broken, random.Random(0))


def test_a_position_set_up_by_hand_may_give_the_move_to_either_seat() -> None:
    """With no history (tests' and puzzles' positions) the seat to move is the view's."""
    game = Game.new(seed=5, dealer=0)
    for seat in (0, 1):
        view = replace(game.view(0), to_move=seat)
        built = Game.from_view(view, list(game.hands[1]), list(game.stock))
        assert built.to_move == seat


def _table_changes(view: ClassicView) -> dict[str, tuple[dict[str, Any], str]]:
    out_with_cards = tuple(s != view.seat and s == (view.seat + 1) % 3 for s in range(3))
    return {
        "hand sizes cut short": ({"hand_sizes": view.hand_sizes[:2]}, "one entry per seat"),
        "known cut short": ({"known": view.known[:2]}, "one entry per seat"),
        "out cut short": ({"out": view.out[:2]}, "one entry per seat"),
        "a card twice in the hand": (
            {"hand": (*view.hand, view.hand[0]), "hand_sizes": _grown(view)},
            "twice",
        ),
        "a seat out holding cards": ({"out": out_with_cards}, "is out but holds"),
        "no face-up card under a stock": ({"face_up": None}, "no face-up card"),
        "a loser while running": ({"loser": 1}, "loser is 1 while the game runs"),
        "a reason while running": ({"reason": ClassicEndReason.LAST_HOLDER}, "reason"),
        "movers not matching the history": ({"movers": view.movers[:-1]}, "movers"),
        "a turn limit already reached": ({"turn_limit": 5}, "turn limit of 5"),
    }


def _grown(view: ClassicView) -> tuple[int, ...]:
    sizes = list(view.hand_sizes)
    sizes[view.seat] += 1
    return tuple(sizes)


@pytest.mark.parametrize("case", list(_table_changes(_table()[1])))
def test_an_impossible_table_view_is_refused(case: str) -> None:
    _, view, hands, stock = _table()
    change, message = _table_changes(view)[case]
    broken = replace(view, **change)
    with pytest.raises(InvalidDeckError, match=message) as refused:
        ClassicGame.from_view(broken, hands, stock)
    assert isinstance(refused.value, InvalidViewError | DeckTypeError)
    with pytest.raises(InvalidDeckError):
        sample_table_game(broken, random.Random(0))


@pytest.mark.parametrize("which", ["classic view", "two-player view", "None"])
def test_the_sdk_samplers_refuse_a_view_of_the_other_ruleset_with_a_typed_error(
    which: str,
) -> None:
    """They raised AttributeError ('ClassicView' object has no attribute 'pile')."""
    table_view = _table()[1]
    default_view = _default()[1]
    view: object
    if which != "two-player view":
        view = table_view if which == "classic view" else None
        with pytest.raises(DeckTypeError, match="needs a View of the default game"):
            sample_game(view, random.Random(0))  # type: ignore[arg-type]
        with pytest.raises(DeckTypeError):
            CardTracker.from_view(view)  # type: ignore[arg-type]
    if which != "classic view":
        view = default_view if which == "two-player view" else None
        with pytest.raises(DeckTypeError, match="needs a ClassicView"):
            sample_table_game(view, random.Random(0))  # type: ignore[arg-type]
        with pytest.raises(DeckTypeError):
            TableTracker.from_view(view)  # type: ignore[arg-type]
