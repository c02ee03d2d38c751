"""The trackers' deductions checked against the cards the other seats really hold: a card a
seat may hold includes every card it holds, a card it surely holds is one it holds, and once
the counts leave one place for the unseen cards, both say exactly that hand."""

from __future__ import annotations

import random

from referee.rules import Card, ClassicGame, Game
from sdk import CardTracker, TableTracker

CARDS = list(Card.all())


def test_the_card_tracker_against_the_opponents_real_hand() -> None:
    exact_possible = exact_surely = 0
    for seed in range(40):
        rng = random.Random(seed)
        game = Game.new(seed=seed, dealer=seed % 2)
        while not game.over:
            for seat in (0, 1):
                tracker = CardTracker.from_view(game.view(seat))
                truth = frozenset(game.view(1 - seat).hand)
                possible, surely = (
                    tracker.possible_opponent_cards(),
                    tracker.opponent_surely_holds(),
                )
                assert surely <= truth <= possible, (seed, seat, game.history)
                if tracker.opponent_hidden_count == 0:
                    assert possible == truth
                    exact_possible += bool(tracker.unseen)
                if tracker.stock_hidden_count == 0:
                    assert surely == truth
                    exact_surely += bool(tracker.unseen)
                trump = tracker.view.trump
                for card in rng.sample(CARDS, 6):
                    covering = {c for c in truth if c.covers(card, trump)}
                    assert covering <= tracker.coverers(card)
                    if tracker.opponent_surely_covers(card):
                        assert covering
            game.play(rng.choice(game.legal_actions()))
    # Both deductions were needed, not only trivially true (no unseen card at all).
    assert exact_possible > 0 and exact_surely > 0


def test_the_table_tracker_against_every_seats_real_hand() -> None:
    exact_possible = exact_surely = 0
    for seed in range(24):
        players = 2 + seed % 3
        rng = random.Random(seed)
        game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
        while not game.over:
            for seat in range(players):
                view = game.view(seat)
                tracker = TableTracker.from_view(view)
                for other in range(players):
                    truth = frozenset(game.view(other).hand)
                    possible, surely = tracker.possible_cards(other), tracker.surely_holds(other)
                    assert surely <= truth <= possible, (seed, seat, other, game.history)
                    if other == seat:
                        continue
                    if tracker.hidden[other] == 0:
                        assert possible == truth
                        exact_possible += bool(tracker.unseen)
                    elif surely == truth:
                        exact_surely += 1
                    for card in rng.sample(CARDS, 6):
                        covers = any(c.covers(card, view.trump) for c in truth)
                        assert tracker.may_cover(other, card) or not covers
            game.play(rng.choice(game.legal_actions()))
    assert exact_possible > 0 and exact_surely > 0
