"""Plays a uniformly random legal action: the baseline every bot should beat (both rulesets)."""

from __future__ import annotations

import random
from typing import ClassVar

from referee.rules import Action, ClassicAction, ClassicView, View
from sdk import Bot, serve


class RandomBot(Bot):
    """Chooses uniformly among the legal actions, in the default game and at a classic table."""

    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def act(self, view: View) -> Action:
        return self.rng.choice(view.legal_actions)

    def act_table(self, view: ClassicView) -> ClassicAction:
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(RandomBot())
