"""Outside review: the wire fuzzed in both directions.

Referee side (a hostile bot): a raw gRPC bot answers the referee's decision requests with
random or mutated bytes, replies of the wrong kind, two replies, a reply before any request,
stream endings with every gRPC status and hostile details, and trailing-metadata floods. Each
game must come back from the one game loop as a forfeit of that bot with a reason of the one
vocabulary (docs/protocol.md, "Illegal, malformed and unexpected replies"), the opponent
uncharged and told so, the evidence bounded, every stored move legal under the rules, and
the record shown escaped where it is exported (the game file).

SDK side (a hostile referee): a raw gRPC client sends an SDK bot random bytes and malformed
messages; the bot must answer with a clear ``BotError`` (or nothing where the protocol wants
no reply), keep serving the same stream, and answer the next well-formed request.
"""

from __future__ import annotations

import asyncio
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

import grpc
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from kryt_proto.v1 import bot_pb2 as pb
from leaderboard.gamefile import GameEntry, Seat, format_game, parse_games
from referee.client import AsyncBotClient, AsyncRemotePlayer, default_handshake
from referee.match import play_game_async
from referee.protocol.messages import (
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    BotError,
    BotMessage,
    Decision,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    Shutdown,
    TimeControl,
)
from referee.protocol.wire import (
    PLAY_METHOD,
    PLAY_PATH,
    SERVICE,
    MalformedMessageError,
    decode_bot_message,
    decode_referee_message,
    encode_bot_message,
    view_to_pb,
)
from referee.record import MAX_TEXT, GameRecord
from referee.replay import verify
from referee.rules import Action, ActionKind, Game, InvalidActionError, InvalidCardError, View
from referee.rules.errors import quote
from sdk.bot import Bot, GameResult
from sdk.strategy import greedy_action
from sdk.tracker import CardTracker
from tests.protocol.helpers import served, serving

pytestmark = pytest.mark.timeout(240)

PATIENT = 60.0
"""Seconds for what is not under test (connecting, handshakes, quick replies): CI is busy."""
ROOMY = TimeControl(move_ms=30_000, bank_ms=60_000)
"""No move of these quick bots is ever a timeout, however loaded the machine."""
HOSTILE, OPPONENT = 0, 1
DEALER = OPPONENT
"""The seat after the dealer moves first: the hostile bot's first reply is the game's first."""
_DEALT = Game.new(seed=11, dealer=DEALER).deck
assert _DEALT is not None
DECK = _DEALT
TURN_LIMIT = 1000
BOUND = MAX_TEXT + 40
"""Longest stored evidence: MAX_TEXT characters and the note of how many more there were."""
NASTY = "\x1b]0;pwned\x07\x1b[2J\x9b31m[bold red]I WIN[/]\r\n\u202e\u2028\x00"
"""Terminal escapes, a bidi override, a line separator and a NUL, in one text."""
SDK_SEND_LIMIT_EXCEEDED = "Sent message larger than max"


def _raw_controls(text: str) -> list[str]:
    """Characters a terminal or editor would act on instead of showing."""
    return [c for c in text if unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]


# ============================================================================ referee side


@dataclass(frozen=True)
class Abort:
    """End the Play stream with this status, details and trailing metadata."""

    code: grpc.StatusCode
    details: str
    trailing: tuple[tuple[str, str | bytes], ...] = ()


Script = Callable[[RefereeMessage], Sequence[bytes] | Abort]
"""What the hostile bot sends for each referee message after the handshake."""


def _hello() -> bytes:
    return encode_bot_message(HandshakeReply(PROTOCOL_VERSION, "raw", "1", "raw protobuf"))


def _first_legal(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, DecisionRequest):
        action = str(message.view.legal_actions[0])
        return [encode_bot_message(Decision(message.request_id, action))]
    return []


@contextmanager
def _raw_bot(script: Script, seen: list[RefereeMessage] | None = None) -> Iterator[str]:
    """A Play service that answers the handshake and then follows ``script`` (raw bytes)."""

    def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        for data in requests:
            message = decode_referee_message(data)
            if seen is not None:
                seen.append(message)
            if isinstance(message, Handshake):
                yield _hello()
                continue
            if isinstance(message, Shutdown):
                return
            out = script(message)
            if isinstance(out, Abort):
                if out.trailing:
                    context.set_trailing_metadata(out.trailing)
                if out.code is grpc.StatusCode.OK:
                    context.set_code(out.code)
                    context.set_details(out.details)
                    return
                context.abort(out.code, out.details)
            yield from out

    handler = grpc.stream_stream_rpc_method_handler(play)
    with serving(SERVICE, {PLAY_METHOD: handler}) as address:
        yield address


@dataclass
class Played:
    record: GameRecord
    opponent_seen: list[RefereeMessage] = field(default_factory=list)

    @property
    def opponent_ends(self) -> list[GameEnd]:
        return [m for m in self.opponent_seen if isinstance(m, GameEnd)]


def _play(script: Script) -> Played:
    """One game: the hostile bot (seat 0, first to move) against a bot that plays well."""
    opponent_seen: list[RefereeMessage] = []

    async def main(addresses: tuple[str, str]) -> GameRecord:
        clients = [AsyncBotClient(a) for a in addresses]
        try:
            players = [AsyncRemotePlayer(c, handshake_timeout=PATIENT) for c in clients]
            for player in players:
                await player.handshake(default_handshake("other", 1, ROOMY.move_ms, ROOMY.bank_ms))
            record = await play_game_async(
                players,
                number=1,
                deck=DECK,
                dealer=DEALER,
                scores=[SeriesScore(), SeriesScore()],
                time_control=ROOMY,
                turn_limit=TURN_LIMIT,
            )
            # The opponent reads its GameEnd after the referee sent it: wait, generously.
            deadline = time.monotonic() + PATIENT
            while not any(isinstance(m, GameEnd) for m in opponent_seen):
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.01)
            return record
        finally:
            for client in clients:
                await client.aclose()

    with _raw_bot(script) as bad, _raw_bot(_first_legal, opponent_seen) as good:
        record = asyncio.run(main((bad, good)))
    return Played(record, opponent_seen)


def _entry(record: GameRecord) -> GameEntry:
    seats = (Seat("hostile", "1.0.0", "a" * 64), Seat("fine", "1.0.0", "b" * 64))
    return GameEntry(
        record=record,
        seats=seats,
        number=1,
        attempt=1,
        tournament="review",
        tournament_seed=1,
        tournament_status="finished",
        series_position=1,
        series_format="standard",
        series_games=1,
        series_seed=1,
        series_status="finished",
        series_a_seat=0,
    )


def _check_shown_escaped(record: GameRecord) -> None:
    """The exported game file shows every text escaped and reads back the same evidence."""
    text = format_game(_entry(record))
    assert not [c for c in _raw_controls(text) if c != "\n"], text[:2000]
    (back,) = parse_games(text)
    assert back.record.forfeit == record.forfeit
    assert back.record.moves == record.moves


def _check_forfeit(played: Played, *reasons: GameEndReason) -> GameRecord:
    """The hostile bot forfeited for one of ``reasons``; the opponent was not charged."""
    record = played.record
    forfeit = record.forfeit
    assert forfeit is not None, record
    assert forfeit.seat == HOSTILE, forfeit
    assert forfeit.reason in reasons, forfeit
    assert record.ending is forfeit.reason and record.winner == OPPONENT
    assert len(forfeit.offending_input) <= BOUND and len(forfeit.detail) <= BOUND
    # Every stored move is one the rules accept, in turn, and the offender was to move or
    # failed out of turn (referee.replay.verify is the independent replay).
    check = verify(record)
    assert check.ok, check.problems
    # The opponent was told it won, by that reason, with the same detail; of an illegal
    # action only what was sent (why it was illegal would show the offender's hand).
    told = forfeit.detail
    if forfeit.reason is GameEndReason.ILLEGAL_ACTION:
        told = f"illegal action {quote(forfeit.offending_input)} for seat {forfeit.seat}"
        assert "legal:" not in told
    ends = played.opponent_ends
    assert [(e.winner, e.reason, e.detail) for e in ends] == [(OPPONENT, forfeit.reason, told)]
    _check_shown_escaped(record)
    return record


def _decision(request: DecisionRequest, **fields: object) -> bytes:
    decision = pb.Decision(request_id=request.request_id)
    for name, value in fields.items():
        setattr(decision, name, value)
    return pb.BotMessage(decision=decision).SerializeToString()


def _text_reply(text: Callable[[DecisionRequest], str], sent: list[str] | None = None) -> Script:
    def script(message: RefereeMessage) -> list[bytes]:
        if isinstance(message, DecisionRequest):
            chosen = text(message)
            if sent is not None:
                sent.append(chosen)
            return [_decision(message, text=chosen)]
        return []

    return script


def _illegal_here(request: DecisionRequest) -> str:
    """A well-formed action legal in some position of the game, but not in this one."""
    view = request.view
    assert isinstance(view, View)
    legal = {str(a) for a in view.legal_actions}
    game = Game.from_deck(DECK, DEALER, turn_limit=TURN_LIMIT)
    game.play(view.legal_actions[0])  # the opponent's position next: its actions
    for action in game.legal_actions():
        if str(action) not in legal:
            return str(action)
    raise AssertionError("no action of the next position is illegal here")


MALFORMED_TEXTS: dict[str, Callable[[DecisionRequest], str]] = {
    "empty": lambda r: "",
    "nul": lambda r: f"{r.view.legal_actions[0]}\x00",
    "ansi and bidi": lambda r: f"{NASTY}{r.view.legal_actions[0]}",
    "60k of escapes": lambda r: "lead " + "\x1b[2J" * 15_000,
    "json breaker": lambda r: '"}]\n[ForfeitSeat "1"]\n1. 1 take {0.0}',
}


@pytest.mark.parametrize("name", sorted(MALFORMED_TEXTS))
def test_malformed_action_text_forfeits_the_sender_with_bounded_escaped_evidence(
    name: str,
) -> None:
    sent: list[str] = []
    played = _play(_text_reply(MALFORMED_TEXTS[name], sent))
    record = _check_forfeit(played, GameEndReason.MALFORMED_REPLY)
    assert record.moves == ()  # nothing of the hostile bot's was played
    assert record.forfeit is not None
    # The evidence is what the bot sent (clipped), not a paraphrase.
    assert len(sent) == 1
    assert record.forfeit.offending_input[:MAX_TEXT] == sent[0][:MAX_TEXT]


def test_an_action_legal_in_another_position_is_illegal_and_not_stored() -> None:
    played = _play(_text_reply(_illegal_here))
    record = _check_forfeit(played, GameEndReason.ILLEGAL_ACTION)
    assert record.moves == ()
    assert record.forfeit is not None and "legal:" in record.forfeit.detail


@pytest.mark.parametrize(
    "spell",
    [str.upper, lambda t: f"  {t}\t", lambda t: t.lower().replace(" ", "   ")],
    ids=["upper", "padded", "lower-spaced"],
)
def test_case_and_whitespace_variants_are_played_and_stored_canonically(
    spell: Callable[[str], str],
) -> None:
    # rules.md "Letter case" and "Whitespace": the parser forgives them; the record keeps
    # the canonical text only.
    first = Game.from_deck(DECK, DEALER, turn_limit=TURN_LIMIT).legal_actions()[0]
    played = _play(_text_reply(lambda r: spell(str(r.view.legal_actions[0]))))
    record = played.record
    assert record.forfeit is None and record.ending.counts and not record.ending.is_forfeit
    assert record.moves[0].seat == HOSTILE and record.moves[0].action == str(first)
    assert verify(record).ok


def test_unknown_fields_are_ignored_and_the_legal_action_is_played() -> None:
    # proto3: a newer bot's fields this referee does not know are skipped, at either level.
    def script(message: RefereeMessage) -> list[bytes]:
        if not isinstance(message, DecisionRequest):
            return []
        inner = pb.Decision(request_id=message.request_id, text=str(message.view.legal_actions[0]))
        decision = inner.SerializeToString() + b"\xf8\x07\x01" + b"\x82\x08\x02hi"
        return [b"\x12" + bytes([len(decision)]) + decision + b"\x98\x06\x7f"]

    record = _play(script).record
    assert record.forfeit is None and not record.ending.is_forfeit, record.forfeit
    assert sum(m.seat == HOSTILE for m in record.moves) > 1
    assert verify(record).ok


def _over_limit(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, DecisionRequest):
        return [_decision(message, text="take" + " " * 10_000_000)]
    return []


def _other_kind(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, DecisionRequest):
        return [_hello()]
    return []


def _twice(message: RefereeMessage) -> list[bytes]:
    return _first_legal(message) * 2


def _early(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, GameStart):  # a reply before any request (a guessed id)
        return [encode_bot_message(Decision(1, "take"))]
    return _first_legal(message)


def _wrong_id(delta: int) -> Script:
    def script(message: RefereeMessage) -> list[bytes]:
        if isinstance(message, DecisionRequest):
            rid = (message.request_id + delta) % 2**64
            action = str(message.view.legal_actions[0])
            return [
                pb.BotMessage(decision=pb.Decision(request_id=rid, text=action)).SerializeToString()
            ]
        return []

    return script


def _no_action(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, DecisionRequest):
        return [_decision(message)]
    return []


def _bad_utf8(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, DecisionRequest):
        # text = a lone UTF-16 surrogate in (invalid) UTF-8: ED A0 80
        decision = (
            pb.Decision(request_id=message.request_id).SerializeToString() + b"\x12\x03\xed\xa0\x80"
        )
        return [b"\x12" + bytes([len(decision)]) + decision]
    return []


def _reported(message: RefereeMessage) -> list[bytes]:
    if isinstance(message, DecisionRequest):
        return [encode_bot_message(BotError(NASTY * 500))]
    return []


STRUCTURAL: dict[str, tuple[Script, GameEndReason, int]] = {
    # name: (script, reason, moves the hostile bot had played when it forfeited)
    "over the 64 KiB reply limit": (_over_limit, GameEndReason.MALFORMED_REPLY, 0),
    "a HandshakeReply for a decision": (_other_kind, GameEndReason.MALFORMED_REPLY, 0),
    "two replies to one request": (_twice, GameEndReason.MALFORMED_REPLY, 1),
    "a reply before any request": (_early, GameEndReason.MALFORMED_REPLY, 0),
    "request id + 1": (_wrong_id(1), GameEndReason.MALFORMED_REPLY, 0),
    "request id - 2**64 (wraps)": (_wrong_id(2**64 - 1), GameEndReason.MALFORMED_REPLY, 0),
    "request id + 2**63": (_wrong_id(2**63), GameEndReason.MALFORMED_REPLY, 0),
    "a decision without action": (_no_action, GameEndReason.MALFORMED_REPLY, 0),
    "invalid UTF-8 text": (_bad_utf8, GameEndReason.MALFORMED_REPLY, 0),
    "a hostile BotError": (_reported, GameEndReason.CRASH, 0),
}


@pytest.mark.parametrize("name", list(STRUCTURAL))
def test_structural_faults_forfeit_the_sender_only(name: str) -> None:
    script, reason, hostile_moves = STRUCTURAL[name]
    record = _check_forfeit(_play(script), reason)
    assert sum(m.seat == HOSTILE for m in record.moves) == hostile_moves


HOSTILE_DETAILS = NASTY + "Z" * 3000
"""Hostile status details, well under gRPC's metadata limits (so that they arrive)."""


@pytest.mark.parametrize("code", list(grpc.StatusCode), ids=lambda c: c.name)
def test_every_status_a_bot_ends_its_stream_with_is_its_crash(code: grpc.StatusCode) -> None:
    # A status the bot chose is a crash, as any other (the stream is gone): protocol.md's
    # table, "closes the stream, crashes".
    record = _check_forfeit(
        _play(lambda m: Abort(code, HOSTILE_DETAILS) if isinstance(m, DecisionRequest) else []),
        GameEndReason.CRASH,
    )
    assert record.moves == ()
    assert record.forfeit is not None
    if code is not grpc.StatusCode.OK:
        assert code.name in record.forfeit.detail and "I WIN" in record.forfeit.detail


@pytest.mark.parametrize(
    "trailing",
    [
        tuple((f"k{i}", "v" * 1000) for i in range(200)),
        (("flood", "x" * 15_000),),
        (("flood-bin", b"\x1b" * 15_000),),
    ],
    ids=["many-keys", "one-huge-value", "one-huge-binary-value"],
)
def test_a_trailing_metadata_flood_is_the_senders_crash(
    trailing: tuple[tuple[str, str | bytes], ...],
) -> None:
    def script(message: RefereeMessage) -> Sequence[bytes] | Abort:
        if isinstance(message, DecisionRequest):
            return Abort(grpc.StatusCode.INTERNAL, NASTY, trailing)
        return []

    record = _check_forfeit(_play(script), GameEndReason.CRASH)
    assert record.moves == ()


def test_a_status_that_only_quotes_the_size_limit_is_recorded_as_it_came() -> None:
    """gRPC's words are all the referee sees of a message refused for its size, and a bot can
    end its own stream saying the same: it loses that game either way (docs/protocol.md),
    but the evidence was once a size nobody measured (``<message over 65536 bytes>``); it is
    the status the stream ended with."""
    spoof = "Received message larger than max (70000 vs. 65536)"

    def script(message: RefereeMessage) -> Sequence[bytes] | Abort:
        if isinstance(message, DecisionRequest):
            return Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, spoof)
        return []

    record = _check_forfeit(_play(script), GameEndReason.CRASH, GameEndReason.MALFORMED_REPLY)
    assert record.forfeit is not None
    assert record.forfeit.offending_input != f"<message over {MAX_REPLY_BYTES} bytes>"
    assert record.forfeit.offending_input == f"<the stream ended with RESOURCE_EXHAUSTED: {spoof}>"


# ---------------------------------------------------------------------------- fuzzing

_CANONICAL = sorted({str(a) for a in Game.new(seed=5, dealer=0).legal_actions()} | {"take"})


@st.composite
def _mutations(draw: st.DrawFn) -> Callable[[DecisionRequest], bytes]:
    """A reply built from the pending request by mutating a valid decision."""
    rid = draw(st.sampled_from(["same", "same", "same", "plus", "zero", "max"]))
    body = draw(
        st.sampled_from(["legal", "spelled", "known", "text", "structured", "none", "error"])
    )
    text = draw(st.text(max_size=60))
    known = draw(st.sampled_from(_CANONICAL))
    pick = draw(st.integers(min_value=0, max_value=1000))
    kind = draw(st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 2**31 - 1]))
    cover = draw(st.sampled_from(["", "6C", "AS", "ZZ", "7H", "10h"]))
    lead = draw(st.sampled_from(["", "6C", "AS", "KD", "9S", "\x00"]))
    swap = draw(st.booleans())
    unknown = draw(st.sampled_from([b"", b"\xf8\x06\x01", b"\x9a\x06\x03abc"]))
    flips = draw(st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), max_size=2))
    chop = draw(st.integers(min_value=0, max_value=3))

    def build(request: DecisionRequest) -> bytes:
        legal = [str(a) for a in request.view.legal_actions]
        request_id = {
            "same": request.request_id,
            "plus": request.request_id + 1,
            "zero": 0,
            "max": 2**64 - 1,
        }[rid]
        message = pb.BotMessage()
        if body == "error":
            message.error.message = text
        else:
            decision = message.decision
            decision.request_id = request_id
            if body == "legal":
                decision.text = legal[pick % len(legal)]
            elif body == "spelled":
                decision.text = f" {legal[pick % len(legal)].swapcase()}\n"
            elif body == "known":
                decision.text = known
            elif body == "text":
                decision.text = text
            elif body == "structured":
                decision.structured.kind = kind  # type: ignore[assignment]
                decision.structured.cover = cover
                decision.structured.lead = lead
                decision.structured.swap = swap
        data = bytearray(message.SerializeToString() + unknown)
        for at, xor in flips:
            data[at % len(data)] ^= xor
        return bytes(data[: len(data) - chop] if chop < len(data) else data)

    return build


_KINDS = {1: ActionKind.LEAD, 2: ActionKind.COVER_AND_LEAD, 3: ActionKind.COVER_AND_GO_OUT}
_KINDS[4] = ActionKind.TAKE


def _expected(data: bytes, request_id: int, legal: Sequence[Action]) -> GameEndReason | Action:
    """What the protocol says of ``data`` as the reply to ``request_id``, worked out with the
    generated protobuf classes and the rules engine (not the referee's serde module)."""
    try:
        message = pb.BotMessage.FromString(data)
    except Exception:  # any parse failure of the generated code
        return GameEndReason.MALFORMED_REPLY
    which = message.WhichOneof("body")
    if which == "error":
        return GameEndReason.CRASH
    if which != "decision" or message.decision.request_id != request_id:
        return GameEndReason.MALFORMED_REPLY
    decision = message.decision
    choice = decision.WhichOneof("action")
    try:
        if choice == "text":
            action = Action.parse(decision.text)
        elif choice == "structured":
            s = decision.structured
            if s.kind not in _KINDS:
                return GameEndReason.MALFORMED_REPLY
            action = Action(_KINDS[s.kind], cover=s.cover or None, lead=s.lead or None, swap=s.swap)
        else:
            return GameEndReason.MALFORMED_REPLY
    except (InvalidActionError, InvalidCardError):
        return GameEndReason.MALFORMED_REPLY
    if action not in legal:
        return GameEndReason.ILLEGAL_ACTION
    return action


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_mutations())
def test_mutated_replies_are_judged_as_the_protocol_says(
    mutate: Callable[[DecisionRequest], bytes],
) -> None:
    sent: list[tuple[bytes, int, tuple[Action, ...]]] = []

    def script(message: RefereeMessage) -> list[bytes]:
        if not isinstance(message, DecisionRequest):
            return []
        if sent:  # only the first reply is mutated; then the bot plays well
            return _first_legal(message)
        view = message.view
        assert isinstance(view, View)
        data = mutate(message)
        sent.append((data, message.request_id, tuple(view.legal_actions)))
        return [data]

    played = _play(script)
    record = played.record
    assert len(sent) == 1
    data, request_id, legal = sent[0]
    expected = _expected(data, request_id, legal)
    event(expected.value if isinstance(expected, GameEndReason) else "played")
    if isinstance(expected, GameEndReason):
        _check_forfeit(played, expected)
        assert record.moves == ()
    else:
        assert record.forfeit is None, (record.forfeit, data)
        assert record.moves[0].seat == HOSTILE and record.moves[0].action == str(expected)
        assert verify(record).ok


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=400))
def test_random_bytes_as_the_reply_are_the_senders_malformed_reply(data: bytes) -> None:
    try:
        decoded: BotMessage | None = decode_bot_message(data)
    except MalformedMessageError:
        decoded = None
    # Bytes that happen to read as a bot error are a crash; anything else that reads is of
    # the wrong kind or answers another request (the pending id is drawn at random).
    reason = GameEndReason.CRASH if isinstance(decoded, BotError) else GameEndReason.MALFORMED_REPLY
    played = _play(lambda m: [data] if isinstance(m, DecisionRequest) else [])
    record = _check_forfeit(played, reason)
    assert record.moves == ()


# ============================================================================ SDK side


class CarefulBot(Bot):
    """A bot that reads its whole view through the SDK's public helpers, as authors do."""

    name = "careful"
    version = "1.0.0"
    endings: ClassVar[list[GameResult]] = []

    def act(self, view: View) -> Action:
        CardTracker.from_view(view)  # refuses a view no game can reach (writing-a-bot.md)
        return greedy_action(view.legal_actions, view.trump)

    def on_game_end(self, result: GameResult) -> None:
        self.endings.append(result)


@dataclass
class Stream:
    replies: list[BotMessage]
    code: grpc.StatusCode
    details: str


def _referee(address: str, messages: Sequence[bytes]) -> Stream:
    """Play ``messages`` to the bot on one stream (a referee without limits of its own) and
    read every reply until the stream ends."""
    options = [
        ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ]
    with grpc.insecure_channel(address, options=options) as channel:
        play = channel.stream_stream(PLAY_PATH, None, None)
        replies: list[BotMessage] = []
        call = play(iter(messages), timeout=PATIENT)
        try:
            for data in call:
                replies.append(decode_bot_message(data))
        except grpc.RpcError as exc:
            return Stream(replies, exc.code(), exc.details() or "")
        return Stream(replies, grpc.StatusCode.OK, "")


def _handshake(**fields: object) -> bytes:
    handshake = pb.Handshake(
        protocol_version=PROTOCOL_VERSION,
        referee_version="fuzz",
        games=1,
        opponent_name="referee",
        time_control=pb.TimeControl(
            move_ms=1000, bank_ms=1000, grace_ms=50, clock=pb.CLOCK_KIND_WALL
        ),
    )
    for name, value in fields.items():
        if isinstance(value, pb.TimeControl):
            handshake.time_control.CopyFrom(value)
        else:
            setattr(handshake, name, value)
    return pb.RefereeMessage(handshake=handshake).SerializeToString()


GOOD_VIEW = view_to_pb(Game.new(seed=1, dealer=1).view(0))
SHUTDOWN = pb.RefereeMessage(shutdown=pb.Shutdown(reason="done")).SerializeToString()


def _request(request_id: int, edit: Callable[[pb.View], object] | None = None) -> bytes:
    message = pb.RefereeMessage()
    request = message.decision_request
    request.request_id = request_id
    request.game_number = 1
    request.view.CopyFrom(GOOD_VIEW)
    request.clock.move_ms = 1000
    request.clock.bank_ms = 1000
    if edit is not None:
        edit(request.view)
    return message.SerializeToString()


def _answers_the_good_request(reply: BotMessage, request_id: int) -> None:
    assert isinstance(reply, Decision) and reply.request_id == request_id, reply
    assert str(reply.action) in {str(a) for a in Game.new(seed=1, dealer=1).view(0).legal_actions}


def _is_clear_error(reply: BotMessage, *words: str) -> None:
    assert isinstance(reply, BotError), reply
    assert len(encode_bot_message(reply)) <= MAX_REPLY_BYTES
    for word in words:
        assert word in reply.message, reply.message


@pytest.fixture(scope="module")
def careful() -> Iterator[str]:
    with served(CarefulBot(), "uds") as (address, _):
        yield address


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_get_a_clear_error_and_the_stream_goes_on(careful: str, data: bytes) -> None:
    try:
        decode_referee_message(data)
    except MalformedMessageError:
        pass
    else:
        assume(False)  # the bytes happen to be a referee message: not what is fuzzed here
    stream = _referee(careful, [data, _handshake(), _request(77), SHUTDOWN])
    assert stream.code is grpc.StatusCode.OK, stream
    error, hello, decision = stream.replies
    _is_clear_error(error, "bot could not read the referee")
    assert isinstance(hello, HandshakeReply) and hello.protocol_version == PROTOCOL_VERSION
    _answers_the_good_request(decision, 77)


def _set(name: str, value: object) -> Callable[[pb.View], None]:
    def edit(view: pb.View) -> None:
        setattr(view, name, value)

    return edit


def _extend(name: str, values: Callable[[pb.View], list[str]]) -> Callable[[pb.View], None]:
    def edit(view: pb.View) -> None:
        getattr(view, name).extend(values(view))

    return edit


def _clear_legal(view: pb.View) -> None:
    del view.legal_actions[:]


MALFORMED_REQUESTS: dict[str, tuple[Callable[[pb.View], object], tuple[str, ...]]] = {
    "impossible card in the hand": (_extend("hand", lambda v: ["ZZ"]), ("view.hand", "ZZ")),
    "a card twice in the hand": (_extend("hand", lambda v: [v.hand[0]]), ("InvalidViewError",)),
    "face-up card also in the hand": (_set("face_up", GOOD_VIEW.hand[0]), ("InconsistentView",)),
    "a huge stock count": (_set("stock_count", 2**32 - 1), ("4294967294",)),
    "no legal actions": (_clear_legal, ("legal action",)),
    "garbage legal action": (_extend("legal_actions", lambda v: ["lead ZZ"]), ("legal_actions",)),
    "a seat of 7": (_set("seat", 7), ("view.seat",)),
    "an ending that is no rules ending": (_set("reason", 12), ("view.reason",)),
}


@pytest.mark.parametrize("name", list(MALFORMED_REQUESTS))
def test_a_malformed_view_gets_a_clear_error_and_the_next_request_an_answer(
    careful: str, name: str
) -> None:
    edit, words = MALFORMED_REQUESTS[name]
    stream = _referee(careful, [_handshake(), _request(5, edit), _request(6), SHUTDOWN])
    assert stream.code is grpc.StatusCode.OK, stream
    hello, error, decision = stream.replies
    assert isinstance(hello, HandshakeReply)
    _is_clear_error(error, *words)
    _answers_the_good_request(decision, 6)


def test_referee_messages_the_sdk_must_refuse_or_tolerate(careful: str) -> None:
    no_view = pb.RefereeMessage(
        decision_request=pb.DecisionRequest(request_id=9)
    ).SerializeToString()
    unnamed_clock = pb.TimeControl(move_ms=1000)
    unnamed_clock.clock = 7  # type: ignore[assignment]
    odd_clock = _handshake(time_control=unnamed_clock)
    zero_move = _handshake(time_control=pb.TimeControl(move_ms=0))
    newer_end = pb.RefereeMessage(
        game_end=pb.GameEnd(game_number=1, reason=99, detail=NASTY)  # type: ignore[arg-type]
    ).SerializeToString()
    other_version = _handshake(protocol_version=2)
    stream = _referee(
        careful,
        [
            odd_clock,
            zero_move,
            other_version,
            _handshake(),
            no_view,
            newer_end,
            _request(3),
            SHUTDOWN,
        ],
    )
    assert stream.code is grpc.StatusCode.OK, stream
    clock_error, move_error, hello_v2, hello, view_error, decision = stream.replies
    _is_clear_error(clock_error, "unknown clock kind 7")  # protocol.md, TimeControl
    _is_clear_error(move_error, "move_ms")
    # Another version: the SDK answers with its own, so that the referee refuses it clearly.
    assert isinstance(hello_v2, HandshakeReply) and hello_v2.protocol_version == PROTOCOL_VERSION
    assert isinstance(hello, HandshakeReply)
    _is_clear_error(view_error, "carries no view")
    # An ending this SDK does not know is "the game is over" (no reply; reason None).
    assert any(r.reason is None and r.detail == NASTY for r in CarefulBot.endings)
    _answers_the_good_request(decision, 3)


def test_a_request_over_4_mib_ends_the_stream_and_the_bot_serves_the_next_one(
    careful: str,
) -> None:
    huge = _request(4, _extend("history", lambda v: ["take"] * (MAX_REQUEST_BYTES // 5)))
    assert len(huge) > MAX_REQUEST_BYTES
    stream = _referee(careful, [_handshake(), huge, _request(8), SHUTDOWN])
    assert isinstance(stream.replies[0], HandshakeReply)
    assert stream.code is grpc.StatusCode.RESOURCE_EXHAUSTED, stream
    assert not any(isinstance(r, Decision) for r in stream.replies)
    again = _referee(careful, [_handshake(), _request(9), SHUTDOWN])
    assert again.code is grpc.StatusCode.OK, again
    _answers_the_good_request(again.replies[1], 9)


def test_a_request_just_under_4_mib_is_answered_in_bounded_time(careful: str) -> None:
    # ~3.9 MB of duplicated legal actions: decoded and answered, not a hang.
    legal = list(GOOD_VIEW.legal_actions)
    count = (MAX_REQUEST_BYTES - 64 * 1024) // (len(max(legal, key=len)) + 2)
    big = _request(12, _extend("legal_actions", lambda v: (legal * count)[:count]))
    assert MAX_REQUEST_BYTES // 2 < len(big) <= MAX_REQUEST_BYTES
    started = time.monotonic()
    stream = _referee(careful, [_handshake(), big, SHUTDOWN])
    assert time.monotonic() - started < PATIENT
    assert stream.code is grpc.StatusCode.OK, stream
    _answers_the_good_request(stream.replies[1], 12)


@pytest.mark.parametrize("where", ["handshake.ruleset", "view.trump"])
def test_an_oversized_malformed_field_still_gets_a_clear_bounded_error(
    careful: str, where: str
) -> None:
    if where == "handshake.ruleset":
        messages = [_handshake(ruleset="x" * 100_000), _handshake(), _request(21), SHUTDOWN]
    else:
        messages = [
            _handshake(),
            _request(20, _set("trump", "S" * 100_000)),
            _request(21),
            SHUTDOWN,
        ]
    stream = _referee(careful, messages)
    assert SDK_SEND_LIMIT_EXCEEDED not in stream.details, stream.details
    assert stream.code is grpc.StatusCode.OK, stream
    errors = [r for r in stream.replies if isinstance(r, BotError)]
    assert len(errors) == 1
    _is_clear_error(errors[0], where.split(".")[-1])
    _answers_the_good_request(stream.replies[-1], 21)
