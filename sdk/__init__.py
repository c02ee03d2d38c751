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

from typing import TYPE_CHECKING, Any

from referee.rules import Action, ActionKind, Card, Game, Rank, Suit, View
from sdk.bot import Bot, GameContext, GameResult, SeriesInfo
from sdk.messages import PROTOCOL_VERSION, Clock, GameEndReason, SeriesScore, TimeControl
from sdk.server import BotServer, serve
from sdk.sim import sample_game, sample_hidden
from sdk.tracker import CardTracker

if TYPE_CHECKING:
    from sdk.local import SeriesResult, next_dealer, play_local

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


_LAZY = {"SeriesResult", "next_dealer", "play_local"}


def __getattr__(name: str) -> Any:
    # sdk.local runs the referee's own series loop, which imports sdk.client: loading it on
    # first use keeps ``import sdk.client`` (by the referee) free of an import cycle.
    if name in _LAZY:
        from sdk import local

        return getattr(local, name)
    raise AttributeError(f"module 'sdk' has no attribute {name!r}")
