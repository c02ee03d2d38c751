"""The compact stored form of a game's deal and moves (``games.packed``): bytes, not JSON.

A random game of about 100 moves took ~6 KB as JSON objects (``{"seat": 0, "action":
"cover 9H 6C", "seconds": 0.000731}``); packed it takes a few hundred bytes. The format is
this module's own (it does not borrow the rules core's action codes or card indices, so the
stored bytes mean the same whatever the engine does internally), and it is exact: every
value comes back as it went in, including action text that is not a canonical action (an
imported game file, say), which is kept as text.

Layout (version 1)::

    version      1 byte, = 1
    deck         varint n, then n card bytes
    moves        until the end, each:
      header     1 byte: bits 0-1 seat, bit 2 CPU time follows, bit 3 times are doubles,
                 bits 4-7 the action's form (see ``_FORMS``); form 0 is literal text
      action     form 0: varint length + UTF-8 text; else one byte per card of the form
      seconds    varint microseconds, or 8 bytes (IEEE double, big-endian) with bit 3
      cpu        the same, if bit 2 is set

Cards are ``rank * 4 + suit`` (ranks ``6789TJQKA``, suits ``CDHS``). Times are stored as
whole microseconds when they are whole microseconds (the referee rounds its measurements
to the microsecond), else as the exact double. Pure: no I/O, no database.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from referee.record import Move

FORMAT_VERSION: Final = 1

RANKS: Final = "6789TJQKA"
SUITS: Final = "CDHS"
CARDS: Final = tuple(r + s for r in RANKS for s in SUITS)
"""Card texts by code."""
_CODE: Final = {text: code for code, text in enumerate(CARDS)}

_SEAT_BITS: Final = 0b11
_CPU_BIT: Final = 1 << 2
_DOUBLE_BIT: Final = 1 << 3
_FORM_SHIFT: Final = 4
_MAX_SEAT: Final = 3
_MAX_MICROS: Final = 2**53
"""Microsecond counts above this are stored as doubles (no float is lost either way)."""
_DOUBLE: Final = struct.Struct(">d")

_C: Final = "([6789TJQKA][CDHS])"
_FORMS: Final = (
    # (form code, pattern of the canonical text, template rebuilding it from the cards)
    (1, re.compile("take"), "take"),
    (2, re.compile("swap take"), "swap take"),
    (3, re.compile(f"lead {_C}"), "lead {}"),
    (4, re.compile(f"swap lead {_C}"), "swap lead {}"),
    (5, re.compile(f"cover {_C}"), "cover {}"),
    (6, re.compile(f"swap cover {_C}"), "swap cover {}"),
    (7, re.compile(f"cover {_C} {_C}"), "cover {} {}"),
    (8, re.compile(f"swap cover {_C} {_C}"), "swap cover {} {}"),
    # The classic table: several led cards of one rank, covers as led:cover pairs.
    (9, re.compile(f"lead {_C} {_C}"), "lead {} {}"),
    (10, re.compile(f"lead {_C} {_C} {_C}"), "lead {} {} {}"),
    (11, re.compile(f"lead {_C} {_C} {_C} {_C}"), "lead {} {} {} {}"),
    (12, re.compile(f"cover {_C}:{_C}"), "cover {}:{}"),
    (13, re.compile(f"cover {_C}:{_C} {_C}:{_C}"), "cover {}:{} {}:{}"),
    (14, re.compile(f"cover {_C}:{_C} {_C}:{_C} {_C}:{_C}"), "cover {}:{} {}:{} {}:{}"),
    (
        15,
        re.compile(f"cover {_C}:{_C} {_C}:{_C} {_C}:{_C} {_C}:{_C}"),
        "cover {}:{} {}:{} {}:{} {}:{}",
    ),
)
_TEMPLATES: Final = {form: (template, template.count("{}")) for form, _, template in _FORMS}
_BY_WORD: Final = {
    word: [(form, pattern) for form, pattern, _ in _FORMS if pattern.pattern.startswith(word)]
    for word in ("take", "swap", "lead", "cover")
}
_LITERAL: Final = 0


class PackError(ValueError):
    """Data that cannot be packed (a seat outside 0..3, an unknown card, a negative time)
    or bytes that are not a packed game; the message names the offending value."""


@dataclass(frozen=True, slots=True)
class Unpacked:
    """A game's deal and moves as :func:`unpack` gives them back."""

    deck: tuple[str, ...]
    moves: tuple[Move, ...]


def pack(deck: Sequence[str], moves: Sequence[Move]) -> bytes:
    """The packed form of a deal (card texts like ``"TH"``) and the moves played on it."""
    out = bytearray((FORMAT_VERSION,))
    _varint(out, len(deck))
    for card in deck:
        code = _CODE.get(card)
        if code is None:
            raise PackError(f"deck card {card!r} is not a card like 'TH' or '6C'")
        out.append(code)
    for move in moves:
        _pack_move(out, move)
    return bytes(out)


def unpack(data: bytes) -> Unpacked:
    """The deal and moves of :func:`pack`'s bytes, exactly as they were packed."""
    view = memoryview(data)
    if len(view) == 0 or view[0] != FORMAT_VERSION:
        first = view[0] if len(view) else None
        raise PackError(f"not a packed game of format {FORMAT_VERSION}: starts with {first!r}")
    try:
        count, pos = _read_varint(view, 1)
        deck = tuple(CARDS[code] for code in view[pos : pos + count])
        if len(deck) != count:
            raise PackError(f"the deck is cut short: {len(deck)} of {count} cards")
        pos += count
        moves = []
        while pos < len(view):
            move, pos = _unpack_move(view, pos)
            moves.append(move)
    except (IndexError, UnicodeDecodeError):
        raise PackError(f"packed game of {len(view)} bytes is cut short or corrupt") from None
    return Unpacked(deck, tuple(moves))


def _pack_move(out: bytearray, move: Move) -> None:
    seat = move.seat
    if type(seat) is not int or not 0 <= seat <= _MAX_SEAT:
        raise PackError(f"move seat must be 0..{_MAX_SEAT}, got {seat!r}")
    form, cards = _form(move.action)
    times = [move.seconds] if move.cpu_seconds is None else [move.seconds, move.cpu_seconds]
    micros = [_micros(t) for t in times]
    exact = all(m is not None for m in micros)
    header = seat | form << _FORM_SHIFT
    header |= 0 if move.cpu_seconds is None else _CPU_BIT
    header |= 0 if exact else _DOUBLE_BIT
    out.append(header)
    if form == _LITERAL:
        text = move.action.encode("utf-8")
        _varint(out, len(text))
        out += text
    else:
        out += bytes(cards)
    for value, whole in zip(times, micros, strict=True):
        if exact:
            assert whole is not None
            _varint(out, whole)
        else:
            out += _DOUBLE.pack(value)


def _unpack_move(view: memoryview, pos: int) -> tuple[Move, int]:
    header = view[pos]
    pos += 1
    form = header >> _FORM_SHIFT
    if form == _LITERAL:
        length, pos = _read_varint(view, pos)
        raw = bytes(view[pos : pos + length])
        if len(raw) != length:
            raise IndexError(pos)
        action = raw.decode("utf-8")
        pos += length
    else:
        template, count = _TEMPLATES[form]
        codes = view[pos : pos + count]
        if len(codes) != count:
            raise IndexError(pos)
        action = template.format(*(CARDS[c] for c in codes))
        pos += count
    times = []
    for _ in range(2 if header & _CPU_BIT else 1):
        if header & _DOUBLE_BIT:
            (value,) = _DOUBLE.unpack_from(view, pos) if pos + 8 <= len(view) else (None,)
            if value is None:
                raise IndexError(pos)
            times.append(float(value))
            pos += 8
        else:
            whole, pos = _read_varint(view, pos)
            times.append(whole / 1e6)
    cpu = times[1] if len(times) == 2 else None
    return Move(header & _SEAT_BITS, action, times[0], cpu), pos


def _form(action: str) -> tuple[int, list[int]]:
    """The form code and card codes of a canonical action; form 0 (literal) otherwise."""
    word = action.partition(" ")[0]
    for form, pattern in _BY_WORD.get(word, ()):
        match = pattern.fullmatch(action)
        if match is not None:
            return form, [_CODE[card] for card in match.groups()]
    return _LITERAL, []


def _micros(seconds: float) -> int | None:
    """``seconds`` as whole microseconds if that is exactly what it is, else None."""
    if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds < 0:
        raise PackError(f"move times must be finite numbers >= 0, got {seconds!r}")
    if seconds * 1e6 >= _MAX_MICROS:
        return None
    whole = round(seconds * 1e6)
    return whole if whole / 1e6 == seconds else None


def _varint(out: bytearray, value: int) -> None:
    """Unsigned LEB128: 7 bits a byte, low bits first."""
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _read_varint(view: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
