"""The interned objects a bot can reach are immutable: no bot can rewrite another game's moves.

Every ``Action`` and ``Card`` is one shared instance per value, handed out in every view of
every game of the process (``view.legal_actions``, ``view.history``, ``view.hand``). Before
they refused assignment, one line in a bot (``action.text = "take"``) changed the text the
referee recorded, and ``Action.parse("take").text = "lead 6C"`` renamed ``take`` in every
later game of an in-process tournament.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from referee.rules import Action, Card, ClassicAction, ClassicGame, Game
from referee.rules.actions import BY_CODE

ACTION_FIELDS = ("code", "kind", "cover", "lead", "swap", "text", "_push", "_keep", "__class__")
CARD_FIELDS = ("index", "rank", "suit", "text", "__class__")


@pytest.mark.parametrize("field", ACTION_FIELDS)
def test_assigning_or_deleting_an_action_field_raises_and_changes_nothing(field: str) -> None:
    action = Action.parse("cover TD AC")
    before = {name: getattr(action, name) for name in ACTION_FIELDS}
    with pytest.raises(AttributeError, match="immutable"):
        setattr(action, field, getattr(Action.parse("take"), field))
    with pytest.raises(AttributeError, match="immutable"):
        delattr(action, field)
    assert {name: getattr(action, name) for name in ACTION_FIELDS} == before
    assert Action.parse("cover TD AC") is action and str(action) == "cover TD AC"


@pytest.mark.parametrize("obj", [Action.parse("take"), Card.parse("TH")], ids=repr)
def test_a_new_attribute_cannot_be_added_to_an_action_or_a_card(obj: object) -> None:
    name = "note"
    with pytest.raises(AttributeError):
        setattr(obj, name, "mine")
    assert not hasattr(obj, name)


@pytest.mark.parametrize("field", CARD_FIELDS)
def test_assigning_or_deleting_a_card_field_raises_and_changes_nothing(field: str) -> None:
    card = Card.parse("TH")
    before = {name: getattr(card, name) for name in CARD_FIELDS}
    with pytest.raises(AttributeError, match="immutable"):
        setattr(card, field, getattr(Card.parse("6C"), field))
    with pytest.raises(AttributeError, match="immutable"):
        delattr(card, field)
    assert {name: getattr(card, name) for name in CARD_FIELDS} == before
    assert Card.parse("10H") is card and card.index == 22


def test_every_interned_action_and_card_refuses_assignment() -> None:
    for action in BY_CODE:
        if action is not None:
            with pytest.raises(AttributeError):
                action.text = "take"
    for card in Card.all():
        with pytest.raises(AttributeError):
            card.text = "6C"


def test_a_bot_cannot_rename_the_actions_of_its_view_for_other_games() -> None:
    # The sabotage of the audit (mutate_sabotage.py, mutate_local.py, mutate_action2.py), through
    # the objects a view hands out.
    game = Game.new(seed=5, dealer=1)
    view = game.view(game.to_move or 0)
    lead = view.legal_actions[0]
    with pytest.raises(AttributeError):
        lead.text = "take"
    with pytest.raises(AttributeError):
        Action.parse("take").text = "lead 6C"
    with pytest.raises(AttributeError):
        lead.lead = Card.parse("AC")
    with pytest.raises(AttributeError):
        view.hand[0].suit = Card.parse("AS").suit
    played = game.play(lead)
    assert game.history == (played,) and str(played) == "lead 7H"
    assert [str(c) for c in game.pile] == ["7H"]
    other = Game.new(seed=5, dealer=1)
    assert [str(a) for a in other.legal_actions()] == ["lead 7H", "lead AH", "lead AS"]
    assert str(Action.parse("take")) == "take"


def test_classic_actions_and_views_are_frozen_too() -> None:
    game = ClassicGame.new(seed=1, players=3)
    view = game.view(game.to_move or 0)
    action = view.legal_actions[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.text = "take"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ClassicAction.take().text = "lead 6C"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.hand = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Game.new(seed=1).view(0).history = ()  # type: ignore[misc]


def test_copies_and_pickles_are_still_the_interned_instances() -> None:
    for obj in (Action.parse("swap cover AH 6C"), Action.parse("take"), Card.parse("TH")):
        assert copy.copy(obj) is obj
        assert copy.deepcopy(obj) is obj
        assert pickle.loads(pickle.dumps(obj)) is obj
    assert hash(Action.parse("take")) == Action.parse("take").code
    assert Card.parse("TH") == Card(Card.parse("TH").rank, Card.parse("TH").suit)
