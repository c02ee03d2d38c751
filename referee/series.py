"""A series between two bots: the loser deals, a draw keeps the dealer, decks from the seed.

Seat 0 is always the first bot of the pair and seat 1 the second; who moves first follows from
the dealer. In the *duplicate* format each deal is played twice with the dealer swapped, so each
bot plays both hands of every deal (pairs of games 1-2, 3-4, ...).
"""

from __future__ import annotations

import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import partial
from typing import Protocol, runtime_checkable

from referee.client import IncompatibleProtocolError
from referee.match import AsyncDiagnose, AsyncPlayer, Blocking, Player, play_game_async
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    GameEndReason,
    Handshake,
    SeriesScore,
    TimeControl,
)
from referee.record import REFEREE_VERSION, Forfeit, GameRecord, clip
from referee.rules import DEFAULT_RULESET, DEFAULT_TURN_LIMIT, RULESETS, Card, shuffled_deck
from referee.synchronous import drive

log = logging.getLogger(__name__)


class SeriesFormat(Enum):
    """How games of a series are dealt."""

    STANDARD = "standard"
    """A fresh deal every game; the loser deals the next one."""
    DUPLICATE = "duplicate"
    """Each deal twice, dealer swapped, so both bots play both hands."""


class SeriesConfigError(ValueError):
    """A series setting is out of range."""


@dataclass(frozen=True, slots=True)
class SeriesConfig:
    """What a series is: number of games, format, seed, time control and turn limit."""

    games: int
    seed: int | str
    format: SeriesFormat = SeriesFormat.STANDARD
    time_control: TimeControl = field(default_factory=TimeControl)
    turn_limit: int = DEFAULT_TURN_LIMIT
    max_attempts: int = 3
    """How many times a game voided by an infrastructure failure is tried before giving up."""
    ruleset: str = DEFAULT_RULESET
    """``default`` (two players, :func:`run_series`) or ``classic`` (a table of ``players``
    seats, :func:`referee.table.run_table_series`)."""
    players: int = 2
    """Seats at the table."""
    seat_controls: tuple[TimeControl, ...] = ()
    """One time control per seat, overriding ``time_control`` (empty: every seat plays under
    ``time_control``)."""
    book: tuple[tuple[str, ...], ...] = ()
    """A deal book (:mod:`referee.book`): deal *n* is deck ``book_start + n - 1`` of it (round
    the book again past its end) instead of a deck drawn from the seed. Duplicate format only,
    so each deck is played twice with the hands swapped."""
    book_start: int = 0
    """The book's deck of this series' first deal (a run split into parallel series
    continues the book where the previous series stops)."""

    def __post_init__(self) -> None:
        if self.seat_controls and len(self.seat_controls) != self.players:
            raise SeriesConfigError(
                f"{self.players} seats need {self.players} time controls,"
                f" got {len(self.seat_controls)}"
            )
        if self.book and self.ruleset != DEFAULT_RULESET:
            raise SeriesConfigError(
                f"a deal book is for the two-player game; the {self.ruleset} table plays"
                " decks drawn from the seed"
            )
        if self.book and self.format is not SeriesFormat.DUPLICATE:
            raise SeriesConfigError(
                "a deal book plays each deck twice with the hands swapped: it needs the"
                f" duplicate format, got {self.format.value!r}"
            )
        if type(self.book_start) is not int or self.book_start < 0:
            raise SeriesConfigError(f"book_start must be >= 0, got {self.book_start!r}")
        if self.ruleset not in RULESETS or self.players not in RULESETS[self.ruleset]:
            raise SeriesConfigError(
                f"unknown ruleset {self.ruleset!r} or table size {self.players!r} "
                f"(known: {dict(RULESETS)})"
            )
        if self.ruleset != DEFAULT_RULESET and self.format is SeriesFormat.DUPLICATE:
            raise SeriesConfigError(f"the {self.ruleset} ruleset plays the standard format only")
        if type(self.games) is not int or self.games < 1:
            raise SeriesConfigError(f"a series needs at least one game, got {self.games!r}")
        if self.format is SeriesFormat.DUPLICATE and self.games % 2:
            raise SeriesConfigError(
                f"the duplicate format plays deals in pairs: games must be even, got {self.games}"
            )
        if type(self.turn_limit) is not int or self.turn_limit < 1:
            raise SeriesConfigError(f"turn_limit must be a positive integer: {self.turn_limit!r}")
        if self.max_attempts < 1:
            raise SeriesConfigError(f"max_attempts must be >= 1, got {self.max_attempts!r}")

    def control(self, seat: int) -> TimeControl:
        """The time control of ``seat``."""
        return self.seat_controls[seat] if self.seat_controls else self.time_control

    def controls(self) -> tuple[TimeControl, ...]:
        """Every seat's time control, seat 0 first."""
        return tuple(self.control(seat) for seat in range(self.players))


def first_dealer(seed: int | str) -> int:
    """Dealer of a series' first game, drawn from the series seed ([ruling])."""
    return random.Random(f"kryt:{seed}:first-dealer").randrange(2)


def next_dealer(dealer: int, winner: int | None) -> int:
    """Dealer of the next game: the loser deals; after a draw the same dealer deals again."""
    return dealer if winner is None else 1 - winner


def deal_number(config: SeriesConfig, number: int) -> int:
    """Which deal game ``number`` (1-based) uses: itself, or its pair in the duplicate format."""
    return (number + 1) // 2 if config.format is SeriesFormat.DUPLICATE else number


def game_seed(seed: int | str, deal: int) -> str:
    """The shuffle seed of deal number ``deal`` (1-based) of the series seeded ``seed``."""
    return f"kryt:{seed}:deal:{deal}"


def game_deck(seed: int | str, deal: int) -> tuple[Card, ...]:
    """The deck of deal number ``deal`` of a series: a pure function of seed and number."""
    return shuffled_deck(game_seed(seed, deal))


def series_deck(config: SeriesConfig, deal: int) -> tuple[Card, ...]:
    """The deck of deal number ``deal`` of a series: from its deal book when it has one,
    else from its seed (:func:`game_deck`)."""
    if config.book:
        deck = config.book[(config.book_start + deal - 1) % len(config.book)]
        return tuple(Card.parse(card) for card in deck)
    return game_deck(config.seed, deal)


def planned_dealer(config: SeriesConfig, number: int, previous: Mapping[int, int | None]) -> int:
    """Dealer of game ``number`` given the winners of the games before it (``previous``)."""
    if config.format is SeriesFormat.DUPLICATE:
        pair = (number + 1) // 2
        first = (first_dealer(config.seed) + pair - 1) % 2
        return first if number % 2 else 1 - first
    dealer = first_dealer(config.seed)
    for n in range(1, number):
        dealer = next_dealer(dealer, previous[n])
    return dealer


def series_handshake(config: SeriesConfig, opponent_name: str, seat: int = 0) -> Handshake:
    """The handshake that opens the stream of the bot at ``seat`` for this series (it
    carries that bot's own time control)."""
    return Handshake(
        protocol_version=PROTOCOL_VERSION,
        referee_version=REFEREE_VERSION,
        games=config.games,
        opponent_name=opponent_name,
        time_control=config.control(seat),
    )


class BotStartError(Exception):
    """A bot could not be started or refused the handshake: its own fault.

    ``refused`` (see :attr:`refused`) marks the one start-up failure that is a property of
    the submission and the series rather than of this start: the bot answered the handshake
    and its reply refused the series (another protocol version, or the series' ruleset not
    among its ``rulesets``). Left out, it is read from the exception this one was raised
    while handling, which is how every slot words a failed handshake (``raise
    BotStartError(...) from None`` inside ``except BotFault``).
    """

    def __init__(
        self,
        message: str,
        reason: GameEndReason = GameEndReason.STARTUP_FAILURE,
        *,
        refused: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self._refused = refused

    @property
    def refused(self) -> bool:
        """Whether the bot refused the series' protocol version or ruleset: starting it
        again would only bring the same refusal (:class:`Refusals`)."""
        if self._refused is not None:
            return self._refused
        # ``from None`` clears __cause__ but keeps __context__: the fault it was raised for.
        inner = self.__cause__ or self.__context__
        if isinstance(inner, IncompatibleProtocolError):
            return True
        # A wrapping slot may word the failure again; only a refusal it wraps is one.
        return isinstance(inner, BotStartError) and inner.refused


class InfrastructureError(Exception):
    """Something on our side failed (sandbox engine, database): not the bot's fault."""


class BotSlot(Protocol):
    """A seat's bot across a series: started on demand, restarted after a crash."""

    name: str

    def player(self, handshake: Handshake) -> Player:
        """A running player that has accepted ``handshake``; starts or restarts the bot
        (handshaking again) when needed.

        Raises BotStartError (the bot's fault) or InfrastructureError (ours)."""
        ...

    def diagnose(self) -> GameEndReason | None:
        """After a failure: the sandbox's verdict (memory, processes, disk), if any."""
        ...

    def close(self) -> None:
        """Stop the bot and release everything (idempotent)."""
        ...


class AsyncBotSlot(Protocol):
    """:class:`BotSlot` for the asynchronous series loop: starting a bot and diagnosing its
    death are awaited (another series on the same loop plays meanwhile)."""

    name: str

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        """A running player that has accepted ``handshake`` (see :meth:`BotSlot.player`)."""
        ...

    async def diagnose(self) -> GameEndReason | None:
        """After a failure: the sandbox's verdict (memory, processes, disk), if any."""
        ...


@runtime_checkable
class ForgettingSlot(Protocol):
    """A slot whose bot can be made to forget what it has seen: before a game dealt from a
    deck its bot was already dealt (the second game of a duplicate pair, the replay of a
    voided game), it is stopped and the game starts on a fresh bot. rules.md reveals nothing
    of another hand or the stock "at any time": a bot that remembered the deal would know
    them. A slot without this method (an in-process player the caller keeps) plays on."""

    def forget(self) -> None:
        """Start the bot afresh for the next game (it is told ``Shutdown`` first)."""
        ...


def forget_seen_deal(slots: Sequence[object]) -> None:
    """Every bot that can forget (:class:`ForgettingSlot`) starts afresh for the next game."""
    for slot in slots:
        if isinstance(slot, ForgettingSlot):
            slot.forget()


class BlockingSlot:
    """A blocking :class:`BotSlot` as an :class:`AsyncBotSlot` that never suspends."""

    def __init__(self, slot: BotSlot) -> None:
        self.slot = slot
        self.name = slot.name

    def forget(self) -> None:
        """The slot's bot starts afresh for the next game, when the slot can do that."""
        forget_seen_deal([self.slot])

    async def player(self, handshake: Handshake) -> AsyncPlayer:
        """The slot's player."""
        return Blocking(self.slot.player(handshake))

    async def diagnose(self) -> GameEndReason | None:
        """The slot's diagnosis."""
        return self.slot.diagnose()


class Refusals:
    """The seats of one series whose bot refused the series at its handshake, each with its
    refusal (see :attr:`BotStartError.refused`).

    A refusal is a property of the submission and the series' ruleset: the bot would refuse
    every later handshake of the series alike, and starting it again for each game costs
    seconds under Docker for nothing. So it is learnt once: the seat's later games get the
    same failure (same reason, same text: the same forfeit as if it had been started again)
    without starting the bot. Any other start-up failure (a crash, a timeout, an identity
    that differs from ``bot.toml``) may pass, and is tried again at the next game as before.
    """

    def __init__(self) -> None:
        self._refused: dict[int, BotStartError] = {}

    async def player(self, seat: int, slot: AsyncBotSlot, handshake: Handshake) -> AsyncPlayer:
        """``slot.player(handshake)`` for the bot at ``seat``, or, when it already refused
        this series, a :class:`BotStartError` like its refusal at once (nothing started).

        Raises BotStartError or InfrastructureError as :meth:`BotSlot.player` does."""
        known = self._refused.get(seat)
        if known is not None:
            raise BotStartError(str(known), known.reason, refused=True)
        try:
            return await slot.player(handshake)
        except BotStartError as exc:
            if exc.refused:
                self._refused[seat] = exc
                log.info(
                    "%s refused the series at its handshake: it is not started again and"
                    " forfeits its remaining games alike",
                    slot.name,
                )
            raise


class _NeitherStarted(InfrastructureError):
    """Both bots failed to start (their own faults, or a sandbox in trouble)."""

    def __init__(self, first: Forfeit, second: Forfeit) -> None:
        super().__init__(f"neither bot could start: {first.detail}; {second.detail}")
        self.forfeits = (first, second)


class SeriesAborted(Exception):
    """The series cannot go on (infrastructure failed repeatedly); it can be resumed later."""


class SeriesInterrupted(Exception):
    """The organiser stopped the run (Ctrl-C): the game in progress is not recorded."""


Recorder = Callable[[int, int, GameRecord], Awaitable[None] | None]
"""``recorder(game_number, attempt, record)``: commit a game (voided ones too); it may be a
coroutine function (:func:`run_series_async` awaits it). May raise: a failure to record is
an infrastructure failure and the game is replayed (unless the series is stopping)."""


@dataclass(slots=True)
class SeriesResult:
    """The games of a series in order (voided attempts are only passed to the recorder).

    ``winners`` has every counted game's winner (None: a draw); ``games`` has the full
    records only when the series keeps them (``run_series(keep_records=True)``, the
    default), so a long series run with ``keep_records=False`` stays small in memory.
    """

    config: SeriesConfig
    names: tuple[str, str]
    games: dict[int, GameRecord] = field(default_factory=dict)
    winners: dict[int, int | None] = field(default_factory=dict)
    _wins: list[int] = field(default_factory=lambda: [0, 0], init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for number, record in self.games.items():
            self.winners.setdefault(number, record.winner)
        self._wins = [0, 0]
        for winner in self.winners.values():
            if winner is not None:
                self._wins[winner] += 1

    def add(self, number: int, record: GameRecord, *, keep: bool = True) -> None:
        """Count game ``number`` (kept whole only when ``keep``); a number counted before
        is counted again with this record's result (a replayed game replaces the first)."""
        if number in self.winners and (previous := self.winners[number]) is not None:
            self._wins[previous] -= 1
        if record.winner is not None:
            self._wins[record.winner] += 1
        self.winners[number] = record.winner
        if keep:
            self.games[number] = record
        else:
            self.games.pop(number, None)

    def score(self, seat: int = 0) -> SeriesScore:
        """Wins, draws, losses of ``seat`` over the counted games (kept or not)."""
        wins, losses = self._wins[seat], self._wins[1 - seat]
        return SeriesScore(wins=wins, draws=len(self.winners) - wins - losses, losses=losses)

    @property
    def forfeits(self) -> list[GameRecord]:
        """Counted games lost by a forfeit (timeout, illegal or malformed reply, crash, ...)."""
        return [g for g in self.games.values() if g.ending.is_forfeit]

    def points(self, seat: int = 0) -> float:
        """Win = 1, draw = 1/2."""
        s = self.score(seat)
        return s.wins + s.draws / 2

    def __str__(self) -> str:
        s = self.score(0)
        return (
            f"{self.names[0]} vs {self.names[1]}: +{s.wins} ={s.draws} -{s.losses}"
            f" over {len(self.winners)} games (seed {self.config.seed!r})"
        )

    def pentanomial(self, seat: int = 0) -> list[int]:
        """Duplicate format: counts of deal pairs scoring 0, ½, 1, 1½, 2 points for ``seat``."""
        counts = [0] * 5
        for pair in range(1, self.config.games // 2 + 1):
            a, b = self.games.get(2 * pair - 1), self.games.get(2 * pair)
            if a is not None and b is not None:
                counts[round(2 * (a.score(seat) + b.score(seat)))] += 1
        return counts


def run_series(
    config: SeriesConfig,
    slots: tuple[BotSlot, BotSlot],
    *,
    recorder: Recorder | None = None,
    done: Mapping[int, GameRecord] | None = None,
    should_stop: Callable[[], bool] | None = None,
    keep_records: bool = True,
) -> SeriesResult:
    """:func:`run_series_async` for blocking slots (runs without an event loop)."""
    return drive(
        run_series_async(
            config,
            (BlockingSlot(slots[0]), BlockingSlot(slots[1])),
            recorder=recorder,
            done=done,
            should_stop=should_stop,
            keep_records=keep_records,
        )
    )


async def run_series_async(
    config: SeriesConfig,
    slots: tuple[AsyncBotSlot, AsyncBotSlot],
    *,
    recorder: Recorder | None = None,
    done: Mapping[int, GameRecord] | None = None,
    should_stop: Callable[[], bool] | None = None,
    keep_records: bool = True,
) -> SeriesResult:
    """Play every game of the series not already in ``done`` (resumption), in order.

    A bot that crashed is restarted for the next game; one that cannot be started forfeits
    that game and is tried again at the next. One whose handshake reply refused the series
    (protocol version, ruleset) is not started again: it forfeits each of its remaining games
    with the same refusal (:class:`Refusals`). A game voided by an infrastructure failure is
    replayed with the same deal up to ``config.max_attempts`` times, then SeriesAborted is
    raised (resumable).
    When ``should_stop()`` turns true, SeriesInterrupted is raised before the next game and
    instead of recording a game that was in progress (its bots may have been killed).
    With ``keep_records=False`` the result keeps only each game's winner (``winners``), not
    its record: what a recorder that stores every game needs, for flat memory over a long
    series.
    """
    stopping = should_stop or (lambda: False)
    result = SeriesResult(config, (slots[0].name, slots[1].name))
    for number, done_record in sorted((done or {}).items()):
        result.add(number, done_record, keep=keep_records)
    previous = result.winners
    refusals = Refusals()
    last: tuple[int, int] | None = None  # (number, dealer) of the game just played: O(1)
    last_deal: int | None = None  # the deal of the game these bot processes played last
    for number in range(1, config.games + 1):
        if number in result.winners:
            continue
        if stopping():
            raise SeriesInterrupted(f"stopped before game {number}")
        if config.format is SeriesFormat.STANDARD and last is not None and last[0] == number - 1:
            dealer = next_dealer(last[1], previous[number - 1])
        else:
            dealer = planned_dealer(config, number, previous)
        last = (number, dealer)
        deal = deal_number(config, number)
        deck = series_deck(config, deal)
        if deal == last_deal:  # the second game of a duplicate pair: its bots held this deal
            forget_seen_deal(slots)
        last_deal = deal
        record = await play_with_retries(
            config,
            number,
            kind="game",
            described=f"{result.names[0]} vs {result.names[1]}",
            play_once=partial(_play_once, config, slots, number, deck, dealer, result, refusals),
            start_failure=_NeitherStarted,
            give_up=partial(_double_forfeit, config, deck, dealer, result.names),
            recorder=recorder,
            stopping=stopping,
            forget=partial(forget_seen_deal, slots),
        )
        result.add(number, record, keep=keep_records)
    return result


async def play_with_retries(
    config: SeriesConfig,
    number: int,
    *,
    kind: str,
    described: str,
    play_once: Callable[[], Awaitable[GameRecord]],
    start_failure: type[InfrastructureError],
    give_up: Callable[[InfrastructureError], GameRecord],
    recorder: Recorder | None,
    stopping: Callable[[], bool],
    forget: Callable[[], None] = lambda: None,
) -> GameRecord:
    """Play game ``number`` (of any table size) until it counts, recording every attempt.

    A game voided by a failure on our side is replayed with the same deal, up to
    ``config.max_attempts`` times, on fresh bots (``forget()`` before every attempt after
    the first: the bots may have seen the deal), then :class:`SeriesAborted` is raised
    (resumable). When
    bots keep failing to start (``start_failure``), the last attempt is scored by
    ``give_up``. ``kind`` and ``described`` name the game in logs and in the abort message.
    """
    last = ""
    for attempt in range(1, config.max_attempts + 1):
        if attempt > 1:
            forget()
        try:
            record = await play_once()
        except InfrastructureError as exc:
            if stopping():  # the bots were being stopped (Ctrl-C...): neither ours nor theirs
                raise SeriesInterrupted(
                    f"stopped during game {number}; it will be replayed"
                ) from exc
            if not isinstance(exc, start_failure):
                last = str(exc)
                log.warning("%s %s attempt %s failed on our side: %r", kind, number, attempt, last)
                continue
            last = str(exc)
            # %r: the message quotes what bots sent (escape sequences included).
            log.warning("%s %s attempt %s: %r", kind, number, attempt, last)
            if attempt < config.max_attempts:
                continue
            record = give_up(exc)
        if stopping():
            raise SeriesInterrupted(f"stopped during game {number}; it will be replayed")
        if recorder is not None:
            try:
                written = recorder(number, attempt, record)
                if inspect.isawaitable(written):  # a recorder that writes off the loop
                    await written
            except Exception as exc:  # a failed write is ours: replay the same deal
                if stopping():  # e.g. the database is gone: no replay that cannot be stored
                    raise SeriesInterrupted(
                        f"stopped: game {number} could not be recorded; it will be replayed"
                    ) from exc
                last = f"recording failed: {type(exc).__name__}: {exc}"
                continue
        if not record.voided:
            return record
        last = record.void_reason
    raise SeriesAborted(
        f"game {number} of {described} failed {config.max_attempts} times on our side;"
        f" last error: {last}"
    )


async def _play_once(
    config: SeriesConfig,
    slots: tuple[AsyncBotSlot, AsyncBotSlot],
    number: int,
    deck: tuple[Card, ...],
    dealer: int,
    result: SeriesResult,
    refusals: Refusals,
) -> GameRecord:
    players: list[AsyncPlayer | None] = [None, None]
    failures: list[Forfeit | None] = [None, None]
    for seat, slot in enumerate(slots):
        try:
            handshake = series_handshake(config, result.names[1 - seat], seat)
            players[seat] = await refusals.player(seat, slot, handshake)
        except BotStartError as exc:
            failures[seat] = Forfeit(seat, exc.reason, "", clip(str(exc)))
    if failures[0] and failures[1]:
        # A healthy bot always starts; when neither does, the sandbox itself may be the culprit
        # (an overloaded engine), so the game is tried again before it is scored.
        raise _NeitherStarted(failures[0], failures[1])
    if failures[0] or failures[1]:
        forfeit = failures[0] or failures[1]
        assert forfeit is not None
        # %r: the detail quotes what the bot sent (escape sequences included).
        log.warning("%s forfeits: %r", result.names[forfeit.seat], forfeit.detail)
        return _unplayed(config, deck, dealer, result.names, forfeit)

    async def diagnose(seat: int) -> GameEndReason | None:
        return await slots[seat].diagnose()

    ready = (players[0], players[1])
    assert ready[0] is not None and ready[1] is not None
    diag: AsyncDiagnose = diagnose
    return await play_game_async(
        (ready[0], ready[1]),
        number=number,
        deck=deck,
        dealer=dealer,
        scores=(result.score(0), result.score(1)),
        time_control=config.controls(),
        turn_limit=config.turn_limit,
        diagnose=diag,
    )


def _double_forfeit(
    config: SeriesConfig,
    deck: tuple[Card, ...],
    dealer: int,
    names: tuple[str, str],
    failure: InfrastructureError,
) -> GameRecord:
    """Still neither starts: both forfeit. Nobody can win, so it counts as a draw; the
    record keeps why (both failures of the last attempt)."""
    record = _unplayed(config, deck, dealer, names, None)
    return replace(record, double_forfeit_detail=clip(str(failure)))


def _unplayed(
    config: SeriesConfig,
    deck: tuple[Card, ...],
    dealer: int,
    names: tuple[str, str],
    forfeit: Forfeit | None,
) -> GameRecord:
    """A game that could not start: the bot that would not start forfeits it, or (``forfeit``
    None) neither would, attempt after attempt: a draw by double forfeit nobody can win."""
    now = time.time()
    return GameRecord(
        deck=tuple(str(c) for c in deck),
        dealer=dealer,
        turn_limit=config.turn_limit,
        moves=(),
        ending=GameEndReason.DOUBLE_FORFEIT if forfeit is None else forfeit.reason,
        winner=None if forfeit is None else 1 - forfeit.seat,
        forfeit=forfeit,
        players=names,
        started=now,
        finished=now,
        time_controls=config.controls(),
    )
