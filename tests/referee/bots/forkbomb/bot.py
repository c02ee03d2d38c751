"""Test fixture: forks without end when asked to move (children spin forever)."""

import os

from sdk import Bot, serve


class ForkBomb(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        while True:
            try:
                os.fork()
            except OSError:
                continue


if __name__ == "__main__":
    serve(ForkBomb())
