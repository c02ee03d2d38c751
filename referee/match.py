"""One game between two players under the referee's authority.

The referee holds the true game. For each decision it sends only the mover's view, waits under a
hard deadline, and hands the reply to the engine's one legality gate. Every misbehaviour is a
forfeit with a reason; a failure on our side voids the game (it is replayed with the same deal).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from referee.client import BotFault, Reply
from referee.protocol.messages import (
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
from referee.rules import Action, Card, Game, IllegalActionError, InvalidActionError
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


Diagnose = Callable[[int], GameEndReason | None]
"""Given a seat whose connection failed, the sandbox's verdict (e.g. MEMORY_LIMIT), if any."""


class Forfeited(Exception):
    """Raised inside a game loop when a seat forfeits; carries the forfeit."""

    def __init__(self, forfeit: Forfeit) -> None:
        super().__init__(forfeit.detail)
        self.forfeit = forfeit


def forfeited(seat: int, reason: GameEndReason, offending: str, detail: str) -> Forfeited:
    """The forfeit of ``seat``, its texts cut to the record's limit."""
    return Forfeited(Forfeit(seat, reason, clip(offending), clip(detail)))


def faulted(seat: int, fault: BotFault, diagnose: Diagnose | None) -> Forfeited:
    """The forfeit a bot's fault stands for, refined by the sandbox's verdict on a crash."""
    reason = fault.reason
    if reason is GameEndReason.CRASH and diagnose is not None:
        reason = diagnose(seat) or reason
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
    scores: tuple[SeriesScore, SeriesScore],
    time_control: TimeControl | Sequence[TimeControl],
    turn_limit: int,
    diagnose: Diagnose | None = None,
) -> GameRecord:
    """Play game ``number`` of a series between ``players[0]`` (seat 0) and ``players[1]``.

    ``scores`` are each seat's series score before this game; ``time_control`` is one
    control for both seats or one per seat. Returns the record; never raises
    for anything a bot does. An unexpected exception on our side yields a voided record.
    """
    started = time.time()
    game = Game.from_deck(deck, dealer, turn_limit=turn_limit)
    names = (players[0].name, players[1].name)
    clock = GameClock(time_control)
    controls = clock.controls
    moves: list[Move] = []
    forfeit: Forfeit | None = None
    void_reason = ""
    try:
        for seat, player in enumerate(players):
            try:
                player.send(
                    GameStart(
                        game_number=number,
                        seat=seat,
                        dealer=dealer,
                        score=scores[seat],
                        opponent_name=names[1 - seat],
                        time_control=controls[seat],
                        turn_limit=turn_limit,
                    )
                )
            except BotFault as exc:
                raise faulted(seat, exc, diagnose) from None
        while not game.over:
            mover = game.to_move
            assert mover is not None
            moves.append(_one_move(game, players[mover], mover, number, clock, diagnose))
    except Forfeited as exc:
        forfeit = exc.forfeit
    except Exception as exc:  # our side failed: not the bot's fault
        log.exception("game %s voided by an internal error", number)
        void_reason = clip(f"{type(exc).__name__}: {exc}")

    record = replace(
        _record(game, moves, forfeit, void_reason, names, started), time_controls=controls
    )
    _announce_end(players, game, record, number, scores)
    return record


def _one_move(
    game: Game, player: Player, seat: int, number: int, clock: GameClock, diagnose: Diagnose | None
) -> Move:
    view = game.view(seat)
    wire_clock = clock.wire_clock(seat)
    timeout = clock.deadline(seat)
    try:
        reply = player.decide(view, wire_clock, number, timeout)
    except BotFault as exc:
        raise faulted(seat, exc, diagnose) from None
    sent = str(reply.action)
    charge(clock, seat, reply)
    try:  # the engine's one legality gate: parse, check, play
        # A classic action's text is never an action of this game: the gate says why.
        action = game.play(
            reply.action if isinstance(reply.action, str | Action) else str(reply.action)
        )
    except InvalidActionError as exc:
        raise forfeited(seat, GameEndReason.MALFORMED_REPLY, sent, str(exc)) from None
    except IllegalActionError as exc:
        shown = ", ".join(str(a) for a in view.legal_actions[:10])
        more = ", ..." if len(view.legal_actions) > 10 else ""
        detail = f"{exc} (legal: {shown}{more})"
        raise forfeited(seat, GameEndReason.ILLEGAL_ACTION, sent, detail) from None
    return played(seat, action, reply)


def _record(
    game: Game,
    moves: list[Move],
    forfeit: Forfeit | None,
    void_reason: str,
    names: tuple[str, str],
    started: float,
) -> GameRecord:
    def make(
        ending: GameEndReason,
        winner: int | None,
        *,
        forfeit: Forfeit | None = None,
        final_cover: str | None = None,
    ) -> GameRecord:
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
        )

    if void_reason:
        return make(GameEndReason.VOID, None)
    if forfeit is not None:
        return make(forfeit.reason, 1 - forfeit.seat, forfeit=forfeit)
    assert game.reason is not None
    final = str(game.final_cover) if game.final_cover else None
    return make(GameEndReason.from_rules(game.reason), game.outcome, final_cover=final)


def _announce_end(
    players: Sequence[Player],
    game: Game,
    record: GameRecord,
    number: int,
    scores: tuple[SeriesScore, SeriesScore],
) -> None:
    detail = record.forfeit.detail if record.forfeit else record.void_reason
    for seat, player in enumerate(players):
        before = scores[seat]
        after = SeriesScore(
            wins=before.wins + (record.winner == seat),
            draws=before.draws + (record.winner is None and not record.voided),
            losses=before.losses + (record.winner == 1 - seat),
        )
        # A bot that cannot take GameEnd fails its next request, which is recorded then.
        with contextlib.suppress(BotFault):
            player.send(
                GameEnd(
                    game_number=number,
                    winner=record.winner,
                    reason=record.ending,
                    detail=detail,
                    view=game.view(seat),
                    deck=game.deck or (),
                    score=after,
                )
            )
