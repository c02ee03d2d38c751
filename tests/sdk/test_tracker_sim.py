"""The card tracker and determinization agree with the engine on every reachable view."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings

from referee.rules import Card, Game, View
from sdk import CardTracker, sample_game, sample_hidden
from sdk.tracker import InconsistentViewError
from tests.protocol.strategies import played_views


@settings(max_examples=150, deadline=None)
@given(view=played_views())
def test_unseen_cards_are_exactly_the_hidden_ones(view: View) -> None:
    tracker = CardTracker.from_view(view)
    assert len(tracker.unseen) == tracker.opponent_hidden_count + tracker.stock_hidden_count
    visible = set(view.hand) | set(view.pile) | set(view.opponent_known)
    assert not tracker.unseen & visible
    assert view.face_up not in tracker.unseen
    assert tracker.unseen_trumps == {c for c in tracker.unseen if c.suit == view.trump}
    if view.pile:
        top = view.pile[-1]
        assert tracker.coverers(top) == {
            c for c in tracker.possible_opponent_cards() if c.covers(top, view.trump)
        }


@settings(max_examples=150, deadline=None)
@given(view=played_views())
def test_sampled_games_are_consistent_with_the_view(view: View) -> None:
    rng = random.Random(7)
    opponent, stock = sample_hidden(view, rng)
    assert set(view.opponent_known) <= set(opponent)
    assert len(stock) == view.stock_count
    game = sample_game(view, rng)
    assert game.view(view.seat) == view  # the engine agrees: same position, same legal moves
    if not game.over:
        game.copy().play(game.legal_actions()[0])  # and it can be played on


def test_samples_vary_with_the_rng_and_repeat_with_the_seed() -> None:
    view = Game.new(seed=3, dealer=0).view(1)
    samples = {tuple(sample_hidden(view, random.Random(i))[0]) for i in range(20)}
    assert len(samples) > 10
    assert sample_hidden(view, random.Random(5)) == sample_hidden(view, random.Random(5))


def test_a_view_that_does_not_add_up_is_rejected() -> None:
    view = Game.new(seed=3, dealer=0).view(0)
    broken = replace(view, stock_count=view.stock_count + 1)
    with pytest.raises(InconsistentViewError, match="does not add up"):
        CardTracker.from_view(broken)
    with pytest.raises(InconsistentViewError):
        sample_game(replace(view, hand=(*view.hand, Card.parse("AS"))), random.Random(1))
