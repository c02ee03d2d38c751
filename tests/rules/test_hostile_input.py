"""Hostile input never gets past the typed errors: any text, any object."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import Action, Card, Game, InvalidActionError, InvalidCardError, RulesError

WORDS = st.sampled_from(["lead", "cover", "take", "swap", "TH", "10♥", "6c", "x", "", "  "])
TEXTS = st.one_of(st.text(max_size=40), st.lists(WORDS, max_size=5).map(" ".join))


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_any_text_parses_to_a_canonical_action_or_a_typed_error(text: str) -> None:
    try:
        action = Action.parse(text)
    except InvalidActionError as exc:
        assert repr(text) in str(exc)
    else:
        assert Action.parse(str(action)) is action
        assert Action.parse(str(action)).code == action.code


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=6))
def test_any_text_parses_to_a_card_or_a_typed_error(text: str) -> None:
    try:
        card = Card.parse(text)
    except InvalidCardError as exc:
        assert repr(text) in str(exc)
    else:
        assert Card.parse(str(card)) is card


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.lists(TEXTS, max_size=8))
def test_hostile_actions_leave_the_game_unchanged(seed: int, attempts: list[str]) -> None:
    game = Game.new(seed=seed, dealer=seed % 2)
    for _ in range(seed % 40):
        if game.over:
            break
        game.play(game.legal_actions()[0])
    for text in attempts:
        before = (game.hands, game.pile, game.stock, game.history, game.to_move, game.over)
        try:
            game.play(text)
        except RulesError:
            assert (game.hands, game.pile, game.stock, game.history, game.to_move, game.over) == (
                before
            )


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.floats(), st.binary(), st.lists(st.integers())))
def test_non_text_inputs_are_typed_errors(value: object) -> None:
    game = Game.new(seed=1)
    for call in (Action.parse, Card.parse, game.play):
        with contextlib.suppress(RulesError):  # anything else escaping fails the test
            call(value)  # type: ignore[arg-type]
