"""Test fixture: sleeps far past the deadline on its third move of every game."""

import time

from sdk import Bot, serve


class Sleeper(Bot):
    moves = 0

    def on_game_start(self, game: object) -> None:
        self.moves = 0

    def act(self, view):  # type: ignore[no-untyped-def]
        self.moves += 1
        if self.moves == 3:
            time.sleep(30)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Sleeper())
