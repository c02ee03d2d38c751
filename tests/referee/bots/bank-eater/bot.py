"""Test fixture: each move overruns the move limit by 0.4 s, eating the bank until it is gone."""

import time

from sdk import Bot, serve


class BankEater(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        assert self.clock is not None
        time.sleep(self.clock.move_ms / 1000 + 0.4)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(BankEater())
