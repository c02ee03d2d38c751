"""Mutation review of the classic table: invariants of the law that make some mutants
equivalent, pinned so that the reasoning stays true.

rules-classic.md: after a cover both players of the trick draw up to 3 while the stock
lasts; after a take the taker gains the led cards and the leader draws up to 3; nobody
else's hand changes. So between tricks, while the stock lasts, every seat holds at least 3
cards, and a seat can only run out of cards once the stock is empty. The mutant that marks
an empty-handed seat "out" without first checking that the stock is empty is therefore
equivalent; these tests would fail if a seat could be empty with a stock left.
"""

from __future__ import annotations

import random

import pytest

from referee.rules import ClassicGame


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("seed", range(25))
def test_between_tricks_with_a_stock_every_seat_holds_at_least_three(
    players: int, seed: int
) -> None:
    rng = random.Random(seed * 10 + players)
    game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
    while not game.over:
        if not game.led and game.stock:
            sizes = [len(hand) for hand in game.hands]
            assert min(sizes) >= 3, (players, seed, sizes, game.history)
        game.play(rng.choice(game.legal_actions()))
        for seat in range(players):
            if not game.hands[seat] and not game.led:
                # Empty after a trick: only possible once the stock is gone, and then out.
                assert not game.stock, (players, seed, game.history)
                assert game.out[seat]
