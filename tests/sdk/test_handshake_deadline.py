"""One handshake deadline everywhere: a bot the checker passes is not refused by the arena.

The checker once gave 5 s and the arena 10 s, so a bot that answered the handshake in 7 s
failed ``kryt bot check`` and played in tournaments. Both now use
``referee.protocol.messages.HANDSHAKE_SECONDS``.
"""

from __future__ import annotations

import time

import pytest

from arena.tournament import seats
from referee import client as referee_client
from referee.protocol.messages import HANDSHAKE_SECONDS, TimeControl
from sdk.bot import SeriesInfo
from sdk.examples.random.bot import RandomBot
from sdk.tools import check
from sdk.tools.check import check_bot
from tests.protocol.helpers import served

pytestmark = pytest.mark.timeout(300)

SLOW_HANDSHAKE = 6.0
"""Over the checker's old 5 s, well within the shared deadline."""


class _SlowToGreet(RandomBot):
    def on_handshake(self, series: SeriesInfo) -> None:
        time.sleep(SLOW_HANDSHAKE)


def test_the_checker_waits_the_arenas_handshake_deadline() -> None:
    assert HANDSHAKE_SECONDS >= SLOW_HANDSHAKE + 2  # room for a busy machine
    roomy = TimeControl(move_ms=10_000, bank_ms=60_000)
    with served(_SlowToGreet(seed=1), "tcp") as (address, _):
        report = check_bot(address, games=1, time_control=roomy, startup_timeout=120)
    assert report.ok, report.format()


def test_every_handshake_uses_the_one_deadline() -> None:
    # The names the arena and the checker read it by are the protocol's constant itself.
    assert vars(seats)["HANDSHAKE_SECONDS"] is HANDSHAKE_SECONDS
    assert vars(check)["HANDSHAKE_SECONDS"] is HANDSHAKE_SECONDS
    remote = referee_client.RemotePlayer(referee_client.BotClient("unix:///nonexistent"))
    assert remote.handshake_timeout == HANDSHAKE_SECONDS
