"""Determinized Monte-Carlo within the move's time budget.

For each decision: sample the hidden cards consistently with the view (``sdk.sample_game``),
try every candidate action in that same sampled deal, finish each game with a fast
epsilon-greedy playout, and repeat while the budget lasts. The action with the best mean
result wins. Using one sample for all candidates per round (common random numbers) makes
the comparison fair with few samples. At a classic table the same search samples the
hidden cards with the table tracker (``sdk.sim.sample_table_hidden``) and plays every seat
greedily to the end on a fast simulator of the table (``fast.py``): a playout scores 1 when
another seat lost, 0 when this one did, 1/2 for a draw. Early in a table game most
differences between candidates are noise, so the bot leaves greedy's choice only for an
action that beats it sample for sample by ``table_confidence`` standard errors; the endgame
(a stock of 3 cards or fewer), where the loser is decided, gets six times the samples.
"""

from __future__ import annotations

import math
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


ENDGAME_STOCK = 3
"""At a table, a stock this small or empty starts the endgame: who is left holding cards is
decided now, the playouts are short and fewer cards are hidden."""

ENDGAME_SCALE = 6
"""The endgame gets this many times the samples (or the time) of a move before it."""


class MonteCarloBot(Bot):
    """``playouts``: fixed samples per candidate (reproducible, for tests); otherwise it
    thinks for ``time_fraction`` of the move limit, at most ``max_seconds`` (both scaled
    up in a table's endgame, never beyond 60% of the move's limit). ``table_confidence``:
    how sure (in standard errors) it must be to leave greedy's choice at a table."""

    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def __init__(
        self,
        *,
        playouts: int | None = None,
        time_fraction: float = 0.3,
        max_seconds: float = 0.5,
        max_candidates: int = 12,
        epsilon: float = 0.15,
        table_confidence: float = 2.0,
        seed: int | str | None = None,
    ) -> None:
        self.playouts = playouts
        self.time_fraction = time_fraction
        self.max_seconds = max_seconds
        self.max_candidates = max_candidates
        self.epsilon = epsilon
        self.table_confidence = table_confidence
        self.rng = random.Random(seed)

    def _budget(self, scale: int = 1) -> float:
        """Seconds to think: ``scale`` times the usual share of the move's limit, never more
        than 60% of what is left of it (the bank is for accidents, not for thinking)."""
        left = self.time_left()
        if left == float("inf"):
            return 0.1 * scale
        return min(scale * min(self.max_seconds, self.time_fraction * left), 0.6 * left)

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
            scale=ENDGAME_SCALE if view.stock_count <= ENDGAME_STOCK else 1,
            confidence=self.table_confidence,
        )

    def _search(
        self,
        legal: Sequence[A],
        key: Callable[[A], tuple[int, ...]],
        sample: Callable[[], G],
        score: Callable[[G, A], float],
        always: Sequence[A] = (),
        scale: int = 1,
        confidence: float = 0.0,
    ) -> A:
        """The best of ``legal`` by mean playout score over sampled deals (both rulesets);
        ``always``: actions weighed even when greedy's order would leave them out;
        ``scale``: how many times ``playouts`` (fixed mode) or the time budget to spend;
        ``confidence``: leave greedy's choice only for an action whose lead over it, sample
        for sample, is this many standard errors above zero."""
        if len(legal) == 1:
            return legal[0]
        # Few candidates keep the samples per candidate high; greedy's order picks them.
        candidates = sorted(legal, key=key)[: self.max_candidates]
        candidates += [a for a in always if a not in candidates]
        totals = [0.0] * len(candidates)
        # Per candidate: the sum of squares of its difference to greedy's choice, sample by
        # sample (the same deal for all: the differences are paired).
        squares = [0.0] * len(candidates)
        rounds = 0
        deadline = time.monotonic() + self._budget(scale)
        while True:
            if self.playouts is not None:
                if rounds >= self.playouts * scale:
                    break
            elif rounds > 0 and time.monotonic() >= deadline:
                break
            deal = sample()
            scores = [score(deal, action) for action in candidates]
            for i, value in enumerate(scores):
                totals[i] += value
                squares[i] += (value - scores[0]) ** 2
            rounds += 1
        best = max(range(len(candidates)), key=lambda i: (totals[i], -i))
        if (
            best
            and confidence
            and not _significant(totals[best] - totals[0], squares[best], rounds, confidence)
        ):
            # Early in a game most differences are noise; greedy's choice is the safe one.
            return candidates[0]
        return candidates[best]


def _significant(total: float, squares: float, rounds: int, confidence: float) -> bool:
    """Whether paired differences summing to ``total`` (squares summing to ``squares``) over
    ``rounds`` samples have a mean at least ``confidence`` standard errors above zero."""
    if rounds < 2 or total <= 0:
        return False
    mean = total / rounds
    variance = max(squares / rounds - mean * mean, 0.0) * rounds / (rounds - 1)
    return variance == 0.0 or mean >= confidence * math.sqrt(variance / rounds)


if __name__ == "__main__":
    serve(MonteCarloBot())
