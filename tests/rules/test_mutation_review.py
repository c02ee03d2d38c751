"""Mutation review of the two-player rules: invariants of the law that make some mutants
equivalent, pinned so that the reasoning stays true.

rules.md, Drawing: after his action the player who acted draws until he holds 3. So while
the stock lasts every player starts his turn with at least 3 cards (his own last draw, and
the opponent's action never takes from his hand), and a ``take`` (which adds at least one
card) can never leave him below 3: "the taker draws" is never needed while the stock lasts.
A mutant where the taker does not draw is therefore equivalent; these tests hold the facts it
rests on and would fail if the engine ever let a hand drop below 3 with a stock.
"""

from __future__ import annotations

import random

import pytest

from referee.rules import ActionKind, Game


@pytest.mark.parametrize("seed", range(60))
def test_while_the_stock_lasts_the_mover_holds_at_least_three_cards(seed: int) -> None:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    while not game.over:
        mover = game.to_move
        assert mover is not None
        if game.stock:
            assert len(game.hands[mover]) >= 3, (seed, game.history)
        action = rng.choice(game.legal_actions())
        before = len(game.hands[mover])
        stock_before = len(game.stock)
        game.play(action)
        if action.kind is ActionKind.TAKE and stock_before:
            # The taker gained cards and drew nothing: the stock is untouched.
            assert len(game.stock) == stock_before
            assert len(game.hands[mover]) > before >= 3
        if game.stock:
            # After his action (and his draw) the player who acted holds 3 or more.
            assert len(game.hands[mover]) >= 3, (seed, game.history)
