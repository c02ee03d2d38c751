"""Series between bots on the author's own machine: ``play_local`` (in-process, no gRPC) and
the series runner shared with :func:`sdk.tools.check.check_bot`.

Both are thin layers over the referee's own loop (:func:`referee.series.run_series`): the same
time control, forfeits, records and sequencing (the first dealer drawn from the series seed,
then the loser deals, and after a draw the same dealer deals again; rules.md, Series).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Final

from referee.book import Book
from referee.client import (
    BotCrashedError,
    BotFault,
    BotReportedError,
    MalformedReplyError,
    Reply,
    check_handshake_reply,
)
from referee.match import Player
from referee.protocol.messages import (
    MAX_REPLY_BYTES,
    AnyView,
    BotError,
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.protocol.wire import encode_bot_message
from referee.rules import CLASSIC_TURN_LIMIT, DEFAULT_TURN_LIMIT
from referee.series import BotStartError, SeriesConfig, SeriesFormat, SeriesResult
from referee.series import run_series as referee_series
from referee.table import TableSeriesResult, run_table_series
from sdk.bot import Bot
from sdk.driver import BotDriver
from sdk.server import bot_identity

__all__ = [
    "DEFAULT_TIME_CONTROL",
    "LocalPlayer",
    "PlayerSlot",
    "SeriesResult",
    "play_local",
    "play_table_local",
    "run_series",
]

DEFAULT_TIME_CONTROL: Final = TimeControl()
"""1 s a move, a 10 s bank per game: the arena's defaults."""


class LocalPlayer:
    """A bot object played in-process (no gRPC, no time limit enforced), failing as the same
    bot fails over gRPC: with the same fault and the same text, in the same game.

    An exception in a hook that gets no reply (``on_game_start``, ``on_game_end``) is what
    the SDK's server sends the referee unasked, a ``BotError``; over gRPC the referee reads
    it with the bot's next decision request, which fails: a crash in that game (the next
    one, after ``on_game_end``). This player holds the error and fails its next
    :meth:`decide` with it likewise, so that ``play_local`` records the forfeit the arena
    records.
    """

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.name, version = bot_identity(bot)
        self._driver = BotDriver(bot, name=self.name, version=version)
        self._ids = 0
        self._reported: BotError | None = None
        """The first error the bot answered a notification with, not yet charged."""

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        """The bot's handshake reply; raises BotFault when its ``on_handshake`` raised. A
        handshake starts afresh (a new stream over gRPC): an error still held is dropped."""
        self._reported = None
        reply = self._driver.handle(handshake)
        if isinstance(reply, BotError):
            raise BotReportedError.of(reply)
        if not isinstance(reply, HandshakeReply):
            raise BotCrashedError(f"{self.name}: handshake failed: {reply!r}")
        return check_handshake_reply(handshake, reply)

    def send(self, message: RefereeMessage) -> None:
        """Deliver a message that gets no reply. An error the bot answers it with is held
        for its next decision, as the referee finds it over gRPC (see the class)."""
        reply = self._driver.handle(message)
        if isinstance(reply, BotError) and self._reported is None:
            self._reported = reply

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's decision; raises BotFault for an error it reported (now, or earlier in
        answer to a notification: then the bot is not asked)."""
        reported, self._reported = self._reported, None
        if reported is not None:
            raise BotReportedError.of(reported)
        self._ids += 1
        start = time.monotonic()
        request = DecisionRequest(self._ids, game_number, view, clock)
        reply = self._driver.handle(request, start)
        elapsed = time.monotonic() - start
        if isinstance(reply, Decision):
            self._refuse_oversized(reply)
            return Reply(action=reply.action, elapsed=elapsed, request_id=self._ids)
        if isinstance(reply, BotError):
            raise BotReportedError.of(reply)
        raise BotCrashedError(f"{self.name}: {reply!r}", repr(reply))

    def _refuse_oversized(self, reply: Decision) -> None:
        """Over gRPC a reply over :data:`MAX_REPLY_BYTES` never reaches the referee: gRPC
        refuses it, and the arena forfeits the bot for a malformed reply. Only text can be
        that long, so only long text is encoded to be measured."""
        action = reply.action
        if not isinstance(action, str) or len(action) * 4 < MAX_REPLY_BYTES - 64:
            return  # at most 4 bytes a character: far below the limit
        size = len(encode_bot_message(reply))
        if size > MAX_REPLY_BYTES:
            raise MalformedReplyError(
                f"{self.name}: sent a message over the {MAX_REPLY_BYTES}-byte limit ({size} bytes)",
                offending=f"<message over {MAX_REPLY_BYTES} bytes>",
            )


MoveHook = Callable[[int, int, Reply], None]
"""Called as ``hook(game_number, seat, reply)`` after each reply (for timing reports)."""


class PlayerSlot:
    """A seat of a series for a player the caller provides: a bot object played in-process
    (trusted code only) or a connection to an already-running bot.

    ``start()`` makes the player; the slot handshakes it at the first game and, when
    ``restart`` is true, makes a fresh one and handshakes it again after the player failed
    or refused the handshake (as the arena restarts a crashed bot before the next game).
    ``on_move`` sees every reply (for timing reports).
    """

    def __init__(
        self,
        start: Callable[[], Player],
        name: str,
        *,
        seat: int = 0,
        restart: bool = True,
        on_move: MoveHook | None = None,
    ) -> None:
        self.name = name
        self._start = start
        self._seat = seat
        self._restart = restart
        self._on_move = on_move
        self._player: Player | None = None
        self._failed = False

    def player(self, handshake: Handshake) -> Player:
        """The player, started (or restarted after a failure) and handshaken."""
        if self._player is None or (self._failed and self._restart):
            self._failed = True  # until the handshake is done: a refused one is a failure
            try:
                self._player = self._start()
            except BotFault as exc:
                raise BotStartError(f"{self.name}: {exc}") from None
            except Exception as exc:
                raise BotStartError(f"{self.name} failed to start: {exc!r}") from None
            try:  # worded as the arena words it (arena.tournament.seats)
                self._player.handshake(handshake)
            except BotFault as exc:
                raise BotStartError(f"{self.name} failed the handshake: {exc}") from None
            except Exception as exc:
                raise BotStartError(f"{self.name} failed the handshake: {exc!r}") from None
            self._failed = False
        return _Watched(self._player, self)

    def failed(self) -> None:
        """Mark the player as failed so that the next game starts a fresh one."""
        self._failed = True

    def diagnose(self) -> GameEndReason | None:
        """Players outside a sandbox have no sandbox verdicts."""
        return None

    def close(self) -> None:
        """Forget the player (the caller owns any connection)."""
        self._player = None


class _Watched:
    """Forwards to a player, tells the slot when it failed, and reports each reply."""

    def __init__(self, inner: Player, slot: PlayerSlot) -> None:
        self._inner = inner
        self._slot = slot
        self.name = slot.name

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        try:
            return self._inner.handshake(handshake)
        except BotFault:
            self._slot.failed()
            raise

    def send(self, message: RefereeMessage) -> None:
        try:
            self._inner.send(message)
        except BotFault:
            self._slot.failed()
            raise

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        try:
            reply = self._inner.decide(view, clock, game_number, timeout)
        except BotFault:
            self._slot.failed()
            raise
        if self._slot._on_move is not None:
            self._slot._on_move(game_number, self._slot._seat, reply)
        return reply


def run_series(
    players: Sequence[Player],
    games: int,
    seed: int | str,
    *,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    turn_limit: int = DEFAULT_TURN_LIMIT,
    on_move: MoveHook | None = None,
    seat_controls: Sequence[TimeControl] = (),
    book: Book = (),
    restart: bool = False,
) -> SeriesResult:
    """Play ``games`` games between ``players[0]`` (seat 0) and ``players[1]`` (seat 1) with the
    referee's own loop: the engine decides legality and the end; a bot that fails (timeout,
    bank exhausted, illegal or malformed reply, crash) loses that game by forfeit.

    ``seat_controls`` gives each seat its own time control (else both play ``time_control``);
    a deal ``book`` (:func:`referee.book.load_book`) plays its decks in order, each twice with
    the hands swapped (``games`` must then be even). ``restart``: a player that failed (or
    refused the handshake) is handshaken again before the next game, as the arena restarts
    a bot; without it (the checker) every game is played after the one first handshake."""
    if len(players) != 2:
        raise ValueError(f"a series needs exactly two players, got {len(players)}")
    if games < 1:
        raise ValueError(f"a series needs at least one game, got {games!r}")
    config = SeriesConfig(
        games=games,
        seed=seed,
        format=SeriesFormat.DUPLICATE if book else SeriesFormat.STANDARD,
        time_control=time_control,
        turn_limit=turn_limit,
        seat_controls=tuple(seat_controls),
        book=tuple(book),
    )
    names = [player.name for player in players]
    if names[0] == names[1]:  # two copies of one bot: tell them apart in results
        names[1] += " (2)"
    slots = [
        PlayerSlot(_given(player), names[seat], seat=seat, restart=restart, on_move=on_move)
        for seat, player in enumerate(players)
    ]
    return referee_series(config, (slots[0], slots[1]))


def _given(player: Player) -> Callable[[], Player]:
    return lambda: player


def play_local(
    bot_a: Bot,
    bot_b: Bot,
    games: int = 10,
    seed: int | str = 0,
    *,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    turn_limit: int = DEFAULT_TURN_LIMIT,
    seat_controls: Sequence[TimeControl] = (),
    book: Book = (),
) -> SeriesResult:
    """Play a series in-process: ``bot_a`` in seat 0, ``bot_b`` in seat 1 (use two objects).

    ``seat_controls``: one time control per seat (else both play ``time_control``); ``book``:
    a deal book's decks, played in order, each twice with the hands swapped.

    The first dealer comes from ``seed``, then the loser deals (see
    :func:`referee.series.next_dealer`); game ``n`` is dealt from ``game_seed(seed, n)``.
    Exceptions in a bot's code and illegal actions are forfeits recorded in the result (and
    tracebacks go to stderr), as the arena records them: an exception in ``act`` forfeits
    that game, one in ``on_game_start`` that game at the bot's first decision, one in
    ``on_game_end`` the next game (none after the last), one in ``on_handshake`` the game
    as a startup failure. A bot that failed is handshaken again before its next game (the
    arena starts a new process; here the same object goes on). ``result.games`` maps each
    game's number to its :class:`referee.record.GameRecord`.
    """
    if bot_a is bot_b:
        raise ValueError("play_local needs two bot objects (each keeps its own game context)")
    players = (LocalPlayer(bot_a), LocalPlayer(bot_b))
    return run_series(
        players,
        games,
        seed,
        time_control=time_control,
        turn_limit=turn_limit,
        seat_controls=seat_controls,
        book=book,
        restart=True,
    )


def play_table_local(
    bots: Sequence[Bot],
    games: int = 10,
    seed: int | str = 0,
    *,
    time_control: TimeControl = DEFAULT_TIME_CONTROL,
    turn_limit: int = CLASSIC_TURN_LIMIT,
    on_move: MoveHook | None = None,
) -> TableSeriesResult:
    """Play a series at a classic table in-process: ``bots[s]`` sits at seat ``s`` (2-4 bot
    objects, each listing ``"classic"`` in its ``rulesets``).

    The referee's own table loop (:func:`referee.table.run_table_series`): the first dealer
    from ``seed``, then the loser deals, a draw keeps the dealer; a forfeit makes the offender
    the loser of that game. Exceptions in a bot's hooks forfeit as in :func:`play_local`.
    """
    if len({id(b) for b in bots}) != len(bots):
        raise ValueError("play_table_local needs one bot object per seat")
    config = SeriesConfig(
        games=games,
        seed=seed,
        time_control=time_control,
        turn_limit=turn_limit,
        ruleset="classic",
        players=len(bots),
    )
    slots = [
        PlayerSlot(
            _given(LocalPlayer(bot)),
            bot_identity(bot)[0],
            seat=seat,
            restart=True,
            on_move=on_move,
        )
        for seat, bot in enumerate(bots)
    ]
    return run_table_series(config, slots)
