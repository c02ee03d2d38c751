"""The protocol's messages as plain Python values (the wire form lives in :mod:`sdk.wire`).

Both sides speak these types: the SDK's server turns referee messages into calls on a
:class:`~sdk.bot.Bot`, and the referee builds them from its own game. Field meanings are
documented once, in ``proto/kryt/v1/bot.proto`` and ``docs/protocol.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from referee.rules import Card, EndReason, View

PROTOCOL_VERSION: Final = 1
"""The protocol version spoken by this SDK; both ends must use the same number."""

MAX_MESSAGE_BYTES: Final = 64 * 1024
"""Size limit of one message in either direction (the largest possible view, with a
1000-action history and a huge hand, is about 30 KiB)."""


class GameEndReason(Enum):
    """Why a game ended: the rules' endings, forfeits (the offender loses), or a void game."""

    OUT = "out"
    DRAW_BY_FINAL_ANSWER = "draw by final answer"
    TURN_LIMIT = "turn limit"
    TIMEOUT = "timeout"
    ILLEGAL_ACTION = "illegal action"
    MALFORMED_REPLY = "malformed reply"
    CRASH = "crash"
    SANDBOX_LIMIT = "sandbox limit"
    VOID = "void"

    @classmethod
    def from_rules(cls, reason: EndReason) -> GameEndReason:
        """The protocol's name for an ending under the rules."""
        return cls[reason.name]

    @property
    def is_forfeit(self) -> bool:
        """True when a bot lost by misbehaving rather than by playing."""
        return self in _FORFEITS


_FORFEITS: Final = frozenset(
    {
        GameEndReason.TIMEOUT,
        GameEndReason.ILLEGAL_ACTION,
        GameEndReason.MALFORMED_REPLY,
        GameEndReason.CRASH,
        GameEndReason.SANDBOX_LIMIT,
    }
)


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Per-move limit and per-game bank of a series, in milliseconds."""

    move_ms: int
    bank_ms: int


@dataclass(frozen=True, slots=True)
class Clock:
    """The clock for one move: ``move_ms`` for this move, then ``bank_ms`` of bank left."""

    move_ms: int
    bank_ms: int

    @property
    def hard_limit_ms(self) -> int:
        """Beyond this the move is a timeout (the referee adds only a small transport grace)."""
        return self.move_ms + self.bank_ms


@dataclass(frozen=True, slots=True)
class SeriesScore:
    """Games won, drawn and lost so far, seen from one bot."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    def flipped(self) -> SeriesScore:
        """The same score seen from the other bot."""
        return SeriesScore(wins=self.losses, draws=self.draws, losses=self.wins)


@dataclass(frozen=True, slots=True)
class Handshake:
    """Referee → bot, first on every stream."""

    protocol_version: int
    referee_version: str
    games: int
    opponent_name: str
    time_control: TimeControl


@dataclass(frozen=True, slots=True)
class HandshakeReply:
    """Bot → referee, the answer to :class:`Handshake`."""

    protocol_version: int
    name: str
    version: str
    sdk: str


@dataclass(frozen=True, slots=True)
class GameStart:
    """Referee → bot before each game (no reply)."""

    game_number: int
    seat: int
    dealer: int
    score: SeriesScore
    opponent_name: str
    time_control: TimeControl
    turn_limit: int


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """Referee → bot: it is the bot's turn. The reply must echo ``request_id``."""

    request_id: int
    game_number: int
    view: View
    clock: Clock


@dataclass(frozen=True, slots=True)
class Decision:
    """Bot → referee: the chosen action as text (not checked here: the referee checks it)."""

    request_id: int
    action: str


@dataclass(frozen=True, slots=True)
class GameEnd:
    """Referee → bot after each game (no reply). ``winner`` is ``None`` on a draw or void."""

    game_number: int
    winner: int | None
    reason: GameEndReason
    detail: str
    view: View | None
    deck: tuple[Card, ...]
    score: SeriesScore


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Referee → bot: the series is over; close the stream and exit."""

    reason: str


@dataclass(frozen=True, slots=True)
class BotError:
    """Bot → referee: the bot cannot go on; counted as a crash."""

    message: str


RefereeMessage = Handshake | GameStart | DecisionRequest | GameEnd | Shutdown
"""Anything the referee sends."""

BotMessage = HandshakeReply | Decision | BotError
"""Anything the bot sends."""
