"""Test fixture: plays a game well, then exits as soon as it is told the game ended."""

import os

from sdk import Bot, serve


class ExitsAfterGame(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        return view.legal_actions[0]

    def on_game_end(self, result):  # type: ignore[no-untyped-def]
        os._exit(0)


if __name__ == "__main__":
    serve(ExitsAfterGame())
