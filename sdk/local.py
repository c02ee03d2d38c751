"""Series between two bots without gRPC (``play_local``), and the series runner shared with
:func:`sdk.check.check_bot`.

Both are thin layers over the referee's own loop (:func:`referee.series.run_series`): the same
time control, forfeits, and sequencing (the first dealer drawn from the series seed, then the
loser deals, and after a draw the same dealer deals again; rules.md, Series).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from referee.match import Player, end_reason
from referee.outcomes import ForfeitReason
from referee.rules import DEFAULT_TURN_LIMIT, View
from referee.series import (
    BotStartError,
    SeriesConfig,
    first_dealer,
    game_seed,
    next_dealer,
)
from referee.series import run_series as referee_series
from referee.timecontrol import TimeControl as RefereeTimeControl
from sdk.bot import Bot
from sdk.client import BotCrashedError, BotFault, Reply
from sdk.driver import BotDriver
from sdk.messages import (
    BotError,
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from sdk.server import bot_identity

__all__ = [
    "DEFAULT_TIME_CONTROL",
    "GameRecord",
    "LocalPlayer",
    "Player",
    "SeriesResult",
    "first_dealer",
    "game_seed",
    "next_dealer",
    "play_local",
    "run_series",
]

DEFAULT_TIME_CONTROL: Final = TimeControl(move_ms=1000, bank_ms=10_000)
TRANSPORT_GRACE: Final = 0.05
"""Seconds added to a move's hard deadline for the transport (not charged to the bot)."""


class LocalPlayer:
    """A bot object played in-process (no gRPC, no time limit enforced)."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.name, version = bot_identity(bot)
        self._driver = BotDriver(bot, name=self.name, version=version)
        self._ids = 0

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        reply = self._driver.handle(handshake)
        if not isinstance(reply, HandshakeReply):
            raise BotCrashedError(f"{self.name}: handshake failed: {reply!r}")
        return reply

    def send(self, message: RefereeMessage) -> None:
        reply = self._driver.handle(message)
        if isinstance(reply, BotError):
            raise BotCrashedError(f"{self.name}: {reply.message}", reply.message)

    def decide(self, view: View, clock: Clock, game_number: int, timeout: float) -> Reply:
        self._ids += 1
        start = time.monotonic()
        request = DecisionRequest(self._ids, game_number, view, clock)
        reply = self._driver.handle(request, start)
        elapsed = time.monotonic() - start
        if isinstance(reply, Decision):
            return Reply(action=reply.action, elapsed=elapsed, request_id=self._ids)
        message = reply.message if isinstance(reply, BotError) else repr(reply)
        raise BotCrashedError(f"{self.name}: {message}", message)


@dataclass(frozen=True, slots=True)
class GameRecord:
    """One finished game of a series; seats are the order the players were given in."""

    game_number: int
    dealer: int
    winner: int | None
    reason: GameEndReason
    actions: tuple[str, ...]
    detail: str = ""
    times: tuple[float, ...] = ()
    """Seconds each action took to arrive, in the order of ``actions``."""


@dataclass(slots=True)
class SeriesResult:
    """Games of a series between ``names[0]`` (seat 0) and ``names[1]`` (seat 1)."""

    names: tuple[str, str]
    seed: int | str
    games: list[GameRecord] = field(default_factory=list)

    def score(self, seat: int = 0) -> SeriesScore:
        """Wins, draws and losses of ``seat``."""
        wins = sum(1 for g in self.games if g.winner == seat)
        losses = sum(1 for g in self.games if g.winner == 1 - seat)
        return SeriesScore(wins=wins, draws=len(self.games) - wins - losses, losses=losses)

    @property
    def forfeits(self) -> list[GameRecord]:
        """Games lost by a forfeit (timeout, illegal or malformed reply, crash)."""
        return [g for g in self.games if g.reason.is_forfeit]

    def points(self, seat: int = 0) -> float:
        """Win = 1, draw = 1/2."""
        s = self.score(seat)
        return s.wins + s.draws / 2

    def __str__(self) -> str:
        s = self.score(0)
        return (
            f"{self.names[0]} vs {self.names[1]}: +{s.wins} ={s.draws} -{s.losses}"
            f" over {len(self.games)} games (seed {self.seed!r})"
        )


MoveHook = Callable[[int, int, Reply], None]
"""Called as ``hook(game_number, seat, reply)`` after each reply (for timing reports)."""


class _Seat:
    """A player that is already running, as a referee bot slot: handshaken once, never
    restarted (a local bot object, or a connection the caller manages)."""

    def __init__(self, player: Player, on_move: MoveHook | None, seat: int) -> None:
        self.name = player.name
        self._player = player
        self._on_move = on_move
        self._seat = seat
        self._handshaken = False

    def player(self, handshake: Handshake) -> Player:
        if not self._handshaken:
            try:
                self._player.handshake(handshake)
            except BotFault as exc:
                raise BotStartError(f"{self.name}: {exc}") from None
            self._handshaken = True
        return self

    def send(self, message: RefereeMessage) -> None:
        self._player.send(message)

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        return self._player.handshake(handshake)

    def decide(self, view: View, clock: Clock, game_number: int, timeout: float) -> Reply:
        reply = self._player.decide(view, clock, game_number, timeout)
        if self._on_move is not None:
            self._on_move(game_number, self._seat, reply)
        return reply

    def diagnose(self) -> ForfeitReason | None:
        return None

    def close(self) -> None:
        """The caller owns the player."""


def run_series(
    players: Sequence[Player],
    games: int,
    seed: int | str,
    *,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    turn_limit: int = DEFAULT_TURN_LIMIT,
    on_move: MoveHook | None = None,
) -> SeriesResult:
    """Play ``games`` games between ``players[0]`` (seat 0) and ``players[1]`` (seat 1) with the
    referee's own loop: the engine decides legality and the end; a bot that fails (timeout,
    bank exhausted, illegal or malformed reply, crash) loses that game by forfeit."""
    if len(players) != 2:
        raise ValueError(f"a series needs exactly two players, got {len(players)}")
    if games < 1:
        raise ValueError(f"a series needs at least one game, got {games!r}")
    config = SeriesConfig(
        games=games,
        seed=seed,
        time_control=RefereeTimeControl(
            move_seconds=time_control.move_ms / 1000,
            bank_seconds=time_control.bank_ms / 1000,
            grace_seconds=TRANSPORT_GRACE,
        ),
        turn_limit=turn_limit,
    )
    seats = (_Seat(players[0], on_move, 0), _Seat(players[1], on_move, 1))
    played = referee_series(config, seats)
    result = SeriesResult(names=(players[0].name, players[1].name), seed=seed)
    for number, record in sorted(played.games.items()):
        result.games.append(
            GameRecord(
                game_number=number,
                dealer=record.dealer,
                winner=record.winner,
                reason=end_reason(record),
                actions=tuple(m.action for m in record.moves),
                detail=record.forfeit.detail if record.forfeit else record.void_reason,
                times=tuple(m.seconds for m in record.moves),
            )
        )
    return result


def play_local(
    bot_a: Bot,
    bot_b: Bot,
    games: int = 10,
    seed: int | str = 0,
    *,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    turn_limit: int = DEFAULT_TURN_LIMIT,
) -> SeriesResult:
    """Play a series in-process: ``bot_a`` in seat 0, ``bot_b`` in seat 1 (use two objects).

    The first dealer comes from ``seed``, then the loser deals (see :func:`next_dealer`);
    game ``n`` is dealt from ``game_seed(seed, n)``. Exceptions in a bot's code and illegal
    actions are forfeits recorded in the result (and tracebacks go to stderr).
    """
    if bot_a is bot_b:
        raise ValueError("play_local needs two bot objects (each keeps its own game context)")
    players = (LocalPlayer(bot_a), LocalPlayer(bot_b))
    return run_series(players, games, seed, time_control=time_control, turn_limit=turn_limit)
