"""A ``BotError`` a bot sends between games (the SDK does when ``on_game_end`` raises) fails
its next decision, and only that one: the bot is alive and answers the request it finds
next, and that answer is dropped, not charged to the game after as a message nobody asked
for (the checker plays every game on one stream, so it would be)."""

from __future__ import annotations

import time

import pytest

from referee.client import BotClient, BotReportedError
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotError,
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
from referee.rules import Game
from tests.protocol.helpers import raw_server

pytestmark = pytest.mark.timeout(120)

PATIENT = 30.0
CLOCK = Clock(move_ms=1000, bank_ms=10_000)
ERROR = "GameEnd: ValueError: boom at bot.py:9 in on_game_end"


def _late_error_after_game_end(message: RefereeMessage) -> list[BotMessage | bytes]:
    """Answers requests; reports an error after GameEnd, late enough that the referee has
    sent its next request by then (the bot answers that one too, after the error)."""
    if isinstance(message, Handshake):
        return [HandshakeReply(PROTOCOL_VERSION, "raw", "1", "test")]
    if isinstance(message, DecisionRequest):
        return [Decision(message.request_id, str(message.view.legal_actions[0]))]
    if isinstance(message, GameEnd):
        time.sleep(0.3)
        return [BotError(ERROR)]
    return []


def test_an_error_after_game_end_fails_the_next_decision_only() -> None:
    view = Game.new(seed=11, dealer=1).view(0)
    end = GameEnd(1, 1, GameEndReason.OUT, "", None, (), SeriesScore(losses=1))
    handshake = Handshake(PROTOCOL_VERSION, "test", 3, "opp", TimeControl())
    with raw_server(_late_error_after_game_end) as address, BotClient(address) as client:
        client.handshake(handshake, timeout=PATIENT)
        client.decide(view, CLOCK, game_number=1, timeout=PATIENT)
        client.send(end)
        with pytest.raises(BotReportedError) as caught:
            client.decide(view, CLOCK, game_number=2, timeout=PATIENT)
        assert str(caught.value) == f"bot reported an error: {ERROR}"
        time.sleep(0.3)  # the answer to the abandoned request arrives meanwhile
        reply = client.decide(view, CLOCK, game_number=3, timeout=PATIENT)
        assert reply.action == str(view.legal_actions[0])
        assert [d.request_id for d in client.discarded] != []
        assert reply.request_id not in {d.request_id for d in client.discarded}
