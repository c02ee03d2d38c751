"""``play`` trusts only an action found in the current state's own legal list.

Anything else (text, an action listed for an earlier state or by another game, an action the
caller slipped into a returned list) still goes through the legality gate and is rejected with
the typed error quoting the input, leaving the state unchanged.
"""

from __future__ import annotations

import copy
import pickle
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import Action, Game, IllegalActionError, InvalidActionError
from tests.rules.helpers import position
from tests.rules.test_properties import ALL_ACTIONS, random_game


def snapshot(game: Game) -> tuple[object, ...]:
    return (game.hands, game.pile, game.stock, game.to_move, game.history, game.over)


def assert_rejected(game: Game, action: Action | str) -> None:
    before = snapshot(game)
    with pytest.raises(IllegalActionError) as info:
        game.play(action)
    assert repr(str(action)) in str(info.value)
    assert snapshot(game) == before


def test_an_action_listed_for_an_earlier_state_is_checked_again() -> None:
    game = Game.new(seed=7, dealer=0)
    first = game.legal_actions()  # leads: the pile is empty
    played = game.play(first[0])
    assert game.pile[-1] == played.lead
    # The same objects, now stale: leading is illegal on a non-empty pile, and the card
    # just led is no longer in hand.
    for stale in first:
        assert_rejected(game, stale)
    assert_rejected(game, played)


def test_a_stale_list_cannot_be_replayed_even_after_listing_again() -> None:
    game = Game.new(seed=3, dealer=1)
    old = game.legal_actions()
    game.play(old[0])
    new = game.legal_actions()  # the new state's cache is in place now
    for action in old:
        if action in new:
            continue  # legal again in the new state: a value, not a capability
        assert_rejected(game, action)


def test_an_action_listed_by_another_game_is_checked_by_this_one() -> None:
    here = position(trump="H", mover="7C 8C 9C", other="6S 7S 8S", pile="TD", stock="QS JH")
    there = position(trump="H", mover="JD QD KD", other="6S 7S 8S", pile="TD", stock="QS JH")
    here_legal = here.legal_actions()
    assert [str(a) for a in here_legal] == ["take"]
    for action in there.legal_actions():
        if action not in here_legal:
            assert_rejected(here, action)
    assert here.play(here_legal[0]) is here_legal[0]


def test_an_action_slipped_into_the_returned_list_is_not_trusted() -> None:
    game = position(trump="H", mover="7C 8C 9C", other="6S 7S 8S", pile="TD", stock="QS JH")
    listed = game.legal_actions()
    forged = Action.parse("cover JD 7C")  # JD is not in hand
    listed.append(forged)
    listed[0] = forged
    assert_rejected(game, forged)
    # The caller's list is a copy: the game's own listing is untouched.
    assert [str(a) for a in game.legal_actions()] == ["take"]
    assert game.legal_actions() is not game.legal_actions()


def test_text_always_goes_through_the_parser_and_the_gate() -> None:
    game = Game.new(seed=5, dealer=0)
    game.legal_actions()
    with pytest.raises(InvalidActionError, match="'lead'"):
        game.play("lead")
    assert_rejected(game, "take")  # well formed, illegal on an empty pile


class _EqualsEverything(str):
    """Text that claims to equal any object (it must not pass for a listed action)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def test_a_str_claiming_equality_with_everything_is_not_trusted() -> None:
    game = Game.new(seed=5, dealer=0)
    game.legal_actions()
    assert_rejected(game, _EqualsEverything("take"))


def test_a_copy_shares_the_listing_but_not_the_state() -> None:
    game = Game.new(seed=9, dealer=0)
    listed = game.legal_actions()
    clone = game.copy()
    clone.play(listed[0])
    assert_rejected(clone, listed[0])  # stale for the clone
    assert game.play(listed[0]) is listed[0]  # still the original's current state


def test_a_game_over_rejects_every_action_it_listed_before() -> None:
    game, rng = random_game(21, steps=0)
    last: list[Action] = []
    while not game.over:
        last = game.legal_actions()
        game.play(rng.choice(last))
    assert game.legal_actions() == []
    for action in last:
        with pytest.raises(IllegalActionError, match="the game is over"):
            game.play(action)


@pytest.mark.parametrize(
    "clone", [copy.copy, copy.deepcopy, lambda a: pickle.loads(pickle.dumps(a))]
)
def test_actions_stay_interned_so_equality_is_identity(clone: object) -> None:
    assert callable(clone)
    for action in ALL_ACTIONS[::37]:
        again = clone(action)
        assert again is action and again == action and hash(again) == hash(action)
        assert Action.parse(str(action)) is action
        assert Action(action.kind, cover=action.cover, lead=action.lead, swap=action.swap) is action
    assert len(set(ALL_ACTIONS)) == len(ALL_ACTIONS) == 2666


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_the_trusted_path_and_the_text_path_play_the_same_game(seed: int) -> None:
    rng = random.Random(seed)
    trusted = Game.new(seed=seed, dealer=seed % 2)
    checked = Game.new(seed=seed, dealer=seed % 2)
    while not trusted.over:
        legal = trusted.legal_actions()
        assert [str(a) for a in legal] == [str(a) for a in checked.legal_actions()]
        action = rng.choice(legal)
        assert trusted.play(action) is checked.play(str(action))
        assert snapshot(trusted) == snapshot(checked)
    assert (trusted.outcome, trusted.reason) == (checked.outcome, checked.reason)
