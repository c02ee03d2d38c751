"""A second reply to a game's last request that arrives after that game is over is dropped
(and kept in ``discarded``), whether it comes before or after the next game's first
request: the game it belongs to is already recorded, and the next game is not the bot's
fault. Within its game a second reply still forfeits it."""

from __future__ import annotations

import time

import pytest

from referee.client import BotClient, UnexpectedReplyError
from referee.protocol.messages import (
    PROTOCOL_VERSION,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    TimeControl,
)
from referee.rules import Game
from tests.protocol.helpers import raw_server

CLOCK = Clock(move_ms=1000, bank_ms=10_000)
PATIENT = 30.0
VIEW = Game.new(seed=11, dealer=1).view(0)


def _handshake() -> Handshake:
    return Handshake(PROTOCOL_VERSION, "test", 2, "opp", TimeControl(1000, 10_000))


class _Echoing:
    """Answers every request; the first request of game 2 gets, first, a copy of the last
    reply of game 1 (``late``), or the last request of game 1 is answered twice (``early``)."""

    def __init__(self, when: str) -> None:
        self.when = when
        self.last: Decision | None = None

    def __call__(self, message: RefereeMessage) -> list[BotMessage | bytes]:
        if isinstance(message, Handshake):
            return [HandshakeReply(PROTOCOL_VERSION, "raw", "1", "test")]
        if not isinstance(message, DecisionRequest):
            return []
        reply = Decision(message.request_id, str(message.view.legal_actions[0]))
        previous, self.last = self.last, reply
        if message.game_number == 1 and self.when == "early":
            return [reply, reply]
        if message.game_number == 2 and self.when == "late" and previous is not None:
            return [previous, reply]
        return [reply]


@pytest.mark.parametrize("when", ["early", "late"])
def test_a_second_reply_to_an_ended_game_is_dropped(when: str) -> None:
    bot = _Echoing(when)
    with raw_server(bot) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        first = client.decide(VIEW, CLOCK, game_number=1, timeout=PATIENT)
        time.sleep(0.2)  # the early duplicate may or may not be in before the next request
        second = client.decide(VIEW, CLOCK, game_number=2, timeout=PATIENT)
        assert second.request_id != first.request_id
        assert [d.request_id for d in client.discarded] == [first.request_id]


def test_within_its_game_a_second_reply_still_forfeits() -> None:
    with raw_server(_Echoing("early")) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        client.decide(VIEW, CLOCK, game_number=1, timeout=PATIENT)
        time.sleep(0.2)
        with pytest.raises(UnexpectedReplyError, match="a second reply to request"):
            client.decide(VIEW, CLOCK, game_number=1, timeout=PATIENT)
