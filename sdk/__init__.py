"""The Kryt Arena bot SDK: write one method, serve it, test it.

    from sdk import Bot, serve

    class MyBot(Bot):
        def act(self, view):
            return view.legal_actions[0]

    if __name__ == "__main__":
        serve(MyBot())

See docs/writing-a-bot.md. Everything here needs only grpcio and protobuf. A bot's runtime
(the sandbox image) carries only ``sdk``, ``kryt_proto`` and ``referee``: importing ``sdk``
must not import ``sandbox`` (``sdk.check`` and ``sdk.template``, the author's tools, may).
"""

from referee.rules import Action, ActionKind, Card, Game, Rank, Suit, View
from sdk.bot import Bot, GameContext, GameResult, SeriesInfo
from sdk.local import SeriesResult, next_dealer, play_local
from sdk.messages import PROTOCOL_VERSION, Clock, GameEndReason, SeriesScore, TimeControl
from sdk.server import BotServer, serve
from sdk.sim import sample_game, sample_hidden
from sdk.tracker import CardTracker

__all__ = [
    "PROTOCOL_VERSION",
    "Action",
    "ActionKind",
    "Bot",
    "BotServer",
    "Card",
    "CardTracker",
    "Clock",
    "Game",
    "GameContext",
    "GameEndReason",
    "GameResult",
    "Rank",
    "SeriesInfo",
    "SeriesResult",
    "SeriesScore",
    "Suit",
    "TimeControl",
    "View",
    "next_dealer",
    "play_local",
    "sample_game",
    "sample_hidden",
    "serve",
]
