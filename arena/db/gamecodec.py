"""The compact stored form of a game's deal and moves (``games.packed``): bytes, not JSON.

A random game of about 175 moves took ~6-9 KB as JSON objects (``{"seat": 0, "action":
"cover 9H 6C", "seconds": 0.000731}``); packed it takes a few hundred bytes. Every value
comes back exactly as it went in, including action text that is not a canonical action (an
imported game file, say), which is kept as text.

Two formats, told apart by the first byte:

**Format 2, replayed** (what a game the referee recorded is stored as). The moves are
replayed through the rules core, so a move's seat is implied (the seat to move) and its
action is its index among the legal actions *sorted by their text* (not the engine's listing
order, which may change); an only action costs no bits at all. Bit stream, least
significant bit first, after the version byte:

    deck         139 bits: the permutation's rank (Lehmer code) among the 36! deals
    k_wall       5 bits: parameter of the wall times' exponential-Golomb code
    cpu          1 bit: every move has a CPU time (then k_cpu, 5 bits)
    count        the number of moves, exponential-Golomb (k = 5)
    moves        each: the action's index in ceil(log2(legal)) bits, the wall time in whole
                 microseconds (exp-Golomb, k_wall), the CPU time (exp-Golomb, k_cpu)

Decoding needs what the row holds anyway: dealer, turn limit, ruleset and seats.

**Format 1, general** (anything format 2 cannot hold: moves that do not replay, a seat that is
not the seat to move, times that are not whole microseconds, CPU times on some moves only).
Bytes::

    deck         varint n, then n card bytes
    moves        until the end, each:
      header     1 byte: bits 0-1 seat, bit 2 CPU time follows, bit 3 times are doubles,
                 bits 4-7 the action's form (see ``_FORMS``); form 0 is literal text
      action     form 0: varint length + UTF-8 text; else one byte per card of the form
      seconds    varint microseconds, or 8 bytes (IEEE double, big-endian) with bit 3
      cpu        the same, if bit 2 is set

Cards are ``rank * 4 + suit`` (ranks ``6789TJQKA``, suits ``CDHS``): this module's own codes,
so the stored bytes do not depend on the engine's internal indices. Times are whole
microseconds when they are (the referee rounds its measurements to the microsecond).
No I/O, no database.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Final

from referee.record import Move
from referee.rules import Game
from referee.rules.errors import RulesError

FORMAT_VERSION: Final = 1
"""The general format (any deal, any moves)."""
REPLAYED_VERSION: Final = 2
"""The replayed format (moves that are legal actions of the game, in order)."""

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


@dataclass(frozen=True, slots=True)
class Table:
    """What replaying a deal needs besides the deal: who dealt, the turn limit, the rules."""

    dealer: int
    turn_limit: int
    ruleset: str = "default"
    seats: int = 2


def pack(deck: Sequence[str], moves: Sequence[Move], table: Table | None = None) -> bytes:
    """The packed form of a deal (card texts like ``"TH"``) and the moves played on it.

    With ``table``, moves that replay as legal actions are stored in the replayed format
    (a few bits a move); anything else, or no ``table``, in the general format.
    """
    if table is not None:
        replayed = _pack_replayed(deck, moves, table)
        if replayed is not None:
            return replayed
    return _pack_general(deck, moves)


def unpack(data: bytes, table: Table | None = None) -> Unpacked:
    """The deal and moves of :func:`pack`'s bytes, exactly as they were packed.

    ``table`` must be what they were packed with (the replayed format needs it).
    """
    if data[:1] == bytes((REPLAYED_VERSION,)):
        if table is None:
            raise PackError("a game packed in the replayed format needs its table to unpack")
        return _unpack_replayed(data, table)
    return _unpack_general(data)


def count_moves(data: bytes) -> int:
    """How many moves :func:`pack`'s bytes hold, without replaying them (for listings)."""
    if data[:1] == bytes((REPLAYED_VERSION,)):
        bits = _BitReader(data)
        bits.bits(8 + _DECK_BITS)
        bits.bits(_K_BITS)
        if bits.bits(1):
            bits.bits(_K_BITS)
        return bits.golomb(_COUNT_K)
    return len(_unpack_general(data).moves)


def _pack_general(deck: Sequence[str], moves: Sequence[Move]) -> bytes:
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


def _unpack_general(data: bytes) -> Unpacked:
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
    if seconds * 1e6 >= _MAX_MICROS or math.copysign(1.0, seconds) < 0:
        return None  # too long to be counted in microseconds, or -0.0: kept as a double
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


# ------------------------------------------------------------------------ the replayed format

_DECK_BITS: Final = math.factorial(len(CARDS)).bit_length()
_K_BITS: Final = 5
_COUNT_K: Final = 5


class _BitWriter:
    """Bits appended least significant first to one integer."""

    def __init__(self) -> None:
        self.value = 0
        self.length = 0

    def bits(self, value: int, width: int) -> None:
        self.value |= value << self.length
        self.length += width

    def golomb(self, value: int, k: int) -> None:
        """Exponential-Golomb code of order ``k``: small values cost about ``k + 1`` bits,
        an outlier (a move that took seconds) only about twice its magnitude in bits."""
        q = (value >> k) + 1
        n = q.bit_length() - 1
        self.bits(1 << n, n + 1)  # n zeros, then a one
        self.bits(q & ((1 << n) - 1), n)
        self.bits(value & ((1 << k) - 1), k)

    def to_bytes(self) -> bytes:
        return self.value.to_bytes((self.length + 7) // 8, "little")


class _BitReader:
    def __init__(self, data: bytes) -> None:
        self.value = int.from_bytes(data, "little")
        self.end = len(data) * 8
        self.pos = 0

    def bits(self, width: int) -> int:
        if self.pos + width > self.end:
            raise PackError(f"packed game cut short: {width} bits wanted at bit {self.pos}")
        value = (self.value >> self.pos) & ((1 << width) - 1)
        self.pos += width
        return value

    def golomb(self, k: int) -> int:
        rest = self.value >> self.pos
        if rest == 0:
            raise PackError(f"packed game cut short: a number wanted at bit {self.pos}")
        n = (rest & -rest).bit_length() - 1  # the zeros before the first one
        self.pos += n + 1
        q = (1 << n) | self.bits(n)
        return ((q - 1) << k) | self.bits(k)


def _golomb_bits(values: Sequence[int], k: int) -> int:
    return sum(2 * (((v >> k) + 1).bit_length() - 1) + 1 + k for v in values)


def _best_k(values: Sequence[int]) -> int:
    """The order of the exp-Golomb code that stores ``values`` in the fewest bits."""
    if not values:
        return 0
    # The best order sits near log2 of the typical value: try a few around the median's.
    near = sorted(values)[len(values) // 2].bit_length()
    # Both ends within the orders _K_BITS can name: a median of 2**36 µs (~19 hours) and
    # more takes the largest, rather than no candidate at all.
    largest = (1 << _K_BITS) - 1
    candidates = range(min(max(0, near - 4), largest), min(largest, near + 1) + 1)
    return min(candidates, key=lambda k: _golomb_bits(values, k))


_TEXT: Final = attrgetter("text")
"""An action's canonical text (``str()`` of both rulesets' actions), the order of the index."""


def _sorted_legal(game: Any) -> list[Any]:
    return sorted(game.legal_actions(), key=_TEXT)


def _pack_replayed(deck: Sequence[str], moves: Sequence[Move], table: Table) -> bytes | None:
    """The replayed format, or None if the moves are not a legal game with whole-microsecond
    times (then the general format holds them)."""
    walls = [_micros(m.seconds) for m in moves]
    cpus = [None if m.cpu_seconds is None else _micros(m.cpu_seconds) for m in moves]
    with_cpu = bool(moves) and moves[0].cpu_seconds is not None
    if None in walls or any((m.cpu_seconds is not None) != with_cpu for m in moves):
        return None
    if (with_cpu and None in cpus) or any(card not in _CODE for card in deck):
        return None
    try:
        game: Any = Game.from_deck(
            list(deck),
            table.dealer,
            players=table.seats,
            ruleset=table.ruleset,
            turn_limit=table.turn_limit,
        )
    except (RulesError, TypeError):
        return None
    indices: list[tuple[int, int]] = []
    for move in moves:
        if game.over or move.seat != game.to_move:
            return None
        legal = _sorted_legal(game)
        texts = [a.text for a in legal]
        try:
            index = texts.index(move.action)
        except ValueError:
            return None
        game.play(legal[index])
        indices.append((index, len(legal)))
    out = _BitWriter()
    out.bits(REPLAYED_VERSION, 8)
    out.bits(_deck_rank(deck), _DECK_BITS)
    wall = [w for w in walls if w is not None]
    cpu = [c for c in cpus if c is not None] if with_cpu else []
    k_wall = _best_k(wall)
    out.bits(k_wall, _K_BITS)
    out.bits(int(with_cpu), 1)
    k_cpu = _best_k(cpu) if with_cpu else 0
    if with_cpu:
        out.bits(k_cpu, _K_BITS)
    out.golomb(len(moves), _COUNT_K)
    for i, (index, count) in enumerate(indices):
        out.bits(index, (count - 1).bit_length())
        out.golomb(wall[i], k_wall)
        if with_cpu:
            out.golomb(cpu[i], k_cpu)
    return out.to_bytes()


def _unpack_replayed(data: bytes, table: Table) -> Unpacked:
    bits = _BitReader(data)
    bits.bits(8)  # the version
    deck = _deck_of_rank(bits.bits(_DECK_BITS))
    k_wall = bits.bits(_K_BITS)
    with_cpu = bool(bits.bits(1))
    k_cpu = bits.bits(_K_BITS) if with_cpu else 0
    count = bits.golomb(_COUNT_K)
    try:
        game: Any = Game.from_deck(
            list(deck),
            table.dealer,
            players=table.seats,
            ruleset=table.ruleset,
            turn_limit=table.turn_limit,
        )
    except (RulesError, TypeError) as exc:
        raise PackError(f"cannot replay the packed game at {table}: {exc}") from None
    moves = []
    for number in range(count):
        seat = game.to_move
        legal = _sorted_legal(game)
        index = bits.bits((len(legal) - 1).bit_length()) if legal else len(legal)
        if seat is None or index >= len(legal):
            raise PackError(f"packed move {number + 1} is not a legal action of {table}")
        action = legal[index]
        game.play(action)
        seconds = bits.golomb(k_wall) / 1e6
        cpu = bits.golomb(k_cpu) / 1e6 if with_cpu else None
        moves.append(Move(seat, str(action), seconds, cpu))
    return Unpacked(deck, tuple(moves))


def _deck_rank(deck: Sequence[str]) -> int:
    """The deal's rank among all orders of the 36 cards (a mixed-radix Lehmer code)."""
    left = list(range(len(CARDS)))
    rank = 0
    for card in deck:
        position = left.index(_CODE[card])
        rank = rank * len(left) + position
        left.pop(position)
    return rank


def _deck_of_rank(rank: int) -> tuple[str, ...]:
    positions = []
    for radix in range(1, len(CARDS) + 1):
        rank, position = divmod(rank, radix)
        positions.append(position)
    if rank:
        raise PackError("packed deal out of range")
    left = list(range(len(CARDS)))
    return tuple(CARDS[left.pop(p)] for p in reversed(positions))
