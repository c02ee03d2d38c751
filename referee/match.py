"""One game between two players under the referee's authority.

The referee holds the true game. For each decision it sends only the mover's view, waits under a
hard deadline, checks the reply against its own legal list, and plays it. Every misbehaviour is
a forfeit with a reason; a failure on our side voids the game (it is replayed with the same deal).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from referee.outcomes import DOUBLE_FORFEIT, Forfeit, ForfeitReason, GameRecord, Move
from referee.rules import Action, Card, Game, InvalidActionError, View
from referee.timecontrol import GameClock, TimeControl
from sdk.client import (
    BotFault,
    BotTimeoutError,
    IncompatibleProtocolError,
    MalformedReplyError,
    Reply,
)
from sdk.messages import (
    Clock,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
)
from sdk.messages import TimeControl as WireTimeControl

log = logging.getLogger(__name__)


class Player(Protocol):
    """One side of a game as the referee sees it: a connection to a bot, or a local bot."""

    name: str

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Introduce the series; raises BotFault."""
        ...

    def send(self, message: RefereeMessage) -> None:
        """A message that gets no reply; raises BotFault."""
        ...

    def decide(self, view: View, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's action text for ``view`` within ``timeout`` seconds; raises BotFault."""
        ...


Diagnose = Callable[[int], ForfeitReason | None]
"""Given a seat whose connection failed, the sandbox's verdict (e.g. MEMORY_LIMIT), if any."""


def wire_time_control(control: TimeControl) -> WireTimeControl:
    """The protocol's form of a time control (milliseconds)."""
    return WireTimeControl(
        move_ms=round(control.move_seconds * 1000), bank_ms=round(control.bank_seconds * 1000)
    )


def forfeit_reason(fault: BotFault) -> ForfeitReason:
    """The forfeit a protocol-level fault stands for (before any sandbox diagnosis)."""
    if isinstance(fault, BotTimeoutError):
        return ForfeitReason.TIMEOUT
    if isinstance(fault, MalformedReplyError):
        return ForfeitReason.MALFORMED_REPLY
    if isinstance(fault, IncompatibleProtocolError):
        return ForfeitReason.STARTUP_FAILURE
    return ForfeitReason.CRASH


def wire_reason(reason: ForfeitReason) -> GameEndReason:
    """The protocol's (coarser) name for a forfeit reason."""
    return {
        ForfeitReason.TIMEOUT: GameEndReason.TIMEOUT,
        ForfeitReason.ILLEGAL_ACTION: GameEndReason.ILLEGAL_ACTION,
        ForfeitReason.MALFORMED_REPLY: GameEndReason.MALFORMED_REPLY,
        ForfeitReason.CRASH: GameEndReason.CRASH,
        ForfeitReason.STARTUP_FAILURE: GameEndReason.CRASH,
        ForfeitReason.MEMORY_LIMIT: GameEndReason.SANDBOX_LIMIT,
        ForfeitReason.PROCESS_LIMIT: GameEndReason.SANDBOX_LIMIT,
        ForfeitReason.DISK_LIMIT: GameEndReason.SANDBOX_LIMIT,
    }[reason]


class _Forfeited(Exception):
    def __init__(self, forfeit: Forfeit) -> None:
        super().__init__(forfeit.detail)
        self.forfeit = forfeit


def _fault(seat: int, fault: BotFault, diagnose: Diagnose | None) -> _Forfeited:
    reason = forfeit_reason(fault)
    if reason is ForfeitReason.CRASH and diagnose is not None:
        reason = diagnose(seat) or reason
    return _Forfeited(Forfeit(seat, reason, fault.offending[:2000], str(fault)[:2000]))


def play_game(
    players: Sequence[Player],
    *,
    number: int,
    deck: Sequence[Card | str],
    dealer: int,
    scores: tuple[SeriesScore, SeriesScore],
    time_control: TimeControl,
    turn_limit: int,
    diagnose: Diagnose | None = None,
) -> GameRecord:
    """Play game ``number`` of a series between ``players[0]`` (seat 0) and ``players[1]``.

    ``scores`` are each seat's series score before this game. Returns the record; never raises
    for anything a bot does. An unexpected exception on our side yields a voided record.
    """
    started = time.time()
    game = Game.from_deck(deck, dealer, turn_limit=turn_limit)
    names = (players[0].name, players[1].name)
    clock = GameClock(time_control)
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
                        time_control=wire_time_control(time_control),
                        turn_limit=turn_limit,
                    )
                )
            except BotFault as exc:
                raise _fault(seat, exc, diagnose) from None
        while not game.over:
            mover = game.to_move
            assert mover is not None
            moves.append(_one_move(game, players[mover], mover, number, clock, diagnose))
    except _Forfeited as exc:
        forfeit = exc.forfeit
    except Exception as exc:  # our side failed: not the bot's fault
        log.exception("game %s voided by an internal error", number)
        void_reason = f"{type(exc).__name__}: {exc}"[:2000]

    record = replace(
        _record(game, moves, forfeit, void_reason, names), started=started, finished=time.time()
    )
    _announce_end(players, game, record, number, scores)
    return record


def _one_move(
    game: Game, player: Player, seat: int, number: int, clock: GameClock, diagnose: Diagnose | None
) -> Move:
    view = game.view(seat)
    wire_clock = Clock(
        move_ms=round(clock.control.move_seconds * 1000), bank_ms=round(clock.banks[seat] * 1000)
    )
    timeout = clock.deadline(seat)
    try:
        reply = player.decide(view, wire_clock, number, timeout)
    except BotFault as exc:
        raise _fault(seat, exc, diagnose) from None
    text = reply.action
    if not clock.charge(seat, reply.elapsed):
        detail = f"replied after {reply.elapsed:.3f}s; the limit was {timeout:.3f}s"
        raise _Forfeited(Forfeit(seat, ForfeitReason.TIMEOUT, text[:2000], detail))
    try:
        action = Action.parse(text)
    except InvalidActionError as exc:
        raise _Forfeited(
            Forfeit(seat, ForfeitReason.MALFORMED_REPLY, text[:2000], str(exc)[:2000])
        ) from None
    if action not in view.legal_actions:
        shown = ", ".join(str(a) for a in view.legal_actions[:10])
        more = ", ..." if len(view.legal_actions) > 10 else ""
        detail = f"illegal action {str(action)!r}: not legal here (legal: {shown}{more})"
        raise _Forfeited(Forfeit(seat, ForfeitReason.ILLEGAL_ACTION, text[:2000], detail))
    game.play(action)
    return Move(seat, str(action), round(reply.elapsed, 6))


def _record(
    game: Game,
    moves: list[Move],
    forfeit: Forfeit | None,
    void_reason: str,
    names: tuple[str, str],
) -> GameRecord:
    voided = GameRecord(
        deck=tuple(str(c) for c in game.deck or ()),
        dealer=game.dealer,
        turn_limit=game.turn_limit,
        moves=tuple(moves),
        players=names,
        winner=None,
        end="void",
        void_reason=void_reason or "unknown",
    )
    if void_reason:
        return voided
    if forfeit is not None:
        return replace(
            voided, winner=1 - forfeit.seat, end="forfeit", forfeit=forfeit, void_reason=""
        )
    assert game.reason is not None
    final = str(game.final_cover) if game.final_cover else None
    return replace(
        voided, winner=game.outcome, end=game.reason.value, final_cover=final, void_reason=""
    )


def end_reason(record: GameRecord) -> GameEndReason:
    """The protocol's end reason of a record."""
    if record.voided:
        return GameEndReason.VOID
    if record.forfeit is not None:
        return wire_reason(record.forfeit.reason)
    if record.end == DOUBLE_FORFEIT:  # neither bot started: both failed as if crashed
        return GameEndReason.CRASH
    return GameEndReason(record.end)


def _announce_end(
    players: Sequence[Player],
    game: Game,
    record: GameRecord,
    number: int,
    scores: tuple[SeriesScore, SeriesScore],
) -> None:
    reason = end_reason(record)
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
                    reason=reason,
                    detail=detail,
                    view=game.view(seat),
                    deck=game.deck or (),
                    score=after,
                )
            )
