"""A deterministic bot for the kill/resume review: its action is a pure function of what
it sees (a CRC of its view), so a game replayed with the same deal and dealer is the same
game, whether the bot process is new or not. It thinks 10 ms a move, so that a run can
be stopped in the middle of a series."""

from __future__ import annotations

import time
import tomllib
import zlib
from pathlib import Path

from referee.rules import Action, View
from sdk import Bot, serve

# A copy of this bot under another name plays otherwise.
SALT = tomllib.loads((Path(__file__).parent / "bot.toml").read_text())["name"]


class HashBot(Bot):
    def act(self, view: View) -> Action:
        time.sleep(0.01)
        seen = f"{SALT}|{view.hand}|{view.pile}|{view.history}"
        return view.legal_actions[zlib.crc32(seen.encode()) % len(view.legal_actions)]


if __name__ == "__main__":
    serve(HashBot())
