"""A one-ply heuristic bot: go out when possible, else cover with the cheapest card (a
non-trump of the same suit before any trump), lead the lowest non-trump, and take only
when nothing covers. At a classic table the same idea: cover when possible with the cheapest
cards, lead the lowest non-trump rank with all its cards. See :mod:`sdk.strategy`."""

from __future__ import annotations

from typing import ClassVar

from referee.rules import Action, ClassicAction, ClassicView, View
from sdk import Bot, serve
from sdk.strategy import greedy_action, greedy_table_action


class GreedyBot(Bot):
    """Deterministic: the same view always gets the same action."""

    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view: View) -> Action:
        return greedy_action(view.legal_actions, view.trump)

    def act_table(self, view: ClassicView) -> ClassicAction:
        return greedy_table_action(view.legal_actions, view.trump)


if __name__ == "__main__":
    serve(GreedyBot())
