"""A fast encoder of decision requests: the protobuf wire format written from cached fragments.

:func:`encode_decision_request` returns exactly the bytes of
``encode_referee_message(DecisionRequest(...))`` (:mod:`referee.protocol.wire`), for the
two-player :class:`~referee.rules.View` and the classic table's
:class:`~referee.rules.ClassicView`, for 0.6-0.7 of the CPU in game order
(``benchmarks/encode_request.py`` prints the figures): the request is the referee's largest
message, sent at every decision.

How:

- Every repeated string of a view (cards, actions) is written from a precomputed fragment, its
  tag, length and UTF-8 text in one ``bytes``, looked up by the canonical text (a ``str``
  hashes once, in C; ``Card``/``Action`` hash in Python). The 36 cards and the 2,666 interned
  actions of the two-player game are fragments from import on; the classic table's actions
  (too many to list) are added as they are met, in a bounded table.
- Small scalars (seats, counts) are fragments too, tag included, with proto3's omission of a
  zero already in them (a field with presence, such as ``to_move``, keeps its zero).
- The history, the longest part of a late request, is encoded incrementally: the encoded
  history of an earlier request whose history is a prefix of this one (checked by value, the
  prefix held by reference, so no recycled object id can fool it) is extended by the new
  actions only. Each action triggers the next request, so the prefix is almost always the
  previous request's history, whichever bot or game it went to.

Field numbers come from the generated descriptors (``kryt_proto``) at import, never from this
file, and the import checks that every field of the messages is one this module writes, of the
kind it writes, in field-number order (the order protobuf serializes known fields in). If a
change of ``proto/`` breaks any of that, :data:`ENABLED` is false and every request goes
through the regular encoder. So does any request with a view of another type or anything
unusual in it (a value out of the small tables, an unknown text, a non-integer count): the
regular encoder then gives the same bytes, or raises the error it raises.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Final, TypeVar

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from kryt_proto.v1 import bot_pb2 as pb
from referee.protocol.messages import AnyView, Clock, DecisionRequest
from referee.protocol.wire import (
    _CLASSIC_REASON_TO_PB,  # one map of endings to wire values: wire.py's
    _RULES_REASON_TO_PB,
    encode_referee_message,
)
from referee.rules import (
    Action,
    Card,
    ClassicAction,
    ClassicEndReason,
    ClassicView,
    EndReason,
    Suit,
    View,
)
from referee.rules.actions import BY_CODE

__all__ = ["ENABLED", "encode_decision_request"]


class _Unusual(Exception):
    """Something the fast path does not handle: the regular encoder takes the request."""


# ---------------------------------------------------------------------------- wire format

_WIRE_VARINT: Final = 0
_WIRE_LEN: Final = 2
_U32_END: Final = 1 << 32
_U64_END: Final = 1 << 64


def _varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer, least significant group first."""
    if value < 0x4000:
        return _SMALL_VARINTS[value]
    if value < 0x200000:
        return bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14))
    if value < 0x10000000:
        return bytes(
            (value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14 & 0x7F | 0x80, value >> 21)
        )
    if value < 0x800000000:  # 35 bits: every request id the referee draws (31 bits)
        return bytes(
            (
                value & 0x7F | 0x80,
                value >> 7 & 0x7F | 0x80,
                value >> 14 & 0x7F | 0x80,
                value >> 21 & 0x7F | 0x80,
                value >> 28,
            )
        )
    return _long_varint(value)


def _long_varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS: Final = tuple(_long_varint(i) for i in range(1 << 14))
"""Varints of 0..16383 (every length of a request within the 64 KiB limit but the longest)."""


_length: Final = _varint
"""The varint of a length (never negative)."""


def _tag(field: FieldDescriptor, wire_type: int) -> bytes:
    return _varint(field.number << 3 | wire_type)


# ---------------------------------------------------------------------------- schema check

# The kinds of field this module writes, as the descriptor describes them.
_UINT32: Final = "uint32"
_UINT64: Final = "uint64"
_OPT_UINT32: Final = "optional uint32"
_BOOL: Final = "bool"
_ENUM: Final = "enum"
_STRING: Final = "string"
_STRINGS: Final = "repeated string"
_PACKED_UINT32: Final = "packed uint32"
_PACKED_BOOL: Final = "packed bool"
_MESSAGE: Final = "message"
_MESSAGES: Final = "repeated message"

_TYPE_NAMES: Final = {
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_ENUM: "enum",
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_MESSAGE: "message",
}


def _kind(field: FieldDescriptor) -> str:
    """This module's name for the kind of ``field`` ("?" for a kind it never writes)."""
    name = _TYPE_NAMES.get(field.type, "?")
    if field.is_repeated:
        if name in ("uint32", "bool") and field.is_packed:
            return f"packed {name}"
        return f"repeated {name}" if name in ("string", "message") else "?"
    if name == "uint32" and field.has_presence:
        return _OPT_UINT32
    if name == "message" and field.containing_oneof is not None:
        return _MESSAGE
    return name


def _schema_problem(descriptor: Descriptor, written: tuple[tuple[str, str], ...]) -> str | None:
    """Why ``written`` (field names and kinds, in the order this module writes them) does not
    match the generated message, or ``None`` when it does."""
    fields = {f.name: f for f in descriptor.fields}
    if set(fields) != {name for name, _ in written}:
        return (
            f"{descriptor.full_name} has fields {sorted(fields)}, "
            f"the fast encoder writes {sorted(name for name, _ in written)}"
        )
    numbers = [fields[name].number for name, _ in written]
    if numbers != sorted(numbers):
        return f"{descriptor.full_name}: fields are no longer written in field-number order"
    for name, kind in written:
        if _kind(fields[name]) != kind:
            return f"{descriptor.full_name}.{name} is a {_kind(fields[name])}, expected {kind}"
    return None


# The order of each tuple is the order the encoders below write the fields in.
_REFEREE_MESSAGE_FIELDS: Final = (
    ("handshake", _MESSAGE),
    ("game_start", _MESSAGE),
    ("decision_request", _MESSAGE),
    ("game_end", _MESSAGE),
    ("shutdown", _MESSAGE),
)
_REQUEST_FIELDS: Final = (
    ("request_id", _UINT64),
    ("game_number", _UINT32),
    ("view", _MESSAGE),
    ("clock", _MESSAGE),
    ("table_view", _MESSAGE),
)
_CLOCK_FIELDS: Final = (("move_ms", _UINT32), ("bank_ms", _UINT32))
_VIEW_FIELDS: Final = (
    ("seat", _UINT32),
    ("dealer", _UINT32),
    ("hand", _STRINGS),
    ("pile", _STRINGS),
    ("trump", _STRING),
    ("face_up", _STRING),
    ("stock_count", _UINT32),
    ("opponent_count", _UINT32),
    ("opponent_known", _STRINGS),
    ("to_move", _OPT_UINT32),
    ("legal_actions", _STRINGS),
    ("history", _STRINGS),
    ("over", _BOOL),
    ("winner", _OPT_UINT32),
    ("reason", _ENUM),
    ("turn_limit", _UINT32),
    ("final_cover", _STRING),
    ("own_known", _STRINGS),
)
_SEAT_CARDS_FIELDS: Final = (("cards", _STRINGS),)
_TABLE_VIEW_FIELDS: Final = (
    ("ruleset", _STRING),
    ("seat", _UINT32),
    ("players", _UINT32),
    ("dealer", _UINT32),
    ("hand", _STRINGS),
    ("hand_sizes", _PACKED_UINT32),
    ("out", _PACKED_BOOL),
    ("known", _MESSAGES),
    ("leader", _OPT_UINT32),
    ("defender", _OPT_UINT32),
    ("led", _STRINGS),
    ("discard", _STRINGS),
    ("trump", _STRING),
    ("face_up", _STRING),
    ("stock_count", _UINT32),
    ("to_move", _OPT_UINT32),
    ("legal_actions", _STRINGS),
    ("history", _STRINGS),
    ("movers", _PACKED_UINT32),
    ("turn_limit", _UINT32),
    ("over", _BOOL),
    ("loser", _OPT_UINT32),
    ("reason", _ENUM),
)


def _first_problem() -> str | None:
    for descriptor, written in (
        (pb.RefereeMessage.DESCRIPTOR, _REFEREE_MESSAGE_FIELDS),
        (pb.DecisionRequest.DESCRIPTOR, _REQUEST_FIELDS),
        (pb.Clock.DESCRIPTOR, _CLOCK_FIELDS),
        (pb.View.DESCRIPTOR, _VIEW_FIELDS),
        (pb.SeatCards.DESCRIPTOR, _SEAT_CARDS_FIELDS),
        (pb.TableView.DESCRIPTOR, _TABLE_VIEW_FIELDS),
    ):
        problem = _schema_problem(descriptor, written)
        if problem is not None:
            return problem
    return None


SCHEMA_PROBLEM: Final = _first_problem()
"""Why the generated messages no longer match this encoder (``None``: they do)."""
ENABLED: Final = SCHEMA_PROBLEM is None
"""Whether the fast path is used at all (a test insists that it is)."""


# ---------------------------------------------------------------------------- fragments

_TEXT: Final = operator.attrgetter("text")
"""Canonical text of a Card or an action, read as the regular encoder reads it."""
_join: Final = b"".join


def _string_fragment(tag: bytes, text: str) -> bytes:
    """A string field's tag, length and UTF-8 text (a non-str is unusual)."""
    if type(text) is not str:
        raise _Unusual
    data = text.encode()  # a lone surrogate raises UnicodeEncodeError, a ValueError: unusual
    return tag + _length(len(data)) + data


class _Fragments(dict[str, bytes]):
    """Fragments of one repeated string field by text. An unknown text is encoded when met
    and kept while the table holds fewer than ``limit`` texts, so that texts never seen again
    cannot grow it without bound."""

    __slots__ = ("limit", "tag")

    def __init__(self, tag: bytes, texts: Iterable[str], limit: int) -> None:
        super().__init__((t, _string_fragment(tag, t)) for t in texts)
        self.tag = tag
        self.limit = limit

    def __missing__(self, text: str) -> bytes:
        fragment = _string_fragment(self.tag, text)
        if len(self) < self.limit:
            self[text] = fragment
        return fragment


def _uint_field(tag: bytes, value: object, end: int = _U32_END) -> bytes:
    """A uint field of any value (proto3 omits 0); a non-int or out of range is unusual."""
    if type(value) is not int or not 0 <= value < end:
        raise _Unusual
    return tag + _varint(value) if value else b""


def _packed(tag: bytes, values: tuple[int, ...]) -> bytes:
    """A packed repeated uint32/bool field of small values (each one varint byte)."""
    if not values:
        return b""
    data = bytes(values)  # TypeError or ValueError unless every value is an int in 0..255
    if not data.isascii():  # 128..255 take two varint bytes
        raise _Unusual
    return tag + _length(len(data)) + data


class _TurnLimits(dict[int, bytes]):
    """The turn_limit field by value, encoded when first met (a series has one or two)."""

    __slots__ = ("tag",)

    def __init__(self, tag: bytes) -> None:
        super().__init__()
        self.tag = tag

    def __missing__(self, value: int) -> bytes:
        fragment = _uint_field(self.tag, value)
        if len(self) < 64:
            self[value] = fragment
        return fragment


_SEATS: Final = range(8)
_COUNTS: Final = range(64)
_CARD_TEXTS: Final = tuple(c.text for c in Card.all())
_ACTION_TEXTS: Final = tuple(a.text for a in BY_CODE if a is not None)
_CLASSIC_TEXTS_KEPT: Final = 20_000
"""Most classic action texts kept per field (leads and takes repeat; a few MB at most)."""
_EndReasonT = TypeVar("_EndReasonT", EndReason, ClassicEndReason)


class _MessageFragments:
    """The fragments of the fields of one view message (``View`` or ``TableView``) that the
    encoders below look up by value; each under the field's own tag."""

    def __init__(self, d: Descriptor) -> None:
        self.d = d

    def tag(self, name: str, wire_type: int) -> bytes:
        return _tag(self.d.fields_by_name[name], wire_type)

    def uints(self, name: str, values: range) -> dict[int, bytes]:
        """Small values of a uint32 field without presence (0 omitted)."""
        tag = self.tag(name, _WIRE_VARINT)
        return {v: tag + _varint(v) if v else b"" for v in values}

    def optional(self, name: str) -> dict[int | None, bytes]:
        """Seats of an optional uint32 field (0 written, ``None`` absent)."""
        tag = self.tag(name, _WIRE_VARINT)
        table: dict[int | None, bytes] = {v: tag + _varint(v) for v in _SEATS}
        table[None] = b""
        return table

    def strings(self, name: str, texts: Iterable[str], limit: int) -> Callable[[str], bytes]:
        """The fragment of each element of a repeated string field, by text."""
        return _Fragments(self.tag(name, _WIRE_LEN), texts, limit).__getitem__

    def cards(self, name: str) -> Callable[[str], bytes]:
        return self.strings(name, _CARD_TEXTS, len(_CARD_TEXTS))

    def card(self, name: str) -> dict[str, bytes]:
        """A singular card field by text."""
        tag = self.tag(name, _WIRE_LEN)
        return {text: _string_fragment(tag, text) for text in _CARD_TEXTS}

    def trump(self) -> dict[Suit, bytes]:
        """The trump suit's letter, by suit (an IntEnum: hashed in C)."""
        tag = self.tag("trump", _WIRE_LEN)
        return {s: _string_fragment(tag, s.letter) for s in Suit}

    def turn_limits(self) -> _TurnLimits:
        return _TurnLimits(self.tag("turn_limit", _WIRE_VARINT))

    def over(self) -> dict[bool, bytes]:
        return {False: b"", True: self.tag("over", _WIRE_VARINT) + b"\x01"}

    def reasons(self, to_pb: Mapping[_EndReasonT, int]) -> dict[_EndReasonT | None, bytes]:
        tag = self.tag("reason", _WIRE_VARINT)
        table: dict[_EndReasonT | None, bytes] = {
            r: tag + _varint(v) if v else b"" for r, v in to_pb.items()
        }
        table[None] = b""
        return table


# ---------------------------------------------------------------------------- history


class _History:
    """A history field encoded incrementally: from the encoded history of an earlier request
    whose history is a prefix of this one, plus the fragments of the actions since.

    An entry is found by the length and the ids of the last, middle, first and second
    actions, which tell the games of a process apart (``take`` alone is a third of all
    actions), and is used only if the prefix it holds equals the history's first actions
    (compared in C, identity first), so neither a recycled id nor another game under the same
    key can give wrong bytes: they cost a miss. An entry that was extended is dropped, so a
    game holds one entry. Only actions of ``action_type`` (the engine's, equal only when
    their texts are equal) enter an entry. Safe under threads: the dictionary operations are
    atomic and entries immutable; a race costs at most a miss."""

    LOOKBACK: Final = 4
    """Prefixes tried: this many actions back (each action prompts the next request)."""
    LIMIT: Final = 1024
    """Entries kept before the table is emptied: one per live game (a loop serves ~64), the
    rest ended games; at most ~15 MB even if every history reached the turn limit."""

    __slots__ = ("action_type", "entries", "fragment")

    def __init__(self, fragment: Callable[[str], bytes], action_type: type) -> None:
        self.fragment = fragment
        self.action_type = action_type
        self.entries: dict[tuple[int, ...], tuple[tuple[object, ...], bytes]] = {}

    def encode(self, history: tuple[object, ...]) -> bytes:
        """The encoded field (every element tagged) of ``history``."""
        n = len(history)
        if n < 2:
            return self._encode(history, n, id(history[0]), 0) if n else b""
        entries = self.entries
        first, second = id(history[0]), id(history[1])
        # The rule: one action since the previous request. Written out: the hot path.
        m = n - 1
        key = (m, id(history[m - 1]), id(history[m >> 1]), first, second if m > 1 else 0)
        entry = entries.get(key)
        action = history[m]
        if entry is None or type(action) is not self.action_type or entry[0] != history[:m]:
            return self._encode(history, n, first, second)
        entries.pop(key, None)  # extended: the next request extends the new entry
        data = entry[1] + self.fragment(action.text)  # type: ignore[attr-defined]  # checked
        if len(entries) >= self.LIMIT:
            entries.clear()
        entries[n, id(action), id(history[n >> 1]), first, second] = (history, data)
        return data

    def _encode(self, history: tuple[object, ...], n: int, first: int, second: int) -> bytes:
        """:meth:`encode` from the longest prefix found of the other lengths tried, or from
        scratch."""
        entries = self.entries
        start, data = 0, b""
        for m in (n, *range(n - 2, max(n - self.LOOKBACK, 0), -1)):
            key = (m, id(history[m - 1]), id(history[m >> 1]), first, second if m > 1 else 0)
            entry = entries.get(key)
            if entry is not None and entry[0] == (history if m == n else history[:m]):
                if m == n:
                    return entry[1]
                start, data = m, entry[1]
                entries.pop(key, None)
                break
        new = history[start:]
        if not set(map(type, new)) <= {self.action_type}:
            raise _Unusual
        data += _join(map(self.fragment, map(_TEXT, new)))
        if len(entries) >= self.LIMIT:
            entries.clear()
        entries[n, id(history[-1]), id(history[n >> 1]), first, second] = (history, data)
        return data


# ---------------------------------------------------------------------------- the two views

_F = _MessageFragments(pb.View.DESCRIPTOR)
_V_SEAT: Final = _F.uints("seat", _SEATS)
_V_DEALER: Final = _F.uints("dealer", _SEATS)
_V_HAND: Final = _F.cards("hand")
_V_PILE: Final = _F.cards("pile")
_V_TRUMP: Final = _F.trump()
_V_FACE_UP: Final = _F.card("face_up")
_V_STOCK_COUNT: Final = _F.uints("stock_count", _COUNTS)
_V_OPPONENT_COUNT: Final = _F.uints("opponent_count", _COUNTS)
_V_OPPONENT_KNOWN: Final = _F.cards("opponent_known")
_V_TO_MOVE: Final = _F.optional("to_move")
_V_LEGAL: Final = _F.strings("legal_actions", _ACTION_TEXTS, len(_ACTION_TEXTS))
_V_HISTORY: Final = _History(_F.strings("history", _ACTION_TEXTS, len(_ACTION_TEXTS)), Action)
_V_OVER: Final = _F.over()
_V_WINNER: Final = _F.optional("winner")
_V_REASON: Final = _F.reasons(_RULES_REASON_TO_PB)
_V_TURN_LIMIT: Final = _F.turn_limits()
_V_FINAL_COVER: Final = _F.card("final_cover")
_V_OWN_KNOWN: Final = _F.cards("own_known")

_F = _MessageFragments(pb.TableView.DESCRIPTOR)
_T_RULESET: Final = _F.tag("ruleset", _WIRE_LEN)
_T_SEAT: Final = _F.uints("seat", _SEATS)
_T_PLAYERS: Final = _F.uints("players", _SEATS)
_T_DEALER: Final = _F.uints("dealer", _SEATS)
_T_HAND: Final = _F.cards("hand")
_T_HAND_SIZES: Final = _F.tag("hand_sizes", _WIRE_LEN)
_T_OUT: Final = _F.tag("out", _WIRE_LEN)
_T_KNOWN: Final = _F.tag("known", _WIRE_LEN)
_T_LEADER: Final = _F.optional("leader")
_T_DEFENDER: Final = _F.optional("defender")
_T_LED: Final = _F.cards("led")
_T_DISCARD: Final = _F.cards("discard")
_T_TRUMP: Final = _F.trump()
_T_FACE_UP: Final = _F.card("face_up")
_T_STOCK_COUNT: Final = _F.uints("stock_count", _COUNTS)
_T_TO_MOVE: Final = _F.optional("to_move")
_T_LEGAL: Final = _F.strings("legal_actions", (), _CLASSIC_TEXTS_KEPT)
_T_HISTORY: Final = _History(_F.strings("history", (), _CLASSIC_TEXTS_KEPT), ClassicAction)
_T_MOVERS: Final = _F.tag("movers", _WIRE_LEN)
_T_TURN_LIMIT: Final = _F.turn_limits()
_T_OVER: Final = _F.over()
_T_LOSER: Final = _F.optional("loser")
_T_REASON: Final = _F.reasons(_CLASSIC_REASON_TO_PB)
_SEAT_CARDS: Final = _MessageFragments(pb.SeatCards.DESCRIPTOR).cards("cards")

_RULESETS: Final = {"classic": _string_fragment(_T_RULESET, "classic"), "": b""}

_F = _MessageFragments(pb.DecisionRequest.DESCRIPTOR)
_R_REQUEST_ID: Final = _F.tag("request_id", _WIRE_VARINT)
_R_GAME_NUMBER: Final = _F.tag("game_number", _WIRE_VARINT)
_R_VIEW: Final = _F.tag("view", _WIRE_LEN)
_R_CLOCK: Final = _F.tag("clock", _WIRE_LEN)
_R_TABLE_VIEW: Final = _F.tag("table_view", _WIRE_LEN)
_R_MOVE_MS: Final = _MessageFragments(pb.Clock.DESCRIPTOR).tag("move_ms", _WIRE_VARINT)
_R_BANK_MS: Final = _MessageFragments(pb.Clock.DESCRIPTOR).tag("bank_ms", _WIRE_VARINT)
_R_DECISION_REQUEST: Final = _MessageFragments(pb.RefereeMessage.DESCRIPTOR).tag(
    "decision_request", _WIRE_LEN
)
del _F


def _view(v: View) -> bytes:
    """The fields of a ``pb.View`` (what ``wire._fill_view`` fills), in field-number order."""
    seat, dealer, stock_count, opponent_count = v.seat, v.dealer, v.stock_count, v.opponent_count
    to_move, winner, over, trump, turn_limit = v.to_move, v.outcome, v.over, v.trump, v.turn_limit
    face_up, final_cover = v.face_up, v.final_cover
    pile, opponent_known, own_known = v.pile, v.opponent_known, v.own_known
    # Dict keys compare by value (True == 1 == 1.0): the fast path wants the engine's types.
    if not (
        type(seat) is type(dealer) is type(stock_count) is type(opponent_count) is int
        and type(turn_limit) is int
        and type(over) is bool
        and type(trump) is Suit
        and (to_move is None or type(to_move) is int)
        and (winner is None or type(winner) is int)
        and (face_up is None or type(face_up) is Card)
        and (final_cover is None or type(final_cover) is Card)
    ):
        raise _Unusual
    # Often empty lists skip the join (each costs a few hundred ns on the hot path).
    return _join(
        (
            _V_SEAT[seat],
            _V_DEALER[dealer],
            _join(map(_V_HAND, map(_TEXT, v.hand))),
            _join(map(_V_PILE, map(_TEXT, pile))) if pile else b"",
            _V_TRUMP[trump],
            b"" if face_up is None else _V_FACE_UP[face_up.text],
            _V_STOCK_COUNT[stock_count],
            _V_OPPONENT_COUNT[opponent_count],
            _join(map(_V_OPPONENT_KNOWN, map(_TEXT, opponent_known))) if opponent_known else b"",
            _V_TO_MOVE[to_move],
            _join(map(_V_LEGAL, map(_TEXT, v.legal_actions))),
            _V_HISTORY.encode(v.history),
            _V_OVER[over],
            _V_WINNER[winner],
            _V_REASON[v.reason],
            _V_TURN_LIMIT[turn_limit],
            b"" if final_cover is None else _V_FINAL_COVER[final_cover.text],
            _join(map(_V_OWN_KNOWN, map(_TEXT, own_known))) if own_known else b"",
        )
    )


_NO_KNOWN_CARDS: Final = _T_KNOWN + _length(0)
"""One seat's empty ``SeatCards`` (a repeated message writes even an empty element)."""


def _seat_cards(cards: tuple[Card, ...]) -> bytes:
    body = _join(map(_SEAT_CARDS, map(_TEXT, cards)))
    return _T_KNOWN + _length(len(body)) + body


def _table_view(v: ClassicView) -> bytes:
    """The fields of a ``pb.TableView`` (``wire._fill_table_view``), in field-number order."""
    seat, players, dealer, stock_count = v.seat, v.players, v.dealer, v.stock_count
    leader, defender, to_move, loser, over = v.leader, v.defender, v.to_move, v.loser, v.over
    out, ruleset, trump, turn_limit, known = v.out, v.ruleset, v.trump, v.turn_limit, v.known
    face_up, led, discard, movers = v.face_up, v.led, v.discard, v.movers
    if not (
        type(seat) is type(players) is type(dealer) is type(stock_count) is type(turn_limit) is int
        and type(over) is bool
        and type(trump) is Suit
        and (leader is None or type(leader) is int)
        and (defender is None or type(defender) is int)
        and (to_move is None or type(to_move) is int)
        and (loser is None or type(loser) is int)
        and (face_up is None or type(face_up) is Card)
        and set(map(type, out)) <= {bool}
    ):
        raise _Unusual
    ruleset_field = _RULESETS.get(ruleset)
    return _join(
        (
            _string_fragment(_T_RULESET, ruleset) if ruleset_field is None else ruleset_field,
            _T_SEAT[seat],
            _T_PLAYERS[players],
            _T_DEALER[dealer],
            _join(map(_T_HAND, map(_TEXT, v.hand))),
            _packed(_T_HAND_SIZES, v.hand_sizes),
            _packed(_T_OUT, out),
            _join(map(_seat_cards, known)) if any(known) else _NO_KNOWN_CARDS * len(known),
            _T_LEADER[leader],
            _T_DEFENDER[defender],
            _join(map(_T_LED, map(_TEXT, led))) if led else b"",
            _join(map(_T_DISCARD, map(_TEXT, discard))) if discard else b"",
            _T_TRUMP[trump],
            b"" if face_up is None else _T_FACE_UP[face_up.text],
            _T_STOCK_COUNT[stock_count],
            _T_TO_MOVE[to_move],
            _join(map(_T_LEGAL, map(_TEXT, v.legal_actions))),
            _T_HISTORY.encode(v.history),
            _packed(_T_MOVERS, movers) if movers else b"",
            _T_TURN_LIMIT[turn_limit],
            _T_OVER[over],
            _T_LOSER[loser],
            _T_REASON[v.reason],
        )
    )


# ---------------------------------------------------------------------------- the request

_CLOCKS: dict[tuple[int, int], bytes] = {}
"""Encoded clocks by (move_ms, bank_ms): the move time rarely changes, the bank often not."""
_CLOCKS_KEPT: Final = 4096


def _clock(clock: Clock) -> bytes:
    move_ms, bank_ms = clock.move_ms, clock.bank_ms
    if not type(move_ms) is type(bank_ms) is int:
        raise _Unusual
    key = (move_ms, bank_ms)
    encoded = _CLOCKS.get(key)
    if encoded is None:
        body = _uint_field(_R_MOVE_MS, move_ms) + _uint_field(_R_BANK_MS, bank_ms)
        encoded = _R_CLOCK + _length(len(body)) + body
        if len(_CLOCKS) >= _CLOCKS_KEPT:
            _CLOCKS.clear()
        _CLOCKS[key] = encoded
    return encoded


_FAST_FAILURES: Final = (_Unusual, KeyError, TypeError, ValueError, AttributeError)
"""What sends a request to the regular encoder: the fast path met something unusual."""


def encode_decision_request(
    request_id: int, game_number: int, view: AnyView, clock: Clock
) -> bytes:
    """The bytes of ``encode_referee_message(DecisionRequest(request_id=request_id,
    game_number=game_number, view=view, clock=clock))``, identical to the last byte, written
    from cached fragments. A view of another type than the engine's ``View`` and
    ``ClassicView``, or anything unusual in the request, goes through that regular encoder
    (which raises :class:`~referee.protocol.wire.WireError` for what it cannot encode)."""
    if ENABLED:
        try:
            if not (
                type(request_id) is type(game_number) is int
                and 0 <= request_id < _U64_END
                and 0 <= game_number < _U32_END
            ):
                raise _Unusual
            ids = (_R_REQUEST_ID + _varint(request_id) if request_id else b"") + (
                _R_GAME_NUMBER + _varint(game_number) if game_number else b""
            )
            clock_field = _clock(clock)
            kind = type(view)
            if kind is View:
                body = _view(view)  # type: ignore[arg-type]  # checked: a View
                tag, first, last = _R_VIEW, ids, clock_field  # field order: view, clock
            elif kind is ClassicView:
                body = _table_view(view)  # type: ignore[arg-type]  # checked: a ClassicView
                tag, first, last = _R_TABLE_VIEW, ids + clock_field, b""  # clock, table_view
            else:
                raise _Unusual
            body_length = _length(len(body))
            size = len(first) + len(tag) + len(body_length) + len(body) + len(last)
            # One join: the view's bytes are copied once.
            return _join((_R_DECISION_REQUEST, _length(size), first, tag, body_length, body, last))
        except _FAST_FAILURES:
            pass
    return encode_referee_message(
        DecisionRequest(request_id=request_id, game_number=game_number, view=view, clock=clock)
    )
