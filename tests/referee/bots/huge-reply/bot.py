"""Test fixture: replies with a 100 MB action (its own server lets it send that much)."""

import time

import sdk.server
from sdk import Bot
from sdk.server import BotServer, resolve_address

# Lift the SDK's own send limit so that the referee's receive limit is what is tested.
sdk.server.GRPC_OPTIONS[:] = [("grpc.max_send_message_length", -1)]


class Huge(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        return "take" + " " * (100 * 1024 * 1024)


if __name__ == "__main__":
    server = BotServer(Huge(), resolve_address())
    server.start()
    while not server.wait(0.5):
        time.sleep(0)
    server.stop()
