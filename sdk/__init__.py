"""The Kryt Arena bot runtime: write one method, serve it.

    from sdk import Bot, serve

    class MyBot(Bot):
        def act(self, view):
            return view.legal_actions[0]

    if __name__ == "__main__":
        serve(MyBot())

See docs/writing-a-bot.md. Everything here needs only grpcio and protobuf, and imports only
the rules core (``referee.rules``) and the protocol (``referee.protocol``, ``kryt_proto``):
that is all a bot's sandbox carries. The author's tools that run the referee against a bot
(``play_local``, ``check_bot``, ``new_bot``) live in :mod:`sdk.tools`.
"""

from referee.protocol.messages import (
    PROTOCOL_VERSION,
    Clock,
    GameEndReason,
    SeriesScore,
    TimeControl,
)
from referee.rules import (
    Action,
    ActionKind,
    Card,
    ClassicAction,
    ClassicActionKind,
    ClassicGame,
    ClassicView,
    Game,
    Rank,
    Suit,
    View,
)
from sdk.bot import Bot, GameContext, GameResult, SeriesInfo
from sdk.server import BotServer, serve
from sdk.sim import sample_game, sample_hidden, sample_table_game, sample_table_hidden
from sdk.tracker import CardTracker, TableTracker

__all__ = [
    "PROTOCOL_VERSION",
    "Action",
    "ActionKind",
    "Bot",
    "BotServer",
    "Card",
    "CardTracker",
    "ClassicAction",
    "ClassicActionKind",
    "ClassicGame",
    "ClassicView",
    "Clock",
    "Game",
    "GameContext",
    "GameEndReason",
    "GameResult",
    "Rank",
    "SeriesInfo",
    "SeriesScore",
    "Suit",
    "TableTracker",
    "TimeControl",
    "View",
    "sample_game",
    "sample_hidden",
    "sample_table_game",
    "sample_table_hidden",
    "serve",
]
