"""Hostile input at the classic table never gets past the typed errors: any text, any object."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import (
    Action,
    ClassicAction,
    ClassicActionKind,
    ClassicGame,
    Game,
    IllegalActionError,
    InvalidActionError,
    InvalidDeckError,
    RulesError,
    shuffled_deck,
)
from tests.rules.classic.test_properties import state

WORDS = st.sampled_from(
    ["lead", "cover", "take", "8C", "8s", "10♥", "TH", "8C:9C", "8S:6H", "9c:8c", ":", "x", ""]
)
TEXTS = st.one_of(st.text(max_size=40), st.lists(WORDS, max_size=6).map(" ".join))
OBJECTS = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.binary(),
    st.lists(st.integers()),
    st.just(Action.parse("take")),  # an action of the default game is not a classic action
    st.just(Action.parse("cover 9H 6C")),
)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_any_text_parses_to_a_canonical_action_or_a_typed_error(text: str) -> None:
    try:
        action = ClassicAction.parse(text)
    except InvalidActionError as exc:
        assert repr(text) in str(exc)
    else:
        assert ClassicAction.parse(action.text) == action
        assert ClassicAction.parse(action.text).text == action.text == str(action)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([2, 3, 4]), st.lists(TEXTS, max_size=8))
def test_hostile_actions_leave_the_game_unchanged(seed: int, n: int, attempts: list[str]) -> None:
    game = Game.new(seed=seed, dealer=seed % n, players=n, ruleset="classic")
    for _ in range(seed % 40):
        if game.over:
            break
        game.play(game.legal_actions()[-1])
    for text in attempts:
        before = state(game)
        try:
            game.play(text)
        except RulesError as exc:
            assert repr(text) in str(exc)
            assert state(game) == before


@settings(max_examples=200, deadline=None)
@given(OBJECTS)
def test_non_text_inputs_are_typed_errors_and_change_nothing(value: object) -> None:
    game = Game.new(seed=1, players=3, ruleset="classic")
    before = state(game)
    with pytest.raises(InvalidActionError):
        ClassicAction.parse(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidActionError):
        game.play(value)  # type: ignore[arg-type]
    assert state(game) == before


@pytest.mark.parametrize(
    "text",
    [
        "lead",
        "lead 7C 8C",  # two ranks
        "lead 7C 7C",  # repeated
        "lead 7C 7D 7H 7S 7X",
        "cover",
        "cover 7C",
        "cover 7C:8C:9C",
        "cover 7C:8C 7C:9C",  # a led card twice
        "cover 7C:9C 7S:9C",  # a covering card twice
        "cover 7C:8C 8D:9D",  # covered cards of two ranks
        "cover 7C:7S 7S:8S",  # a card both led and covering
        "take 7C",
        "swap take",
    ],
)
def test_malformed_actions_quote_the_input(text: str) -> None:
    with pytest.raises(InvalidActionError, match=re.escape(repr(text))):
        ClassicAction.parse(text)


def test_parsing_forgives_case_spacing_order_and_card_spelling() -> None:
    assert ClassicAction.parse("  LEAD 7s   7c ").text == "lead 7C 7S"
    assert ClassicAction.parse("cover 7S:6H 7c:9c").text == "cover 7C:9C 7S:6H"
    assert ClassicAction.parse("cover 10♥:J♥").text == "cover TH:JH"
    assert ClassicAction.parse("Take") == ClassicAction.take()
    action = ClassicAction.cover(("7S", "6H"), ("7C", "9C"))
    assert action.kind is ClassicActionKind.COVER and action.text == "cover 7C:9C 7S:6H"
    assert ClassicAction.lead("7S", "7C") == ClassicAction.parse("lead 7C 7S")
    assert repr(action) == "ClassicAction('cover 7C:9C 7S:6H')"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"players": 1}, "seats 2, 3 or 4 players, got 1"),
        ({"players": 5}, "got 5"),
        ({"players": "3"}, "got '3'"),
        ({"players": 3, "dealer": 3}, "dealer must be a seat 0..2"),
        ({"players": 3, "turn_limit": 0}, "turn_limit"),
    ],
)
def test_bad_table_arguments_are_typed_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"dealer": 0, **kwargs}
    with pytest.raises(InvalidDeckError, match=message):
        Game.from_deck(shuffled_deck(1), ruleset="classic", **args)  # type: ignore[call-overload]


def test_unknown_ruleset_and_a_default_game_for_three_are_typed_errors() -> None:
    with pytest.raises(InvalidDeckError, match="unknown ruleset 'poker'"):
        Game.new(seed=1, ruleset="poker")
    with pytest.raises(InvalidDeckError, match="the default ruleset seats 2 players, got 3"):
        Game.new(seed=1, players=3)
    with pytest.raises(InvalidDeckError, match="duplicated: \\['7C'\\]"):
        ClassicGame.from_deck(["7C"] * 36, 0, players=3)


def test_playing_after_the_end_and_out_of_turn_phase_are_illegal() -> None:
    game = Game.new(seed=5, players=2, ruleset="classic")
    with pytest.raises(IllegalActionError, match="must lead"):
        game.play("take")
    lead = game.legal_actions()[0]
    game.play(lead)
    with pytest.raises(IllegalActionError, match="already led"):
        game.play(lead)
    while not game.over:
        game.play(game.legal_actions()[0])
    with pytest.raises(IllegalActionError, match="the game is over"):
        game.play("take")
    assert game.legal_actions() == []
