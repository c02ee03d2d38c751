"""A bot flooding its output is read at a bounded rate: moving its bytes would otherwise cost
the referee's process CPU outside the bot's limits (docs/sandbox.md, "Output")."""

from __future__ import annotations

import time

import pytest

from sandbox.backend import Backend
from sandbox.local import _Tail
from tests.sandbox.conftest import MakeBot, roomy
from tests.sandbox.test_hostile import report

pytestmark = pytest.mark.timeout(300)

#: What one call of ``output_since`` may read past the rate (what waits in the pipe).
DRAIN = _Tail.DRAIN_READS * 65536


@pytest.fixture(params=["process", "bwrap"])
def local_backend(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.getfixturevalue(f"{request.param}_backend")
    return backend


def test_a_flooding_bot_is_read_at_the_bounded_rate(
    local_backend: Backend, make_bot: MakeBot
) -> None:
    bot = local_backend.start(make_bot("stderrflood"), roomy(), "test-flood")
    try:
        started = time.monotonic()
        first = report(bot)["written"]
        time.sleep(3.0)
        counted = bot.output_since(0).position
        elapsed = time.monotonic() - started
        # Asked after the count: the bot writes on meanwhile, while output_since reads.
        written = report(bot)["written"]
        # Its server still answers while its flooding thread waits on the full pipe.
        assert written >= first
        bound = _Tail.READ_BURST + _Tail.READ_RATE * (elapsed + 1.0) + DRAIN
        assert counted <= bound, f"read {counted} bytes in {elapsed:.1f} s"
        # What was read was written (a block being written may be read in part already).
        assert 0 < counted <= written + 65536
    finally:
        bot.stop()
