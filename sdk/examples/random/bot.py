"""Plays a uniformly random legal action: the baseline every bot should beat."""

from __future__ import annotations

import random

from referee.rules import Action, View
from sdk import Bot, serve


class RandomBot(Bot):
    """Chooses uniformly among the legal actions."""

    def __init__(self, seed: int | str | None = None) -> None:
        self.rng = random.Random(seed)

    def act(self, view: View) -> Action:
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(RandomBot())
