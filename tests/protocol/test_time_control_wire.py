"""The whole time control travels: a bot is told its grace and its clock (CPU or wall), not
defaults made up on its side; a referee from before those fields means what it applied."""

from __future__ import annotations

import pytest

from kryt_proto.v1 import bot_pb2 as pb
from referee.client import BotClient
from referee.protocol import wire
from referee.protocol.messages import (
    CLOCKS,
    DEFAULT_GRACE_MS,
    PROTOCOL_VERSION,
    Clock,
    GameStart,
    Handshake,
    SeriesScore,
    TimeControl,
)
from referee.rules import Action, Game, View
from sdk.examples.greedy.bot import GreedyBot
from sdk.strategy import greedy_action
from tests.protocol.helpers import served

pytestmark = pytest.mark.timeout(120)

CPU_CONTROL = TimeControl(move_ms=200, bank_ms=500, grace_ms=300, clock="cpu", increment_ms=20)


def _handshake(control: TimeControl) -> Handshake:
    return Handshake(PROTOCOL_VERSION, "test", 2, "opp", control)


def _game_start(control: TimeControl) -> GameStart:
    return GameStart(1, 0, 1, SeriesScore(), "opp", control, 100)


@pytest.mark.parametrize(
    "control",
    [
        CPU_CONTROL,
        TimeControl(move_ms=1000, bank_ms=0, grace_ms=0),  # no grace at all: 0 is a value
        TimeControl(grace_ms=DEFAULT_GRACE_MS, clock="wall"),
    ],
)
def test_grace_and_clock_survive_the_wire_in_handshake_and_game_start(
    control: TimeControl,
) -> None:
    for message in (_handshake(control), _game_start(control)):
        decoded = wire.decode_referee_message(wire.encode_referee_message(message))
        assert decoded == message
        assert decoded.time_control.grace_ms == control.grace_ms
        assert decoded.time_control.clock == control.clock


def test_every_clock_has_its_own_wire_value_and_the_grace_is_always_sent() -> None:
    values = {wire._time_control_to_pb(TimeControl(clock=c)).clock for c in CLOCKS}
    assert len(values) == len(CLOCKS) and pb.CLOCK_KIND_UNSPECIFIED not in values
    assert wire._time_control_to_pb(TimeControl(grace_ms=0)).HasField("grace_ms")


def test_a_referee_from_before_the_fields_means_the_default_grace_and_the_wall_clock() -> None:
    old = pb.RefereeMessage(
        handshake=pb.Handshake(
            protocol_version=PROTOCOL_VERSION,
            games=1,
            time_control=pb.TimeControl(move_ms=700, bank_ms=3000, increment_ms=5),
        )
    )
    decoded = wire.decode_referee_message(old.SerializeToString())
    assert isinstance(decoded, Handshake)
    assert decoded.time_control == TimeControl(
        move_ms=700, bank_ms=3000, increment_ms=5, grace_ms=DEFAULT_GRACE_MS, clock="wall"
    )


def test_an_unknown_clock_kind_is_a_malformed_message() -> None:
    message = pb.RefereeMessage(
        game_start=pb.GameStart(
            game_number=1,
            time_control=pb.TimeControl(move_ms=1, clock=pb.ClockKind.ValueType(99)),
            turn_limit=1,
        )
    )
    with pytest.raises(wire.MalformedMessageError, match=r"time_control\.clock: unknown clock"):
        wire.decode_referee_message(message.SerializeToString())


class Watching(GreedyBot):
    """Greedy, and remembers the time controls it is shown."""

    seen: list[TimeControl]

    def act(self, view: View) -> Action:
        assert self.series is not None and self.context is not None
        self.seen = [self.series.time_control, self.context.time_control]
        return greedy_action(view.legal_actions, view.trump)


def test_an_sdk_bot_over_grpc_sees_the_control_the_referee_applies() -> None:
    bot = Watching()
    game = Game.new(seed=3, dealer=1)
    with served(bot, "uds") as (address, _), BotClient(address) as client:
        client.handshake(_handshake(CPU_CONTROL), timeout=30)
        client.send(_game_start(CPU_CONTROL))
        client.decide(game.view(0), Clock(200, 500), game_number=1, timeout=30)
        client.shutdown("done")
    assert bot.seen == [CPU_CONTROL, CPU_CONTROL]
