"""The plain-decision path of ``decode_bot_message``: a text decision read without protobuf
gives the generated parser's value, and everything else (other shapes, damaged bytes) gets the
parser's value or its error."""

from __future__ import annotations

import random

import pytest

from kryt_proto.v1 import bot_pb2 as pb
from referee.protocol import wire
from referee.protocol.messages import Decision
from referee.protocol.wire import (
    MalformedMessageError,
    bot_message_from_pb,
    decode_bot_message,
    encode_bot_message,
)
from referee.rules.actions import BY_CODE

TAGS = wire._PLAIN_DECISION_TAGS
IDS = (0, 1, 127, 128, 300, 2**31 - 1, 2**35 + 5, 2**56 - 1, 2**63 - 1, 2**63, 2**64 - 1)
TEXTS = ("", "take", "cover 9H 6C", "ходы ♠", "x" * 100, "x" * 126, "x" * 200)


def _by_parser(data: bytes) -> object:
    """What the generated parser alone gives: the value, or the error's message."""
    try:
        return bot_message_from_pb(wire._parse(pb.BotMessage, data))
    except MalformedMessageError as exc:
        return f"error: {exc}"


def _by_decoder(data: bytes) -> object:
    try:
        return decode_bot_message(data)
    except MalformedMessageError as exc:
        return f"error: {exc}"


def test_the_fast_path_is_enabled_by_the_schema() -> None:
    assert TAGS is not None


@pytest.mark.parametrize("request_id", IDS)
@pytest.mark.parametrize("text", TEXTS)
def test_a_text_decision_reads_as_the_parser_reads_it(request_id: int, text: str) -> None:
    data = encode_bot_message(Decision(request_id, text))
    assert decode_bot_message(data) == _by_parser(data) == Decision(request_id, text)
    assert TAGS is not None
    plain = wire._plain_decision(data, *TAGS)
    if len(data) < 0x82 and request_id < 2**63:  # the shapes it takes
        assert plain == Decision(request_id, text)


def test_every_action_text_takes_the_fast_path() -> None:
    assert TAGS is not None
    for action in BY_CODE:
        if action is None:
            continue
        data = encode_bot_message(Decision(2**31 - 1, action.text))
        assert wire._plain_decision(data, *TAGS) == Decision(2**31 - 1, action.text)


def test_damaged_and_other_messages_give_the_parsers_value_or_error() -> None:
    """Every byte string near a real reply (bytes changed, cut, added, swapped fields,
    over-long varints, non-UTF-8 texts) decodes to what the parser says, or fails as it fails;
    and the fast path never answers for one the parser rejects."""
    assert TAGS is not None
    rng = random.Random(15)
    seeds = [encode_bot_message(Decision(i, t)) for i in IDS for t in TEXTS[:5]]
    seeds += [
        b"\x12\x05\x12\x03\xff\xfe\xfd",  # a text that is not UTF-8
        b"\x12\x06\x12\x03\xed\xa0\x80",  # a surrogate: not UTF-8 either (wrong length too)
        b"\x12\x05\x12\x03\xed\xa0\x80",  # a surrogate
        b"\x12\x07\x08\x80\x80\x00\x12\x01a",  # an over-long varint of 0
        b"\x12\x04\x12\x01a\x08\x05",  # the id after the text
        b"\x12\x02\x08\x05",  # no action
        b"\x12\x05\x08\x05\x12\x01a\x00",  # a trailing byte inside
        b"\x12\x05\x08\x05\x12\x01a\x1a\x00",  # and another field after
    ]
    checked = fast = 0
    for _ in range(20_000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(4)
            i = rng.randrange(len(data) + 1)
            if op == 0 and i < len(data):
                data[i] = rng.randrange(256)
            elif op == 1 and i < len(data):
                del data[i]
            elif op == 2:
                data.insert(i, rng.choice((0, 0x08, 0x12, 0x1A, 0x80, 0xFF, rng.randrange(256))))
            elif op == 3 and len(data) > 1:
                data[1] = (data[1] + rng.choice((-1, 1))) % 256
        raw = bytes(data)
        expected = _by_parser(raw)
        assert _by_decoder(raw) == expected, raw
        plain = wire._plain_decision(raw, *TAGS)
        if plain is not None:
            fast += 1
            assert plain == expected, raw
        checked += 1
    assert checked == 20_000 and fast > 1_000  # the fast path was exercised, not bypassed
