"""Series between two bots without gRPC (``play_local``), and the small referee loop shared
with :func:`sdk.check.check_bot`.

Series sequencing lives in :func:`next_dealer`: the first dealer is drawn from the series
seed, then the loser deals, and after a draw the same dealer deals again (rules.md, Series).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from referee.rules import DEFAULT_TURN_LIMIT, Action, Game, InvalidActionError, View
from sdk.bot import Bot
from sdk.client import BotCrashedError, BotFault, Reply
from sdk.driver import BotDriver
from sdk.messages import (
    PROTOCOL_VERSION,
    BotError,
    Clock,
    Decision,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from sdk.server import bot_identity

DEFAULT_TIME_CONTROL: Final = TimeControl(move_ms=1000, bank_ms=10_000)
TRANSPORT_GRACE: Final = 0.05
"""Seconds added to a move's hard deadline for the transport (not charged to the bot)."""


def next_dealer(prev_dealer: int, outcome: int | None) -> int:
    """Dealer of the next game: the loser deals; after a draw the same dealer deals."""
    if outcome is None:
        return prev_dealer
    return 1 - outcome


def first_dealer(seed: int | str) -> int:
    """Dealer of a series' first game, drawn from the series seed."""
    return random.Random(f"{seed}:first-dealer").randrange(2)


def game_seed(seed: int | str, game_number: int) -> str:
    """Deck seed of game ``game_number`` (1-based) of a series, so that a series replays."""
    return f"{seed}:{game_number}"


class Player(Protocol):
    """One side of a series as the loop sees it: a local bot or a connection to one."""

    name: str

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Introduce the series; raises BotFault."""
        ...

    def send(self, message: RefereeMessage) -> None:
        """A message that gets no reply; raises BotFault."""
        ...

    def decide(self, view: View, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's action text for ``view``; raises BotFault."""
        ...


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


def _classify(text: str, game: Game) -> tuple[GameEndReason, str] | None:
    """None when ``text`` is a legal action now, else the forfeit reason and detail."""
    try:
        action = Action.parse(text)
    except InvalidActionError as exc:
        return GameEndReason.MALFORMED_REPLY, str(exc)
    if not game.is_legal(action):
        legal = ", ".join(str(a) for a in game.legal_actions()[:8])
        return GameEndReason.ILLEGAL_ACTION, f"illegal action {text!r} (legal: {legal}, ...)"
    return None


def run_series(
    players: Sequence[Player],
    games: int,
    seed: int | str,
    *,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    turn_limit: int = DEFAULT_TURN_LIMIT,
    on_move: MoveHook | None = None,
) -> SeriesResult:
    """Play ``games`` games between ``players[0]`` (seat 0) and ``players[1]`` (seat 1).

    A minimal referee: the engine decides legality and the end; a bot that fails (timeout,
    bank exhausted, illegal or malformed reply, crash) loses that game by forfeit.
    """
    if len(players) != 2:
        raise ValueError(f"a series needs exactly two players, got {len(players)}")
    if games < 1:
        raise ValueError(f"a series needs at least one game, got {games!r}")
    for seat, player in enumerate(players):
        player.handshake(
            Handshake(
                protocol_version=PROTOCOL_VERSION,
                referee_version="kryt-sdk local referee",
                games=games,
                opponent_name=players[1 - seat].name,
                time_control=time_control,
            )
        )
    # After the handshake: a remote player learns its name from the reply.
    result = SeriesResult(names=(players[0].name, players[1].name), seed=seed)
    dealer = first_dealer(seed)
    for number in range(1, games + 1):
        record = _play_game(
            players, number, dealer, seed, result, time_control, turn_limit, on_move
        )
        result.games.append(record)
        dealer = next_dealer(dealer, record.winner)
    return result


def _play_game(
    players: Sequence[Player],
    number: int,
    dealer: int,
    seed: int | str,
    result: SeriesResult,
    time_control: TimeControl,
    turn_limit: int,
    on_move: MoveHook | None,
) -> GameRecord:
    game = Game.new(seed=game_seed(seed, number), dealer=dealer, turn_limit=turn_limit)
    banks = [time_control.bank_ms / 1000.0] * 2
    times: list[float] = []
    forfeit: tuple[int, GameEndReason, str] | None = None
    for seat, player in enumerate(players):
        try:
            player.send(
                GameStart(
                    game_number=number,
                    seat=seat,
                    dealer=dealer,
                    score=result.score(seat),
                    opponent_name=players[1 - seat].name,
                    time_control=time_control,
                    turn_limit=turn_limit,
                )
            )
        except BotFault as exc:
            forfeit = (seat, exc.reason, str(exc))
            break
    move_s = time_control.move_ms / 1000.0
    while forfeit is None and not game.over:
        mover = game.to_move
        assert mover is not None
        seat = mover
        clock = Clock(move_ms=time_control.move_ms, bank_ms=int(banks[seat] * 1000))
        try:
            reply = players[seat].decide(
                game.view(seat), clock, number, move_s + banks[seat] + TRANSPORT_GRACE
            )
        except BotFault as exc:
            forfeit = (seat, exc.reason, str(exc))
            break
        if on_move is not None:
            on_move(number, seat, reply)
        banks[seat] -= max(0.0, reply.elapsed - move_s)
        if banks[seat] < 0:
            forfeit = (seat, GameEndReason.TIMEOUT, f"time bank exhausted ({reply.elapsed:.3f}s)")
            break
        problem = _classify(reply.action, game)
        if problem is not None:
            forfeit = (seat, *problem)
            break
        game.play(reply.action)
        times.append(reply.elapsed)
    if forfeit is not None:
        loser, reason, detail = forfeit
        winner: int | None = 1 - loser
    else:
        assert game.reason is not None
        winner, reason, detail = game.outcome, GameEndReason.from_rules(game.reason), ""
    record = GameRecord(
        game_number=number,
        dealer=dealer,
        winner=winner,
        reason=reason,
        actions=tuple(str(a) for a in game.history),
        detail=detail,
        times=tuple(times),
    )
    after = SeriesResult(names=result.names, seed=seed, games=[*result.games, record])
    for seat, player in enumerate(players):
        # A bot that failed to send GameEnd will fail its next request too, which is recorded.
        with contextlib.suppress(BotFault):
            player.send(
                GameEnd(
                    game_number=number,
                    winner=winner,
                    reason=reason,
                    detail=detail,
                    view=game.view(seat),
                    deck=game.deck or (),
                    score=after.score(seat),
                )
            )
    return record


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
