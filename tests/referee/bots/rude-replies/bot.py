"""Test fixture: breaks the protocol's turn-taking: replies twice (``double-...``) or before
it is asked (``early-...``), by the first word of its name in bot.toml."""

import time
import tomllib
from pathlib import Path

from referee.protocol.messages import Decision
from referee.protocol.wire import encode_bot_message
from sdk import Bot
from sdk.server import BotServer, resolve_address

MANIFEST = tomllib.loads((Path(__file__).parent / "bot.toml").read_text())
MODE = MANIFEST["name"].split("-")[0]


class First(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        return view.legal_actions[0]


class RudeServer(BotServer):
    async def _play(self, requests, context):  # type: ignore[no-untyped-def]
        # The first reply is the handshake's; every later one answers a decision request.
        index = -1
        async for item in super()._play(requests, context):
            index += 1
            yield item
            if index == 0 and MODE == "early":
                yield encode_bot_message(Decision(request_id=10**9, action="take"))
            if index > 0 and MODE == "double":
                yield item


if __name__ == "__main__":
    server = RudeServer(First(), resolve_address())
    server.start()
    while not server.wait(0.5):
        time.sleep(0)
    server.stop()
