"""A mutation review of the referee's game loop and wire protocol: each test here kills a
mutant of ``referee/match.py`` or ``referee/client.py`` that the rest of the suite let live,
and pins what docs/protocol.md says about it (expected values come from the document).

- A GameStart the bot does not take ends the game at once as its CRASH ("for a GameStart,
  CRASH: game lost"): nobody is asked to move in a game that is already lost
  (mutant: the failure of GameStart ignored, the game played on).
- The hard deadline is "measured by the referee from sending the request to receiving the
  reply": a reply that arrived while the referee's loop was busy elsewhere is charged the
  time of its arrival, not the time the referee got round to reading it (mutant: the
  elapsed time taken when the reply is processed).
- "A late reply that still arrives for that request_id is ignored", once: the bot sends
  "exactly one Decision per DecisionRequest" and "a second reply is a protocol violation",
  so a second copy of a late reply is charged (mutant: every copy forgiven).
- A void "does not count": GameEnd's score after a voided game is the score before it
  (mutant: the void counted as a draw in that score).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from referee.client import (
    BotClient,
    BotCrashedError,
    BotTimeoutError,
    Reply,
    UnexpectedReplyError,
)
from referee.match import play_game
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    AnyView,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from referee.rules import Game, shuffled_deck
from tests.protocol.helpers import raw_server

PATIENT = 30.0
CLOCK = Clock(move_ms=1000, bank_ms=10_000)
VIEW = Game.new(seed=11, dealer=1).view(0)


def _handshake() -> Handshake:
    return Handshake(PROTOCOL_VERSION, "mutation review", 2, "opp", TimeControl(1000, 10_000))


def _reply_to(message: RefereeMessage) -> list[BotMessage | bytes]:
    """A well-behaved raw bot: the handshake reply, and the first legal action."""
    if isinstance(message, Handshake):
        return [HandshakeReply(PROTOCOL_VERSION, "raw", "1", "mutation review")]
    if isinstance(message, DecisionRequest):
        return [Decision(message.request_id, str(message.view.legal_actions[0]))]
    return []


# ---------------------------------------------------------------------------- the game loop


class _Player:
    """An in-process player that keeps what it is sent and plays the first legal action;
    with ``refuse_start`` it cannot take GameStart (its stream is gone), nor anything after."""

    def __init__(self, name: str, *, refuse_start: bool = False) -> None:
        self.name = name
        self.refuse_start = refuse_start
        self.messages: list[RefereeMessage] = []
        self.asked: list[AnyView] = []

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        raise AssertionError("a game does not handshake")  # pragma: no cover

    def send(self, message: RefereeMessage) -> None:
        if self.refuse_start:
            raise BotCrashedError("bot did not take a message within 10.0s")
        self.messages.append(message)

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        self.asked.append(view)
        if self.refuse_start:
            raise BotCrashedError("connection to bot is closed")
        return Reply(action=view.legal_actions[0], elapsed=0.001, request_id=len(self.asked))


@pytest.mark.parametrize("refusing", [0, 1])
def test_a_game_start_not_taken_loses_the_game_before_any_move(refusing: int) -> None:
    """protocol.md (the table of replies): a bot that "stops reading its stream, so that a
    GameStart ... cannot be delivered" loses: "for a GameStart, CRASH: game lost". The game
    is lost there: its opponent is not asked to play it, no move is recorded, and the
    opponent's GameEnd says it won by that CRASH."""
    players = [_Player("a"), _Player("b")]
    players[refusing] = _Player("x", refuse_start=True)
    other = 1 - refusing
    # dealer=refusing: the other seat moves first (it would be asked before the offender).
    record = play_game(
        players,
        number=3,
        deck=shuffled_deck(7),
        dealer=refusing,
        scores=[SeriesScore()] * 2,
        time_control=TimeControl(move_ms=10_000, bank_ms=0),
        turn_limit=1000,
    )
    assert record.ending is GameEndReason.CRASH
    assert record.forfeit is not None and record.forfeit.seat == refusing
    assert record.winner == other
    assert record.moves == ()
    assert players[other].asked == [] and players[refusing].asked == []
    ends = [m for m in players[other].messages if isinstance(m, GameEnd)]
    assert [(e.game_number, e.winner, e.reason) for e in ends] == [(3, other, GameEndReason.CRASH)]
    assert ends[0].score == SeriesScore(wins=1)


class _Failing(_Player):
    """Our side fails while this seat decides: an exception that is no fault of the bot's."""

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        self.asked.append(view)
        raise RuntimeError("the referee's own failure")


@pytest.mark.parametrize("failing", [0, 1])
def test_a_void_game_leaves_the_series_score_in_game_end_as_it_was(failing: int) -> None:
    """protocol.md: VOID is "a failure on the arena's side: the game does not count and is
    replayed with the same deal"; GameEnd's ``score`` is the score "after this game", so
    after a void it is the score before it, at both seats (no draw added)."""
    players = [_Player("a"), _Player("b")]
    players[failing] = _Failing("f")
    before = [SeriesScore(wins=2, draws=1, losses=0), SeriesScore(wins=0, draws=1, losses=2)]
    record = play_game(
        players,
        number=4,
        deck=shuffled_deck(5),
        dealer=1 - failing,  # the failing seat moves first
        scores=before,
        time_control=TimeControl(move_ms=10_000, bank_ms=0),
        turn_limit=1000,
    )
    assert record.ending is GameEndReason.VOID and record.winner is None
    for seat, player in enumerate(players):
        ends = [m for m in player.messages if isinstance(m, GameEnd)]
        assert [(e.reason, e.winner, e.score) for e in ends] == [
            (GameEndReason.VOID, None, before[seat])
        ]


def test_no_game_end_without_its_game_start() -> None:
    """protocol.md (Order of messages): GameStart ... GameEnd "once per game"; "A game that is
    not played because a bot could not start ... has neither GameStart nor GameEnd, for either
    bot". When seat 0 cannot take its GameStart, seat 1 is not told of the end of a game it
    was never told had started (the SDK then reported the result with the seat of the game
    before): it takes both (a game lost by a bot that could not take its GameStart is played
    and recorded)."""
    players = [_Player("x", refuse_start=True), _Player("b")]
    play_game(
        players,
        number=3,
        deck=shuffled_deck(7),
        dealer=0,
        scores=[SeriesScore()] * 2,
        time_control=TimeControl(move_ms=10_000, bank_ms=0),
        turn_limit=1000,
    )
    told = [(type(m).__name__, getattr(m, "game_number", None)) for m in players[1].messages]
    assert told == [("GameStart", 3), ("GameEnd", 3)], told


# ---------------------------------------------------------------------------- the client


def test_a_reply_is_charged_from_its_arrival_not_from_when_the_referee_read_it() -> None:
    """protocol.md: the hard deadline is "measured by the referee from sending the request
    to receiving the reply". A referee process plays many games on one event loop; when the
    loop is busy right after a reply came in (here: for 1 s, inside the step of the stream's
    reader that received it), the bot is not charged for the wait."""
    with raw_server(_reply_to) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        connection = client.connection
        deliver = connection._deliver
        stalled: list[float] = []

        def deliver_then_stall(item: Any) -> None:
            deliver(item)
            if isinstance(item, bytes) and not stalled:
                stalled.append(time.monotonic())
                time.sleep(1.0)  # the loop is busy: nothing else runs meanwhile

        connection._deliver = deliver_then_stall  # type: ignore[method-assign]
        started = time.monotonic()
        reply = client.decide(VIEW, CLOCK, game_number=1, timeout=PATIENT)
        waited = time.monotonic() - started
    assert stalled, "the reply never came through the reader"
    assert waited >= 1.0  # the referee did read the reply only after the stall
    assert reply.elapsed < 0.5, f"charged {reply.elapsed:.3f}s for a reply that came at once"


class _LateTwice:
    """Answers the first request only after ``release`` is set (the referee gave up on it),
    and then sends that reply twice; every other request is answered at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.ids: list[int] = []

    def __call__(self, message: RefereeMessage) -> list[BotMessage | bytes]:
        if not isinstance(message, DecisionRequest):
            return _reply_to(message)
        self.ids.append(message.request_id)
        reply = Decision(message.request_id, str(message.view.legal_actions[0]))
        if len(self.ids) == 1:
            self.release.wait(PATIENT)
            return [reply, reply]
        return [reply]


def test_a_second_copy_of_a_late_reply_is_a_violation() -> None:
    """protocol.md (Deadlines): after a timeout "a late reply that still arrives for that
    request_id is ignored (never counted as an unexpected message)". That is the one reply
    the request allowed: the bot sends "exactly one Decision per DecisionRequest", and "a
    second reply is a protocol violation": a second copy of the late reply is charged at the
    next request (the checker, which never restarts a bot, asks on the same stream)."""
    bot = _LateTwice()
    with raw_server(bot) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        try:
            with pytest.raises(BotTimeoutError):
                client.decide(VIEW, CLOCK, game_number=1, timeout=0.2)
        finally:
            bot.release.set()
        time.sleep(0.5)  # both copies are in before the next request
        with pytest.raises(UnexpectedReplyError) as fault:
            client.decide(VIEW, CLOCK, game_number=2, timeout=PATIENT)
        assert fault.value.reason is GameEndReason.MALFORMED_REPLY
        assert str(bot.ids[0]) in fault.value.offending
        # The first copy was the late reply, ignored and kept; only one.
        assert [d.request_id for d in client.discarded] == [bot.ids[0]]
