"""Turns protocol messages into calls on a :class:`~sdk.bot.Bot` (shared by the gRPC server
and by anything else that feeds a bot with messages)."""

from __future__ import annotations

import os
import sys
import time
import traceback

from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotError,
    BotMessage,
    Decision,
    DecisionRequest,
    GameEnd,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    Shutdown,
)
from referee.rules import Action, ClassicAction, ClassicView
from sdk.bot import Bot, GameResult, SeriesInfo

SDK_VERSION = "kryt-sdk-python 0.1.0"


_SDK_FOLDER = os.path.dirname(os.path.abspath(__file__))


def where_raised(exc: BaseException) -> str:
    """`` at bot.py:12 in act``: the innermost frame of ``exc``'s traceback (file name only),
    so that a forfeit's one-line detail points at the line that failed. A frame of the SDK
    itself is named by its place in it (``sdk/bot.py``): the author's own file is often
    called ``bot.py`` too."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    path = os.path.abspath(last.filename)
    in_sdk = os.path.dirname(path) == _SDK_FOLDER  # its modules, not the example bots'
    if in_sdk or path.startswith(os.path.join(_SDK_FOLDER, "tools", "")):
        name = "sdk/" + os.path.relpath(path, _SDK_FOLDER).replace(os.sep, "/")
    else:
        name = os.path.basename(last.filename)
    return f" at {name}:{last.lineno} in {last.name}"


class BotDriver:
    """Feeds one bot with the messages of one stream and returns its replies.

    An exception in the bot's code becomes a :class:`BotError` (with the traceback printed
    to stderr for the author): the referee counts that as a crash, sooner than a timeout.
    """

    def __init__(self, bot: Bot, *, name: str, version: str) -> None:
        self.bot = bot
        self.name = name
        self.version = version
        self._seat = 0

    def handle(
        self, message: RefereeMessage, received_at: float | None = None
    ) -> BotMessage | None:
        """The reply to ``message``, or ``None`` when the protocol expects none."""
        try:
            return self._handle(message, time.monotonic() if received_at is None else received_at)
        except Exception as exc:  # the bot's own code failed: tell the referee, keep serving
            traceback.print_exc(file=sys.stderr)
            return BotError(
                f"{type(message).__name__}: {type(exc).__name__}: {exc}{where_raised(exc)}"
            )

    def _handle(self, message: RefereeMessage, received_at: float) -> BotMessage | None:
        bot = self.bot
        match message:
            case DecisionRequest():
                bot.start_move(message.clock, received_at)
                view = message.view
                choice: object = (
                    bot.act_table(view) if isinstance(view, ClassicView) else bot.act(view)
                )
                if isinstance(choice, Action | ClassicAction):
                    text = str(choice)
                elif isinstance(choice, str):
                    text = choice
                else:
                    hook = "act_table" if isinstance(view, ClassicView) else "act"
                    return BotError(f"{hook}() returned {choice!r}; expected an action or its text")
                return Decision(request_id=message.request_id, action=text)
            case Handshake():
                if message.protocol_version != PROTOCOL_VERSION:
                    print(
                        f"kryt sdk: referee speaks protocol {message.protocol_version}, this SDK"
                        f" speaks {PROTOCOL_VERSION}; the referee will refuse the bot",
                        file=sys.stderr,
                    )
                bot.series = SeriesInfo(
                    opponent_name=message.opponent_name,
                    games=message.games,
                    time_control=message.time_control,
                    referee_version=message.referee_version,
                    protocol_version=message.protocol_version,
                    ruleset=message.ruleset,
                    players=message.players,
                    seat_names=message.seat_names,
                    seat=message.seat,
                )
                bot.on_handshake(bot.series)
                return HandshakeReply(
                    protocol_version=PROTOCOL_VERSION,
                    name=self.name,
                    version=self.version,
                    sdk=SDK_VERSION,
                    rulesets=tuple(bot.rulesets),
                )
            case GameStart():
                self._seat = message.seat
                bot.context = message
                bot.clock = None
                bot.on_game_start(bot.context)
                return None
            case GameEnd():
                bot.on_game_end(
                    GameResult(
                        game_number=message.game_number,
                        seat=self._seat,
                        winner=message.winner,
                        reason=message.reason,
                        detail=message.detail,
                        view=message.view,
                        deck=message.deck,
                        score=message.score,
                        loser=message.loser,
                    )
                )
                bot.context = None
                return None
            case Shutdown():
                return None
        return BotError(f"unknown referee message {message!r}")
