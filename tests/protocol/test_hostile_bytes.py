"""Random bytes on the wire are malformed messages, never another exception."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.protocol.wire import MalformedMessageError, decode_bot_message, decode_referee_message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_on_the_wire_are_malformed_messages(data: bytes) -> None:
    for decode in (decode_bot_message, decode_referee_message):
        with contextlib.suppress(MalformedMessageError):  # anything else fails the test
            decode(data)
