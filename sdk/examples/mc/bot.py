"""Determinized Monte-Carlo within the move's time budget.

For each decision: sample the hidden cards consistently with the view (``sdk.sample_game``),
try every candidate action in that same sampled deal, finish each game with a fast
epsilon-greedy playout, and repeat while the budget lasts. The action with the best mean
result wins. Using one sample for all candidates per round (common random numbers) makes
the comparison fair with few samples. At a classic table the same search runs on the
table's engine (``sdk.sample_table_game``): a playout scores 1 when this seat beat someone and
lost to nobody, 0 when it lost, 1/2 otherwise.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

from referee.rules import Action, ClassicAction, ClassicGame, ClassicView, Game, View
from sdk import Bot, sample_game, sample_table_game, serve
from sdk.strategy import greedy_action, greedy_key, greedy_table_action, table_key

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


def table_playout(game: ClassicGame, seat: int, rng: random.Random, epsilon: float) -> float:
    """Finish a classic-table ``game`` (in place) with epsilon-greedy play; ``seat``'s score."""
    trump = game.trump
    for _ in range(MAX_PLAYOUT_ACTIONS):
        if game.over:
            break
        legal = game.legal_actions()
        if rng.random() < epsilon:
            game.play(rng.choice(legal))
        else:
            game.play(greedy_table_action(legal, trump))
    if not game.over:
        return 0.5
    pairs = game.pairwise_results()
    if any(x == seat for _, x in pairs):
        return 0.0
    return 1.0 if any(w == seat for w, _ in pairs) else 0.5


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
        def score(deal: ClassicGame, action: ClassicAction) -> float:
            game = deal.copy()
            game.play(action)
            return table_playout(game, view.seat, self.rng, self.epsilon)

        return self._search(
            view.legal_actions,
            lambda a: table_key(a, view.trump),
            lambda: sample_table_game(view, self.rng),
            score,
        )

    def _search(
        self,
        legal: Sequence[A],
        key: Callable[[A], tuple[int, ...]],
        sample: Callable[[], G],
        score: Callable[[G, A], float],
    ) -> A:
        """The best of ``legal`` by mean playout score over sampled deals (both rulesets)."""
        if len(legal) == 1:
            return legal[0]
        # Few candidates keep the samples per candidate high; greedy's order picks them.
        candidates = sorted(legal, key=key)[: self.max_candidates]
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
