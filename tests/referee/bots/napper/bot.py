"""Test fixture: waits 1 s (asleep, using no CPU) before every move."""

import time

from sdk import Bot, serve


class Napper(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        time.sleep(1.0)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Napper())
