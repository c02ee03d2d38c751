"""A bot refused for the ruleset is told where to list it in its own terms: the ``Bot``
class's ``rulesets`` with the Python SDK, ``HandshakeReply.rulesets`` in any other language
(docs/protocol.md)."""

from __future__ import annotations

import dataclasses

import pytest

from referee.client import IncompatibleProtocolError, check_handshake_reply
from referee.protocol.messages import PROTOCOL_VERSION, Handshake, HandshakeReply, TimeControl
from sdk.driver import SDK_VERSION

CLASSIC = Handshake(
    protocol_version=PROTOCOL_VERSION,
    referee_version="kryt-arena test",
    games=1,
    opponent_name="other",
    time_control=TimeControl(move_ms=1000, bank_ms=1000),
    ruleset="classic",
)


def _reply(sdk: str) -> HandshakeReply:
    return HandshakeReply(protocol_version=PROTOCOL_VERSION, name="b", version="1.0.0", sdk=sdk)


def test_a_python_sdk_bot_is_told_about_its_bot_class() -> None:
    with pytest.raises(IncompatibleProtocolError) as caught:
        check_handshake_reply(CLASSIC, _reply(SDK_VERSION))
    assert str(caught.value) == (
        "bot 'b' 1.0.0 plays the rulesets ['default'], not 'classic'"
        " (its Bot class must list 'classic' in `rulesets`)"
    )


@pytest.mark.parametrize("sdk", ["node", "cpp", "java", "go", "my-rust-sdk 0.3", ""])
def test_a_bot_of_another_language_is_told_about_its_handshake_reply(sdk: str) -> None:
    with pytest.raises(IncompatibleProtocolError) as caught:
        check_handshake_reply(CLASSIC, _reply(sdk))
    said = str(caught.value)
    assert said.startswith("bot 'b' 1.0.0 plays the rulesets ['default'], not 'classic' (")
    assert "`HandshakeReply.rulesets`" in said and "docs/protocol.md" in said
    assert "Bot class" not in said


def test_a_bot_that_lists_the_ruleset_is_accepted() -> None:
    reply = dataclasses.replace(_reply("node"), rulesets=("default", "classic"))
    assert check_handshake_reply(CLASSIC, reply) is reply
