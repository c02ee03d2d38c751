"""Settings the whole suite shares."""

import signal
from collections.abc import Iterator

import pytest

# Test modules may import grpc before the referee does: gRPC's defaults
# (``referee.GRPC_DEFAULTS``) are set first, as in every process of ours.
import referee  # noqa: F401

_RESTORED = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture(autouse=True)
def _signal_handlers_restored() -> Iterator[None]:
    """Each test leaves SIGINT and SIGTERM as it found them. Code run in process may set them
    for its own process (the reaper's ``main`` ignores SIGINT); left behind, a test worker
    ignoring SIGINT passes that on to every process it starts, and later tests' Ctrl-C
    does nothing."""
    before = {number: signal.getsignal(number) for number in _RESTORED}
    yield
    for number, handler in before.items():
        if handler is not None and signal.getsignal(number) is not handler:
            signal.signal(number, handler)
