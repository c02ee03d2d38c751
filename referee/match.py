"""One game under the referee's authority: the one game loop, for a table of 2-4 seats.

The two-player default game is a table of two seats playing the default ruleset; the classic
table (rules-classic.md) seats 2-4 players. Both are played by :func:`play_game`.

:func:`play_game_async` is the loop, a coroutine (a referee process plays all its games as
tasks of one event loop); :func:`play_game` runs it for blocking players (see
:mod:`referee.synchronous`).

The referee holds the true game. For each decision it sends only the mover's view, waits under a
hard deadline, and hands the reply to the engine's one legality gate. Every misbehaviour is a
forfeit with a reason; a failure on our side voids the game (it is replayed with the same deal).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol

from referee.client import BotFault, BotReportedError, MessageTooLargeError, Reply
from referee.protocol.messages import (
    AnyAction,
    AnyView,
    Clock,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from referee.record import Forfeit, GameRecord, Move, clip
from referee.rules import (
    CLASSIC_RULESET,
    DEFAULT_RULESET,
    Action,
    Card,
    ClassicAction,
    ClassicGame,
    Game,
    IllegalActionError,
    InvalidActionError,
    View,
)
from referee.rules.errors import quote
from referee.synchronous import drive
from referee.timecontrol import GameClock

log = logging.getLogger(__name__)


class Player(Protocol):
    """One side of a game as the referee sees it: a connection to a bot, or a local bot.

    The referee defines this interface; bots come in through it (a gRPC connection from
    :mod:`referee.client`, or an in-process bot of the author tools), never the other way.
    """

    name: str

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Introduce the series; raises BotFault."""
        ...

    def send(self, message: RefereeMessage) -> None:
        """A message that gets no reply; raises BotFault."""
        ...

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's action for ``view`` within ``timeout`` seconds; raises BotFault."""
        ...


class AsyncPlayer(Protocol):
    """:class:`Player` for the asynchronous game loop: the same calls, awaited."""

    name: str

    async def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Introduce the series; raises BotFault."""
        ...

    async def send(self, message: RefereeMessage) -> None:
        """A message that gets no reply; raises BotFault."""
        ...

    async def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's action for ``view`` within ``timeout`` seconds; raises BotFault."""
        ...


class Blocking:
    """A blocking :class:`Player` as an :class:`AsyncPlayer` that never suspends (for
    :func:`~referee.synchronous.drive`)."""

    def __init__(self, player: Player) -> None:
        self.player = player
        self.name = player.name

    async def handshake(self, handshake: Handshake) -> HandshakeReply:
        """The player's handshake."""
        reply = self.player.handshake(handshake)
        self.name = self.player.name
        return reply

    async def send(self, message: RefereeMessage) -> None:
        """The player's send."""
        self.player.send(message)

    async def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The player's decision."""
        return self.player.decide(view, clock, game_number, timeout)


AnyGame = Game | ClassicGame
"""A game of either ruleset, as the one game loop plays it."""

Diagnose = Callable[[int], GameEndReason | None]
"""Given a seat whose connection failed, the sandbox's verdict (e.g. MEMORY_LIMIT), if any."""

AsyncDiagnose = Callable[[int], Awaitable[GameEndReason | None]]
""":data:`Diagnose` for the asynchronous game loop (the sandbox may take a moment to tell)."""


def awaitable_diagnose(diagnose: Diagnose | None) -> AsyncDiagnose | None:
    """A blocking diagnosis as the asynchronous game loop takes it (never suspends)."""
    if diagnose is None:
        return None

    async def diagnosed(seat: int) -> GameEndReason | None:
        return diagnose(seat)

    return diagnosed


class Forfeited(Exception):
    """Raised inside a game loop when a seat forfeits; carries the forfeit."""

    def __init__(self, forfeit: Forfeit) -> None:
        super().__init__(forfeit.detail)
        self.forfeit = forfeit


def forfeited(seat: int, reason: GameEndReason, offending: str, detail: str) -> Forfeited:
    """The forfeit of ``seat``, its texts cut to the record's limit."""
    return Forfeited(Forfeit(seat, reason, clip(offending), clip(detail)))


async def faulted(seat: int, fault: BotFault, diagnose: AsyncDiagnose | None) -> Forfeited:
    """The forfeit a bot's fault stands for, refined by the sandbox's verdict on a crash (not
    on an error the bot reported: it is alive, there is no death to wait for)."""
    reason = fault.reason
    alive = isinstance(fault, BotReportedError)
    if reason is GameEndReason.CRASH and diagnose is not None and not alive:
        reason = await diagnose(seat) or reason
    return forfeited(seat, reason, fault.offending, str(fault))


def charge(clock: GameClock, seat: int, reply: Reply) -> None:
    """Charge the reply's time to ``seat`` on the control's clock; a timeout forfeits."""
    if clock.charge(seat, reply.elapsed, reply.cpu):
        return
    if clock.uses_cpu(seat) and reply.cpu is not None:
        spent = f"used {reply.cpu:.3f}s of CPU"
    else:
        spent = f"replied after {reply.elapsed:.3f}s"
    detail = f"{spent}; the limit was {clock.allowance(seat):.3f}s"
    raise forfeited(seat, GameEndReason.TIMEOUT, str(reply.action), detail)


def played(seat: int, action: object, reply: Reply) -> Move:
    """The record of a move: its canonical text and the times the bot took."""
    cpu = None if reply.cpu is None else round(reply.cpu, 6)
    return Move(seat, str(action), round(reply.elapsed, 6), cpu)


def play_game(
    players: Sequence[Player],
    *,
    number: int,
    deck: Sequence[Card | str],
    dealer: int,
    scores: Sequence[SeriesScore],
    time_control: TimeControl | Sequence[TimeControl],
    turn_limit: int,
    diagnose: Diagnose | None = None,
    ruleset: str = DEFAULT_RULESET,
) -> GameRecord:
    """:func:`play_game_async` for blocking players (runs without an event loop)."""
    return drive(
        play_game_async(
            [Blocking(p) for p in players],
            number=number,
            deck=deck,
            dealer=dealer,
            scores=scores,
            time_control=time_control,
            turn_limit=turn_limit,
            diagnose=awaitable_diagnose(diagnose),
            ruleset=ruleset,
        )
    )


async def play_game_async(
    players: Sequence[AsyncPlayer],
    *,
    number: int,
    deck: Sequence[Card | str],
    dealer: int,
    scores: Sequence[SeriesScore],
    time_control: TimeControl | Sequence[TimeControl],
    turn_limit: int,
    diagnose: AsyncDiagnose | None = None,
    ruleset: str = DEFAULT_RULESET,
) -> GameRecord:
    """Play game ``number`` of a series; ``players[s]`` sits at seat ``s``.

    The one game loop of the project, for every table: the default game (``ruleset``
    ``default``, two players) and the classic table (``classic``, 2-4 players, one per
    seat). ``scores`` are each seat's series score before this game; ``time_control`` is
    one control for every seat or one per seat. Returns the record;
    never raises for anything a bot does. An unexpected exception on our side yields a
    voided record.
    """
    started = time.time()
    seats = len(players)
    game = Game.from_deck(deck, dealer, players=seats, ruleset=ruleset, turn_limit=turn_limit)
    names = tuple(p.name for p in players)
    # The one place a game's clock is made: one control for every seat, or one per seat.
    clock = GameClock(time_control, seats=seats)
    controls = clock.controls
    moves: list[Move] = []
    forfeit: Forfeit | None = None
    void_reason = ""
    try:
        not_started: tuple[int, BotFault] | None = None
        for seat, player in enumerate(players):
            try:
                await player.send(
                    _game_start(game, names, seat, number, scores[seat], controls[seat])
                )
            except BotFault as exc:
                # The first seat that cannot take it loses; every other seat still takes
                # its GameStart, since each GameEnd follows its game's (protocol.md).
                not_started = not_started or (seat, exc)
        if not_started is not None:
            raise await faulted(*not_started, diagnose) from None
        while not game.over:
            mover = game.to_move
            assert mover is not None
            moves.append(await _one_move(game, players[mover], mover, number, clock, diagnose))
    except Forfeited as exc:
        forfeit = exc.forfeit
    except Exception as exc:  # our side failed: not the bot's fault
        log.exception("game %s voided by an internal error", number)
        void_reason = clip(f"{type(exc).__name__}: {exc}")

    record = _record(game, moves, forfeit, void_reason, names, started, controls)
    await _announce_end(players, game, record, number, scores)
    return record


def forfeit_results(seats: int, offender: int, *others: int) -> tuple[tuple[int, int], ...]:
    """[ruling] The pairwise results of a game forfeited by ``offender``: everyone beats him.
    With ``others`` (a table where several bots could not start): every seat that did beats
    every offender, and the offenders have no decisive result among themselves."""
    offenders = (offender, *sorted(set(others) - {offender}))
    return tuple((s, x) for x in offenders for s in range(seats) if s not in offenders)


def _game_start(
    game: AnyGame,
    names: tuple[str, ...],
    seat: int,
    number: int,
    score: SeriesScore,
    time_control: TimeControl,
) -> GameStart:
    """The GameStart of ``seat``: a table also names its ruleset and every seat."""
    others = ", ".join(n for s, n in enumerate(names) if s != seat)
    start = GameStart(
        game_number=number,
        seat=seat,
        dealer=game.dealer,
        score=score,
        opponent_name=others,
        time_control=time_control,
        turn_limit=game.turn_limit,
    )
    if isinstance(game, ClassicGame):
        # A table names its ruleset, size and seats; the default game's message keeps the
        # defaults ("default", 2 players) that bots written before the table assume.
        start = replace(start, ruleset=CLASSIC_RULESET, players=len(names), seat_names=names)
    return start


async def _one_move(
    game: AnyGame,
    player: AsyncPlayer,
    seat: int,
    number: int,
    clock: GameClock,
    diagnose: AsyncDiagnose | None,
) -> Move:
    view = game.view(seat)
    wire_clock = clock.wire_clock(seat)
    timeout = clock.deadline(seat)
    try:
        reply = await player.decide(view, wire_clock, number, timeout)
    except BotFault as exc:
        raise await faulted(seat, exc, diagnose) from None
    sent = str(reply.action)
    charge(clock, seat, reply)
    try:  # the engine's one legality gate: parse, check, play
        # An action of the other ruleset goes in as its text: the gate says why it is wrong.
        action: AnyAction
        if isinstance(game, ClassicGame):
            action = game.play(reply.action if isinstance(reply.action, ClassicAction) else sent)
        else:
            action = game.play(reply.action if isinstance(reply.action, Action) else sent)
    except InvalidActionError as exc:
        raise forfeited(seat, GameEndReason.MALFORMED_REPLY, sent, str(exc)) from None
    except IllegalActionError as exc:
        legal = view.legal_actions
        shown = ", ".join(str(a) for a in legal[:10])
        more = ", ..." if len(legal) > 10 else ""
        detail = f"{exc} (legal: {shown}{more})"
        raise forfeited(seat, GameEndReason.ILLEGAL_ACTION, sent, detail) from None
    return played(seat, action, reply)


def _record(
    game: Game | ClassicGame,
    moves: list[Move],
    forfeit: Forfeit | None,
    void_reason: str,
    names: tuple[str, ...],
    started: float,
    controls: tuple[TimeControl, ...],
) -> GameRecord:
    """The record of a game: for the default ruleset a winner (or none) and the final cover
    of a draw; at a classic table the loser and the pairwise results (a 2-seat table names
    its winner too). A forfeit beats the offender; a void has no result."""
    winner: int | None = None
    loser: int | None = None
    pairwise: tuple[tuple[int, int], ...] = ()
    final_cover: str | None = None
    if void_reason:
        ending = GameEndReason.VOID
    elif forfeit is not None:
        ending = forfeit.reason
        if isinstance(game, ClassicGame):
            loser, pairwise = forfeit.seat, forfeit_results(game.players, forfeit.seat)
        else:
            winner = 1 - forfeit.seat
    else:
        assert game.reason is not None
        ending = GameEndReason.from_rules(game.reason)
        if isinstance(game, ClassicGame):
            loser, pairwise = game.loser, game.pairwise_results()
        else:
            winner = game.outcome
            final_cover = str(game.final_cover) if game.final_cover else None
    classic = isinstance(game, ClassicGame)
    if classic and len(names) == 2 and pairwise:
        winner = pairwise[0][0]
    return GameRecord(
        deck=tuple(str(c) for c in game.deck or ()),
        dealer=game.dealer,
        turn_limit=game.turn_limit,
        moves=tuple(moves),
        ending=ending,
        winner=winner,
        forfeit=forfeit,
        final_cover=final_cover,
        void_reason=void_reason,
        players=names,
        started=started,
        finished=time.time(),
        ruleset=CLASSIC_RULESET if classic else DEFAULT_RULESET,
        seats=len(names),
        loser=loser,
        pairwise=pairwise,
        time_controls=controls,
    )


def _after(before: SeriesScore, record: GameRecord, seat: int) -> SeriesScore:
    """``seat``'s series score after ``record`` (a voided game does not count)."""
    if record.voided:
        return before
    outcome = record.outcome(seat)
    return SeriesScore(
        wins=before.wins + (outcome == "win"),
        draws=before.draws + (outcome == "draw"),
        losses=before.losses + (outcome == "loss"),
    )


def final_view(game: AnyGame, record: GameRecord, seat: int) -> AnyView:
    """``seat``'s view in GameEnd: the game over, whoever ended it.

    A forfeit or a void ends the game outside the rules, where the engine's view would still
    show it running (a seat to move, legal actions): there the view says it is over, with the
    record's winner (the default game) or loser (a table), nobody to move and no legal
    actions. Its ``reason`` stays an ending under the rules, so it is unset there: GameEnd's
    own ``reason`` says how the game ended.
    """
    view = game.view(seat)
    if view.over:
        return view
    if isinstance(view, View):
        return replace(view, over=True, to_move=None, legal_actions=(), outcome=record.winner)
    return replace(
        view,
        over=True,
        to_move=None,
        legal_actions=(),
        leader=None,
        defender=None,
        loser=record.loser,
    )


def end_detail(record: GameRecord, seat: int) -> str:
    """The ``GameEnd.detail`` ``seat`` is sent: the record's, except that another seat is
    told of an illegal action only what was sent and by whom. The record's detail goes on
    with why it was illegal and the offender's legal actions: cards of its hand that the
    others never saw (the record is for people, after the game; a bot sees its own)."""
    forfeit = record.forfeit
    if forfeit is None:
        return record.void_reason
    if forfeit.reason is GameEndReason.ILLEGAL_ACTION and seat != forfeit.seat:
        return f"illegal action {quote(forfeit.offending_input)} for seat {forfeit.seat}"
    return forfeit.detail


async def _announce_end(
    players: Sequence[AsyncPlayer],
    game: AnyGame,
    record: GameRecord,
    number: int,
    scores: Sequence[SeriesScore],
) -> None:
    for seat, player in enumerate(players):
        # A bot that cannot take GameEnd (it exited or closed its stream as the game ended)
        # has left between games: its seat forfeits the next game (the arena's slots see
        # to it); so does a bot that answers it with an error (a BotError it sends unasked,
        # which its next decision finds: the next game's forfeit, also in-process, see
        # sdk.tools.local.LocalPlayer). A GameEnd too large to send (the mover's view of a
        # voided game) is not sent.
        try:
            await player.send(
                GameEnd(
                    game_number=number,
                    winner=record.winner,
                    reason=record.ending,
                    detail=end_detail(record, seat),
                    view=final_view(game, record, seat),
                    # Never the deal: rules.md reveals nothing of another hand or the stock
                    # "at any time", and a deal is played again (a void's replay, the
                    # second game of a duplicate pair) by bots that would know it all.
                    deck=(),
                    score=_after(scores[seat], record, seat),
                    loser=record.loser,
                )
            )
        except BotFault:
            pass
        except MessageTooLargeError as exc:
            log.warning("game %s: no GameEnd for seat %s: %s", number, seat, exc)
