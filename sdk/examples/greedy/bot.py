"""A one-ply heuristic bot: go out when possible, else cover with the cheapest card (a
non-trump of the same suit before any trump), lead the lowest non-trump, and take only
when nothing covers. See :func:`sdk.strategy.greedy_action`."""

from __future__ import annotations

from referee.rules import Action, View
from sdk import Bot, serve
from sdk.strategy import greedy_action


class GreedyBot(Bot):
    """Deterministic: the same view always gets the same action."""

    def act(self, view: View) -> Action:
        return greedy_action(view.legal_actions, view.trump)


if __name__ == "__main__":
    serve(GreedyBot())
