"""Determinized Monte-Carlo within the move's time budget.

For each decision: sample the hidden cards consistently with the view (``sdk.sample_game``),
try every candidate action in that same sampled deal, finish each game with a fast
epsilon-greedy playout, and repeat while the budget lasts. The action with the best mean
result wins. Using one sample for all candidates per round (common random numbers) makes
the comparison fair with few samples. At a classic table the same search samples the
hidden cards with the table tracker (``sdk.sim.sample_table_hidden``) and plays every seat
greedily to the end on a fast simulator of the table (``fast.py``): a playout scores 1 when
another seat lost, 0 when this one did, 1/2 for a draw.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

from referee.rules import Action, ClassicAction, ClassicActionKind, ClassicView, Game, View
from sdk import Bot, sample_game, serve
from sdk.examples.mc.fast import TableState
from sdk.strategy import greedy_action, greedy_key, table_key

A = TypeVar("A")
G = TypeVar("G")

MAX_PLAYOUT_ACTIONS = 400
"""Playouts longer than this are scored as draws (real games rarely get close)."""


def playout(game: Game, seat: int, rng: random.Random, epsilon: float) -> float:
    """Finish ``game`` (in place) with epsilon-greedy play; 1 win, 1/2 draw, 0 loss for seat."""
    trump = game.trump
    for _ in range(MAX_PLAYOUT_ACTIONS):
        if game.over:
            break
        if rng.random() < epsilon:
            game.play_random(rng)
        else:
            game.play(greedy_action(game.legal_actions(), trump))
    if not game.over or game.outcome is None:
        return 0.5
    return 1.0 if game.outcome == seat else 0.0


class MonteCarloBot(Bot):
    """``playouts``: fixed samples per candidate (reproducible, for tests); otherwise it
    thinks for ``time_fraction`` of the move limit, at most ``max_seconds``."""

    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def __init__(
        self,
        *,
        playouts: int | None = None,
        time_fraction: float = 0.3,
        max_seconds: float = 0.5,
        max_candidates: int = 12,
        epsilon: float = 0.15,
        seed: int | str | None = None,
    ) -> None:
        self.playouts = playouts
        self.time_fraction = time_fraction
        self.max_seconds = max_seconds
        self.max_candidates = max_candidates
        self.epsilon = epsilon
        self.rng = random.Random(seed)

    def _budget(self) -> float:
        left = self.time_left()
        return min(self.max_seconds, self.time_fraction * left) if left != float("inf") else 0.1

    def act(self, view: View) -> Action:
        def score(deal: Game, action: Action) -> float:
            game = deal.copy()
            game.play(action)
            return playout(game, view.seat, self.rng, self.epsilon)

        return self._search(
            view.legal_actions,
            lambda a: greedy_key(a, view.trump),
            lambda: sample_game(view, self.rng),
            score,
        )

    def act_table(self, view: ClassicView) -> ClassicAction:
        # The table's playouts run on the fast greedy simulator (mc/fast.py): many more
        # samples per move than the engine allows, all seats modelled as greedy players.
        def score(deal: TableState, action: ClassicAction) -> float:
            state = deal.copy()
            state.play(action)
            return state.playout(view.seat, MAX_PLAYOUT_ACTIONS)

        return self._search(
            view.legal_actions,
            lambda a: table_key(a, view.trump),
            lambda: TableState.sampled(view, self.rng),
            score,
            # Taking is greedy's last resort, yet often the better move (keeping trumps):
            # it is always weighed, however many covers there are.
            always=[a for a in view.legal_actions if a.kind is ClassicActionKind.TAKE],
        )

    def _search(
        self,
        legal: Sequence[A],
        key: Callable[[A], tuple[int, ...]],
        sample: Callable[[], G],
        score: Callable[[G, A], float],
        always: Sequence[A] = (),
    ) -> A:
        """The best of ``legal`` by mean playout score over sampled deals (both rulesets);
        ``always``: actions weighed even when greedy's order would leave them out."""
        if len(legal) == 1:
            return legal[0]
        # Few candidates keep the samples per candidate high; greedy's order picks them.
        candidates = sorted(legal, key=key)[: self.max_candidates]
        candidates += [a for a in always if a not in candidates]
        totals = [0.0] * len(candidates)
        rounds = 0
        deadline = time.monotonic() + self._budget()
        while True:
            if self.playouts is not None:
                if rounds >= self.playouts:
                    break
            elif rounds > 0 and time.monotonic() >= deadline:
                break
            deal = sample()
            for i, action in enumerate(candidates):
                totals[i] += score(deal, action)
            rounds += 1
        best = max(range(len(candidates)), key=lambda i: (totals[i], -i))
        return candidates[best]


if __name__ == "__main__":
    serve(MonteCarloBot())
