"""A mutation review of ``arena.db.gamecodec``: the packed bytes follow the documented layout,
and damaged bytes are refused as a :class:`PackError`.

The bytes of the replayed format are read here by a decoder written from the module's
docstring and docs/database.md alone (version byte, the deal's Lehmer rank in 139 bits,
``k_wall``, the CPU flag and ``k_cpu``, the move count in exponential-Golomb code of order 5,
then per move the index among the legal actions *sorted by their text* in
``ceil(log2(legal))`` bits and the times in whole microseconds), and the games come from the
rules core: a change of a bit width, of the order of the legal actions or of the code of a
number is caught even when ``pack`` and ``unpack`` change together (their round trip alone
cannot tell). The refusals are what a damaged ``games.packed`` column must give: one
:class:`PackError` saying so, never an ``IndexError`` or a silently different game.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest

from arena.db.gamecodec import FORMAT_VERSION, REPLAYED_VERSION, PackError, Table, pack, unpack
from referee.record import Move
from referee.rules import Game

RANKS = "6789TJQKA"
SUITS = "CDHS"
CODES = [rank + suit for rank in RANKS for suit in SUITS]
"""Card codes as the docstring gives them: ``rank * 4 + suit``."""
DECK_BITS = 139
"""The deal's rank among the 36! orders: 36! < 2**139."""


class Bits:
    """A reader of a bit stream, least significant bit first (as documented)."""

    def __init__(self, data: bytes) -> None:
        self.value = int.from_bytes(data, "little")
        self.end = 8 * len(data)
        self.pos = 0

    def read(self, width: int) -> int:
        assert self.pos + width <= self.end, "read past the end of the packed bytes"
        value = (self.value >> self.pos) & ((1 << width) - 1)
        self.pos += width
        return value

    def exp_golomb(self, k: int) -> int:
        """Exponential-Golomb of order ``k``: n zeros, a one and n more bits of ``q + 1``,
        then the ``k`` low bits of the value."""
        zeros = 0
        while self.read(1) == 0:
            zeros += 1
        q_plus_one = (1 << zeros) | self.read(zeros)
        return ((q_plus_one - 1) << k) | self.read(k)


def deck_of_rank(rank: int) -> list[str]:
    """The deal of a Lehmer rank: the factorial number system over the card codes."""
    digits = []
    for base in range(1, 37):
        rank, digit = divmod(rank, base)
        digits.append(digit)
    assert rank == 0
    left = list(range(36))
    return [CODES[left.pop(digit)] for digit in reversed(digits)]


@dataclass(frozen=True)
class Decoded:
    deck: list[str]
    k_wall: int
    cpu: bool
    count: int
    indices: list[int]
    walls: list[int]
    cpus: list[int]


def decode_replayed(data: bytes, table: Table) -> Decoded:
    """The replayed format, read by the documented layout with the rules core's legal
    actions sorted by their text."""
    bits = Bits(data)
    assert bits.read(8) == REPLAYED_VERSION
    deck = deck_of_rank(bits.read(DECK_BITS))
    k_wall = bits.read(5)
    cpu = bool(bits.read(1))
    k_cpu = bits.read(5) if cpu else 0
    count = bits.exp_golomb(5)
    game: Any = Game.from_deck(
        deck, table.dealer, players=table.seats, ruleset=table.ruleset, turn_limit=table.turn_limit
    )
    indices, walls, cpus = [], [], []
    for _ in range(count):
        legal = sorted(game.legal_actions(), key=str)
        width = math.ceil(math.log2(len(legal))) if len(legal) > 1 else 0
        index = bits.read(width)
        indices.append(index)
        game.play(legal[index])
        walls.append(bits.exp_golomb(k_wall))
        if cpu:
            cpus.append(bits.exp_golomb(k_cpu))
    return Decoded(deck, k_wall, cpu, count, indices, walls, cpus)


def played_game(
    seed: int, *, players: int = 2, ruleset: str = "default", cpu: bool = False
) -> tuple[list[str], list[Move], Table]:
    """A random game of the rules core, its times whole microseconds as the referee
    records them."""
    rng = random.Random(seed)
    game: Any = Game.new(seed=seed, ruleset=ruleset, players=players)
    deck = [str(card) for card in game.deck]
    moves = []
    while not game.over:
        seat = game.to_move
        assert seat is not None
        action = rng.choice(game.legal_actions())
        game.play(action)
        wall = rng.randrange(0, 3_000_000) / 1e6
        spent = rng.randrange(0, 40_000) / 1e6 if cpu else None
        moves.append(Move(seat, str(action), wall, spent))
    return deck, moves, Table(game.dealer, game.turn_limit, ruleset, players)


def expected_indices(deck: list[str], moves: list[Move], table: Table) -> list[int]:
    """Each move's index among the legal actions sorted by their text."""
    game: Any = Game.from_deck(
        deck, table.dealer, players=table.seats, ruleset=table.ruleset, turn_limit=table.turn_limit
    )
    indices = []
    for move in moves:
        texts = sorted(str(action) for action in game.legal_actions())
        indices.append(texts.index(move.action))
        game.play(move.action)
    return indices


@pytest.mark.parametrize(
    ("seed", "players", "ruleset", "cpu"),
    [
        (1, 2, "default", False),
        (2, 2, "default", True),
        (3, 3, "classic", True),
        (4, 4, "classic", False),
    ],
)
def test_the_replayed_bytes_follow_the_documented_layout(
    seed: int, players: int, ruleset: str, cpu: bool
) -> None:
    deck, moves, table = played_game(seed, players=players, ruleset=ruleset, cpu=cpu)
    data = pack(deck, moves, table)
    decoded = decode_replayed(data, table)
    assert decoded.deck == deck
    assert decoded.cpu is cpu
    assert decoded.count == len(moves)
    assert decoded.indices == expected_indices(deck, moves, table)
    assert decoded.walls == [round(m.seconds * 1e6) for m in moves]
    if cpu:
        assert decoded.cpus == [round((m.cpu_seconds or 0.0) * 1e6) for m in moves]
    # Nothing but padding to the byte after the last move.
    assert len(data) == math.ceil((decoded_bits(data, table)) / 8)
    assert unpack(data, table).moves == tuple(moves)


def decoded_bits(data: bytes, table: Table) -> int:
    """How many bits the documented layout reads from ``data``."""
    bits = Bits(data)
    bits.read(8 + DECK_BITS)
    k_wall = bits.read(5)
    cpu = bool(bits.read(1))
    k_cpu = bits.read(5) if cpu else 0
    count = bits.exp_golomb(5)
    game: Any = Game.from_deck(
        deck_of_rank(int.from_bytes(data, "little") >> 8 & ((1 << DECK_BITS) - 1)),
        table.dealer,
        players=table.seats,
        ruleset=table.ruleset,
        turn_limit=table.turn_limit,
    )
    for _ in range(count):
        legal = sorted(game.legal_actions(), key=str)
        game.play(legal[bits.read(math.ceil(math.log2(len(legal))) if len(legal) > 1 else 0)])
        bits.exp_golomb(k_wall)
        if cpu:
            bits.exp_golomb(k_cpu)
    return bits.pos


def _long_moves(moves: list[Move], wall: int, cpu: int) -> list[Move]:
    """``moves`` taking about ``wall`` and ``cpu`` microseconds each (whole microseconds)."""
    return [Move(m.seat, m.action, (wall + i) / 1e6, (cpu + i) / 1e6) for i, m in enumerate(moves)]


def test_moves_of_over_an_hour_round_trip_in_the_replayed_format() -> None:
    """Whole-microsecond times of 2**32 µs (71 minutes: an imported game without time
    controls may hold any time) are replayed-format times like any other; the order of
    their exp-Golomb code (best near 32) must still fit its 5 bits."""
    deck, moves, table = played_game(5, cpu=True)
    long = _long_moves(moves, 2**32, 2**32)
    data = pack(deck, long, table)
    assert data[0] == REPLAYED_VERSION
    assert unpack(data, table).moves == tuple(long)
    decoded = decode_replayed(data, table)
    assert decoded.walls == [2**32 + i for i in range(len(long))]


def test_moves_of_ten_hours_can_be_stored() -> None:
    """A game file without time controls may hold any finite time >= 0 (the import checks
    nothing else): a game whose moves each took about 10 hours is stored and comes back."""
    deck, moves, table = played_game(5, cpu=True)
    long = _long_moves(moves, 36_000_000_000, 36_000_000_000)
    data = pack(deck, long, table)
    assert unpack(data, table).moves == tuple(long)


def test_a_cpu_time_that_is_not_whole_microseconds_is_kept_exactly() -> None:
    """The replayed format holds whole microseconds only: a CPU time between them (an
    imported game) sends the game to the general format, where it comes back exactly."""
    deck, moves, table = played_game(6, cpu=True)
    odd = [*moves[:-1], Move(moves[-1].seat, moves[-1].action, 0.25, 0.0001234567)]
    data = pack(deck, odd, table)
    assert data[0] == FORMAT_VERSION
    assert unpack(data, table).moves == tuple(odd)


def test_minus_zero_seconds_come_back_as_minus_zero() -> None:
    """Every value comes back exactly, the sign of a zero time too (``-0.0`` is not a whole
    number of microseconds in the docstring's sense: it is kept as a double)."""
    deck, moves, table = played_game(7)
    signed = [Move(m.seat, m.action, -0.0 if i == 0 else m.seconds) for i, m in enumerate(moves)]
    for packed in (pack(deck, signed, table), pack(deck, signed)):
        back = unpack(packed, table).moves
        assert math.copysign(1.0, back[0].seconds) == -1.0
        assert back == tuple(signed)


def _replayed_with_first_index(deck: list[str], table: Table, index: int) -> bytes:
    """Replayed-format bytes built by the documented layout: one move, whose index is
    ``index``, taking 0 µs (k_wall 0, no CPU times)."""
    value, length = 0, 0

    def put(bits: int, width: int) -> None:
        nonlocal value, length
        value |= bits << length
        length += width

    def put_golomb(number: int, k: int) -> None:
        q_plus_one = (number >> k) + 1
        n = q_plus_one.bit_length() - 1
        put(1 << n, n + 1)
        put(q_plus_one & ((1 << n) - 1), n)
        put(number & ((1 << k) - 1), k)

    rank = 0
    left = list(range(36))
    for card in deck:
        position = left.index(CODES.index(card))
        rank = rank * len(left) + position
        left.pop(position)
    put(REPLAYED_VERSION, 8)
    put(rank, DECK_BITS)
    put(0, 5)  # k_wall
    put(0, 1)  # no CPU times
    put_golomb(1, 5)
    game: Any = Game.from_deck(deck, table.dealer, turn_limit=table.turn_limit)
    width = math.ceil(math.log2(len(game.legal_actions())))
    put(index, width)
    put_golomb(0, 0)
    return value.to_bytes((length + 7) // 8, "little")


def test_an_index_past_the_legal_actions_is_refused() -> None:
    """A damaged move index that the width allows but no legal action has (3 legal
    actions: 2 bits, index 3) is a PackError naming the move, not an IndexError."""
    for seed in range(200):
        deck, _, table = played_game(seed)
        game: Any = Game.from_deck(deck, table.dealer, turn_limit=table.turn_limit)
        count = len(game.legal_actions())
        if count & (count - 1):  # not a power of two: some indices name no action
            break
    else:  # pragma: no cover - the first hand always has 3 leads
        pytest.fail("no deal with a legal-action count that is not a power of two")
    good = _replayed_with_first_index(deck, table, count - 1)
    assert len(unpack(good, table).moves) == 1
    with pytest.raises(PackError, match="packed move 1"):
        unpack(_replayed_with_first_index(deck, table, count), table)


def test_a_deal_rank_beyond_36_factorial_is_refused() -> None:
    deck, _, table = played_game(8)
    data = bytearray(pack(deck, [], table))
    value = int.from_bytes(data, "little")
    # Replace the 139-bit rank by 36!, the first rank no deal has.
    value &= ~(((1 << DECK_BITS) - 1) << 8)
    value |= math.factorial(36) << 8
    with pytest.raises(PackError, match="out of range"):
        unpack(value.to_bytes(len(data), "little"), table)


def test_replayed_bytes_cut_short_are_refused() -> None:
    deck, moves, table = played_game(9, cpu=True)
    data = pack(deck, moves, table)
    for cut in (len(data) - 1, len(data) // 2, 20, 1):
        with pytest.raises(PackError):
            unpack(data[:cut], table)


def test_the_general_format_header_byte_is_as_documented() -> None:
    """Bits 0-1 the seat, bit 2 a CPU time follows, bit 3 the times are doubles, bits 4-7
    the action's form (0: literal text); card bytes ``rank * 4 + suit``; times as
    microsecond varints."""
    moves = [
        Move(3, "cover 9H 6C", 0.000200, 0.000129),
        Move(2, "ход", 0.5),
        Move(1, "take", 1 / 3),
    ]
    data = pack(CODES, moves)
    assert data[0] == FORMAT_VERSION
    assert data[1] == 36 and list(data[2:38]) == list(range(36))
    first = data[38]
    assert first & 0b11 == 3 and first & 0b100 and not first & 0b1000 and first >> 4 != 0
    assert list(data[39:41]) == [CODES.index("9H"), CODES.index("6C")]
    assert list(data[41:45]) == [0xC8, 0x01, 0x81, 0x01]  # 200 and 129 as LEB128 varints
    second = data[45]
    assert second & 0b11 == 2 and not second & 0b1100 and second >> 4 == 0
    text = "ход".encode()
    assert data[46] == len(text) and bytes(data[47 : 47 + len(text)]) == text
    third = data[47 + len(text) + 3]
    assert third & 0b11 == 1 and third & 0b1000 and not third & 0b100
    assert unpack(data).moves == tuple(moves)
