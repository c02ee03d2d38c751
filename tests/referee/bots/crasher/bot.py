"""Test fixture: the process dies in the middle of the first game (the restart is healthy)."""

import os

from sdk import Bot, serve


class Crasher(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        if self.context is not None and self.context.game_number == 1 and len(view.history) > 6:
            os._exit(3)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Crasher())
