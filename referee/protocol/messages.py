"""The protocol's messages as plain Python values (the wire form: :mod:`referee.protocol.wire`).

Both sides speak these types: the SDK's server turns referee messages into calls on a
:class:`~sdk.bot.Bot`, and the referee builds them from its own game. Field meanings are
documented once, in ``proto/kryt/v1/bot.proto`` and ``docs/protocol.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from referee.rules import (
    DEFAULT_RULESET,
    Action,
    Card,
    ClassicAction,
    ClassicEndReason,
    ClassicView,
    EndReason,
    View,
)

PROTOCOL_VERSION: Final = 1
"""The protocol version spoken by this SDK; both ends must use the same number."""

MAX_REQUEST_BYTES: Final = 4 * 1024 * 1024
"""Size limit of a message from the referee to a bot: gRPC's default receive limit in every
language, so a bot accepts it with no setting. Every view fits: the longest list of legal
actions (a classic table, four sixes led to a defender holding the other 32 cards: 24,592
covers) is ~745 KiB, and a history at the highest turn limit (100,000 actions) at most
~3.2 MB. A message over it is not sent: the game is voided (the referee's failure)."""

MAX_REPLY_BYTES: Final = 64 * 1024
"""Size limit of a message from a bot to the referee (replies are tiny; more is a malformed
reply)."""

HANDSHAKE_SECONDS: Final = 10.0
"""How long a bot has to answer the Handshake: the same in tournaments, ``kryt play``, the
ladder and every checker, so that a bot the checker passes is not refused by the arena."""


class GameEndReason(Enum):
    """How a game ended: the one vocabulary of the referee, the wire, the database and the web.

    The rules' endings (``OUT``, ``DRAW_BY_FINAL_ANSWER``, ``TURN_LIMIT``), the forfeits (one
    bot misbehaved and lost), ``DOUBLE_FORFEIT`` (neither bot could be started: scored as a
    draw) and ``VOID`` (a failure on our side: the game does not count and is replayed).
    """

    OUT = "out"
    DRAW_BY_FINAL_ANSWER = "draw by final answer"
    TURN_LIMIT = "turn limit"
    LAST_HOLDER = "last holder"
    """Classic table: the stock is empty and one player still holds cards; he lost."""
    ALL_OUT = "all out"
    """Classic table: the last lead was covered with the defender's last cards; a draw."""
    TIMEOUT = "timeout"
    """No reply within the time the clock allowed."""
    ILLEGAL_ACTION = "illegal action"
    """A well-formed action that is not in the referee's legal list."""
    MALFORMED_REPLY = "malformed reply"
    """A reply that is not an action at all, or breaks the protocol (unasked, twice, wrong id)."""
    CRASH = "crash"
    """The bot crashed, hung up, reported an error, or the connection was lost."""
    STARTUP_FAILURE = "startup failure"
    """The bot could not be started (or restarted), or its handshake was refused."""
    MEMORY_LIMIT = "memory limit"
    """The sandbox killed the bot for using too much memory."""
    PROCESS_LIMIT = "process limit"
    """The sandbox's process limit stopped the bot."""
    DISK_LIMIT = "disk limit"
    """The bot exceeded the sandbox's file-size or disk limit."""
    DOUBLE_FORFEIT = "double forfeit"
    """Neither bot could be started, attempt after attempt: a draw nobody can win."""
    VOID = "void"
    """A failure on the referee's side: the game does not count and is replayed."""

    @classmethod
    def from_rules(cls, reason: EndReason | ClassicEndReason) -> GameEndReason:
        """The ending of a game played out under the rules (either ruleset)."""
        if isinstance(reason, ClassicEndReason):
            return _CLASSIC_ENDINGS[reason]
        return cls[reason.name]

    @property
    def is_forfeit(self) -> bool:
        """True when one bot lost by misbehaving rather than by playing."""
        return self in FORFEITS

    @property
    def counts(self) -> bool:
        """True for every ending but ``VOID`` (a voided game is replayed)."""
        return self is not GameEndReason.VOID


_CLASSIC_ENDINGS: Final = {
    ClassicEndReason.LAST_HOLDER: GameEndReason.LAST_HOLDER,
    ClassicEndReason.ALL_OUT: GameEndReason.ALL_OUT,
    ClassicEndReason.TURN_LIMIT: GameEndReason.TURN_LIMIT,
}

FORFEITS: Final = frozenset(
    {
        GameEndReason.TIMEOUT,
        GameEndReason.ILLEGAL_ACTION,
        GameEndReason.MALFORMED_REPLY,
        GameEndReason.CRASH,
        GameEndReason.STARTUP_FAILURE,
        GameEndReason.MEMORY_LIMIT,
        GameEndReason.PROCESS_LIMIT,
        GameEndReason.DISK_LIMIT,
    }
)
"""The endings in which one bot (the offender) lost by misbehaving."""


DEFAULT_GRACE_MS: Final = 50
"""Transport allowance per game (ms), far above the measured round trip (about 1 ms, 3 ms at
p99 on a loaded machine): it absorbs jitter, it is not thinking time (see GameClock)."""

MAX_TIME_MS: Final = 24 * 3600 * 1000
"""Upper bound of every time setting (a day): larger values are surely a mistake."""


CLOCKS: Final = ("wall", "cpu")
"""The clocks a time control may charge moves on (see :class:`TimeControl`)."""

CPU_CLOCK_WALL_FACTOR: Final = 4
"""Under the CPU clock a move still has a hard wall-time limit: this many times its CPU
allowance (a bot that sleeps or waits is not charged, but cannot stall a game)."""


class TimeControlError(ValueError):
    """A time control setting is out of range (the message names it and its value)."""


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Limits for one seat in one game, in milliseconds (each seat may have its own).

    A move may take ``move_ms``; time beyond that is taken from the seat's bank, which starts
    each game at ``bank_ms``, and once the bank is empty from a per-game transport allowance
    of ``grace_ms``. Past all three the move is a timeout. After each of its moves the seat's
    bank grows by ``increment_ms`` (Fischer style, as cutechess ``tc=40+0.4``). The wire
    carries all five (``TimeControl`` in the proto); a message from a referee that predates
    ``grace_ms`` and ``clock`` decodes to :data:`DEFAULT_GRACE_MS` and ``wall``.
    """

    move_ms: int = 1000
    bank_ms: int = 10_000
    grace_ms: int = DEFAULT_GRACE_MS
    clock: str = "wall"
    """What a move is charged: ``wall`` (the time from request to reply, as the referee
    measures it) or ``cpu`` (the CPU time of the bot's whole process tree, as its sandbox
    accounts it; where a sandbox cannot measure it, the wall time)."""
    increment_ms: int = 0
    """Added to the seat's bank after each of its moves (0: no increment)."""

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise TimeControlError(f"clock must be one of {list(CLOCKS)}, got {self.clock!r}")
        for name in ("move_ms", "bank_ms", "grace_ms", "increment_ms"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= MAX_TIME_MS:
                raise TimeControlError(
                    f"{name} must be a whole number of milliseconds in [0, {MAX_TIME_MS}],"
                    f" got {value!r}"
                )
        if self.move_ms < 1:
            raise TimeControlError(f"move_ms must be at least 1, got {self.move_ms!r}")

    @classmethod
    def from_seconds(
        cls,
        move: float,
        bank: float,
        grace: float = DEFAULT_GRACE_MS / 1000,
        clock: str = "wall",
        increment: float = 0.0,
    ) -> TimeControl:
        """A time control from seconds (as configuration files and flags give them)."""
        values = {
            "move_seconds": move,
            "bank_seconds": bank,
            "grace_seconds": grace,
            "increment_seconds": increment,
        }
        ms = {}
        for name, value in values.items():
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= MAX_TIME_MS / 1000
            ):
                raise TimeControlError(
                    f"{name} must be a number of seconds in [0, {MAX_TIME_MS // 1000}],"
                    f" got {value!r}"
                )
            ms[name] = round(value * 1000)
        return cls(
            ms["move_seconds"],
            ms["bank_seconds"],
            ms["grace_seconds"],
            clock,
            ms["increment_seconds"],
        )

    @property
    def move_seconds(self) -> float:
        """``move_ms`` in seconds."""
        return self.move_ms / 1000

    @property
    def bank_seconds(self) -> float:
        """``bank_ms`` in seconds."""
        return self.bank_ms / 1000

    @property
    def grace_seconds(self) -> float:
        """``grace_ms`` in seconds."""
        return self.grace_ms / 1000

    @property
    def increment_seconds(self) -> float:
        """``increment_ms`` in seconds."""
        return self.increment_ms / 1000


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
    ruleset: str = DEFAULT_RULESET
    """``default`` (the two-player game) or ``classic`` (the table of 2-4 seats)."""
    players: int = 2
    """Seats at the table."""
    seat_names: tuple[str, ...] = ()
    """Tables: every seat's bot name, seat 0 first (empty for the default game)."""
    seat: int = 0
    """Tables: the recipient's seat for the whole series."""


@dataclass(frozen=True, slots=True)
class HandshakeReply:
    """Bot → referee, the answer to :class:`Handshake`."""

    protocol_version: int
    name: str
    version: str
    sdk: str
    rulesets: tuple[str, ...] = ()
    """The rulesets the bot plays; empty means the default game only."""

    def plays(self, ruleset: str) -> bool:
        """True when the bot says it plays ``ruleset``."""
        return ruleset in (self.rulesets or (DEFAULT_RULESET,))


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
    ruleset: str = DEFAULT_RULESET
    """As in :class:`Handshake`."""
    players: int = 2
    """As in :class:`Handshake`."""
    seat_names: tuple[str, ...] = ()
    """As in :class:`Handshake`."""


AnyView = View | ClassicView
"""A view of either ruleset: the default game's :class:`View` or a table's ClassicView."""

AnyAction = Action | ClassicAction
"""An action of either ruleset."""


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """Referee → bot: it is the bot's turn. The reply must echo ``request_id``."""

    request_id: int
    game_number: int
    view: AnyView
    clock: Clock


@dataclass(frozen=True, slots=True)
class Decision:
    """Bot → referee: the chosen action, as text or structured (the referee checks it)."""

    request_id: int
    action: str | AnyAction


@dataclass(frozen=True, slots=True)
class GameEnd:
    """Referee → bot after each game (no reply). ``winner`` is ``None`` on a draw or void,
    and at a table of more than two (see ``loser``)."""

    game_number: int
    winner: int | None
    reason: GameEndReason | None
    """``None``: an ending this version does not know (a newer referee's; the game is over)."""
    detail: str
    view: AnyView | None
    deck: tuple[Card, ...]
    score: SeriesScore
    loser: int | None = None
    """Tables: the seat that lost (``None`` on a draw or void)."""


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
