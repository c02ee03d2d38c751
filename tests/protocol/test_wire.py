"""referee.protocol.wire: every message survives the trip to bytes and back; bad input is
rejected clearly."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kryt_proto.v1 import bot_pb2 as pb
from referee.protocol import wire
from referee.protocol.messages import (
    MAX_REPLY_BYTES,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    RefereeMessage,
)
from referee.rules import EndReason, Game, View
from tests.protocol import strategies as S

REFEREE_MESSAGES: dict[str, st.SearchStrategy[RefereeMessage]] = {
    "handshake": S.handshakes,
    "game_start": S.game_starts,
    "decision_request": S.decision_requests,
    "game_end": S.game_ends,
    "shutdown": S.shutdowns,
}
BOT_MESSAGES: dict[str, st.SearchStrategy[BotMessage]] = {
    "handshake_reply": S.handshake_replies,
    "decision": S.decisions,
    "error": S.bot_errors,
}


@pytest.mark.parametrize("kind", sorted(REFEREE_MESSAGES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_referee_messages_round_trip(kind: str, data: st.DataObject) -> None:
    message = data.draw(REFEREE_MESSAGES[kind])
    encoded = wire.encode_referee_message(message)
    assert pb.RefereeMessage.FromString(encoded).WhichOneof("body") == kind
    assert wire.decode_referee_message(encoded) == message


@pytest.mark.parametrize("kind", sorted(BOT_MESSAGES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_bot_messages_round_trip(kind: str, data: st.DataObject) -> None:
    message = data.draw(BOT_MESSAGES[kind])
    encoded = wire.encode_bot_message(message)
    assert pb.BotMessage.FromString(encoded).WhichOneof("body") == kind
    assert wire.decode_bot_message(encoded) == message


@settings(max_examples=40, deadline=None)
@given(view=S.played_views())
def test_real_views_round_trip_and_stay_within_the_size_limit(view: object) -> None:
    assert isinstance(view, type(Game.new(seed=1).view(0)))
    request = DecisionRequest(request_id=1, game_number=1, view=view, clock=Clock(1000, 10000))
    encoded = wire.encode_referee_message(request)
    assert len(encoded) < MAX_REPLY_BYTES // 4  # a default game: far from any limit
    assert wire.decode_referee_message(encoded) == request


@settings(max_examples=80, deadline=None)
@given(action=S.ACTIONS, request_id=S.U64)
def test_structured_actions_decode_to_the_same_action(action: object, request_id: int) -> None:
    from referee.rules import Action

    assert isinstance(action, Action)
    structured = pb.Action(
        kind=[
            pb.ACTION_KIND_LEAD,
            pb.ACTION_KIND_COVER_AND_LEAD,
            pb.ACTION_KIND_COVER_AND_GO_OUT,
            pb.ACTION_KIND_TAKE,
        ][int(action.kind)],
        cover=str(action.cover) if action.cover else "",
        lead=str(action.lead) if action.lead else "",
        swap=action.swap,
    )
    data = pb.BotMessage(
        decision=pb.Decision(request_id=request_id, structured=structured)
    ).SerializeToString()
    decoded = wire.decode_bot_message(data)
    assert decoded == Decision(request_id=request_id, action=action)
    assert isinstance(decoded, Decision) and str(decoded.action) == str(action)


def test_every_rules_ending_has_a_wire_name() -> None:
    for reason in EndReason:
        assert GameEndReason.from_rules(reason).value == reason.value
    assert {r for r in GameEndReason if r.is_forfeit} == {
        GameEndReason.TIMEOUT,
        GameEndReason.ILLEGAL_ACTION,
        GameEndReason.MALFORMED_REPLY,
        GameEndReason.CRASH,
        GameEndReason.STARTUP_FAILURE,
        GameEndReason.MEMORY_LIMIT,
        GameEndReason.PROCESS_LIMIT,
        GameEndReason.DISK_LIMIT,
    }
    assert not GameEndReason.DOUBLE_FORFEIT.is_forfeit and not GameEndReason.VOID.counts


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (pb.BotMessage(), "carries no body"),
        (pb.BotMessage(decision=pb.Decision(request_id=3)), "decision 3 carries no action"),
        (
            pb.BotMessage(
                decision=pb.Decision(request_id=1, structured=pb.Action(kind=pb.ACTION_KIND_LEAD))
            ),
            "LEAD takes",
        ),
        (
            pb.BotMessage(
                decision=pb.Decision(
                    request_id=1, structured=pb.Action(kind=pb.ACTION_KIND_TAKE, cover="XX")
                )
            ),
            "'XX'",
        ),
        (
            pb.BotMessage(
                decision=pb.Decision(
                    request_id=1, structured=pb.Action(kind=pb.ActionKind.ValueType(7))
                )
            ),
            "unknown action kind 7",
        ),
    ],
)
def test_malformed_bot_messages_are_rejected_with_the_reason(
    message: pb.BotMessage, error: str
) -> None:
    with pytest.raises(wire.MalformedMessageError, match=re.escape(error)):
        wire.decode_bot_message(message.SerializeToString())


def test_garbage_bytes_are_malformed_not_a_crash() -> None:
    with pytest.raises(wire.MalformedMessageError, match=re.escape("not a kryt.v1.BotMessage")):
        wire.decode_bot_message(b"\xff\xff\xff\xff garbage")
    with pytest.raises(wire.MalformedMessageError, match=re.escape("not a kryt.v1.RefereeMessage")):
        wire.decode_referee_message(b"\x0a\xff")


def _request_with(**view_fields: object) -> bytes:
    view = wire.view_to_pb(Game.new(seed=4).view(0))
    for name, value in view_fields.items():
        field = getattr(view, name)
        if isinstance(value, list):
            del field[:]
            field.extend(value)
        else:
            setattr(view, name, value)
    msg = pb.RefereeMessage(decision_request=pb.DecisionRequest(request_id=1, view=view))
    return msg.SerializeToString()


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"hand": ["ZZ"]}, "view.hand: not a card: 'ZZ'"),
        ({"trump": "X"}, "view.trump"),
        ({"trump": "HH"}, "view.trump"),
        ({"seat": 2}, "view.seat: a seat is 0 or 1, got 2"),
        ({"history": ["dance"]}, "view.history: malformed action 'dance'"),
        ({"reason": pb.END_REASON_TIMEOUT}, "not an ending under the rules"),
        ({"face_up": "1"}, "view.face_up"),
    ],
)
def test_malformed_views_are_rejected(fields: dict[str, object], error: str) -> None:
    with pytest.raises(wire.MalformedMessageError, match=re.escape(error)):
        wire.decode_referee_message(_request_with(**fields))


def test_a_request_without_view_is_malformed() -> None:
    data = pb.RefereeMessage(decision_request=pb.DecisionRequest(request_id=1)).SerializeToString()
    with pytest.raises(wire.MalformedMessageError, match="no view"):
        wire.decode_referee_message(data)


def test_values_out_of_wire_range_fail_to_encode_clearly() -> None:
    with pytest.raises(wire.WireError, match="cannot encode Decision"):
        wire.encode_bot_message(Decision(request_id=-1, action="take"))
    with pytest.raises(wire.WireError, match="not a bot message"):
        wire.encode_bot_message("take")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(view=S.played_views())
def test_a_lazy_view_is_the_eager_view_in_every_respect(view: View) -> None:
    """The SDK decodes views lazily (issue 15): the same value, hash, repr, copies and
    pickles, and dataclasses.replace, whichever field is read first."""
    encoded = wire.view_to_pb(view).SerializeToString()
    eager = wire.view_from_pb(pb.View.FromString(encoded))
    assert eager == view

    def lazy() -> View:
        return wire.lazy_view_from_pb(pb.View.FromString(encoded))

    assert lazy() == view and view == lazy() and hash(lazy()) == hash(view)
    assert repr(lazy()) == repr(view)
    for name in View.__dataclass_fields__:  # each field read first, then all the others
        first = lazy()
        assert getattr(first, name) == getattr(view, name)
        assert first == view and repr(first) == repr(view)
    assert pickle.loads(pickle.dumps(lazy())) == view
    assert type(copy.deepcopy(lazy())) is View
    assert dataclasses.replace(lazy(), stock_count=99) == dataclasses.replace(view, stock_count=99)
    assert isinstance(lazy(), View) and lazy().top == view.top


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"hand": ["ZZ"]}, "view.hand: not a card: 'ZZ'"),
        ({"history": ["dance"]}, "view.history: malformed action 'dance'"),
    ],
)
def test_a_lazy_view_reports_a_malformed_field_when_read(
    fields: dict[str, object], error: str
) -> None:
    data = _request_with(**fields)
    with pytest.raises(wire.MalformedMessageError, match=re.escape(error)):
        message = wire.decode_referee_message(data, lazy=True)
        assert isinstance(message, DecisionRequest)
        message.view.hand, message.view.history  # noqa: B018


@pytest.mark.parametrize(
    ("fields", "read", "error"),
    [
        ({"seat": 2}, "seat", "view.seat: a seat is 0 or 1, got 2"),
        ({"trump": "X"}, "dealer", "view.trump"),  # the small fields are decoded together
        ({"face_up": "1"}, "outcome", "view.face_up"),
        ({"reason": pb.END_REASON_TIMEOUT}, "stock_count", "not an ending under the rules"),
        ({"pile": ["ZZ"]}, "pile", "view.pile: not a card: 'ZZ'"),
    ],
)
def test_a_lazy_view_decodes_only_the_legal_actions_until_more_is_read(
    fields: dict[str, object], read: str, error: str
) -> None:
    """A bot that reads only the legal actions (the SDK's random bot) pays for nothing else:
    a malformed field it never reads is never decoded; reading it names the field."""
    eager = Game.new(seed=4).view(0)
    message = wire.decode_referee_message(_request_with(**fields), lazy=True)
    assert isinstance(message, DecisionRequest)
    assert message.view.legal_actions == eager.legal_actions
    assert message.view.hand == eager.hand
    with pytest.raises(wire.MalformedMessageError, match=re.escape(error)):
        getattr(message.view, read)
    with pytest.raises(wire.MalformedMessageError, match=re.escape(error)):
        getattr(message.view, read)  # still refused on a second read, never half-filled


def test_a_lazy_view_with_malformed_legal_actions_is_refused_at_once() -> None:
    with pytest.raises(
        wire.MalformedMessageError, match=re.escape("view.legal_actions: malformed action 'dance'")
    ):
        wire.decode_referee_message(_request_with(legal_actions=["dance"]), lazy=True)
