"""The packed form of a game's deal and moves gives back exactly what was packed."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.db.gamecodec import (
    CARDS,
    FORMAT_VERSION,
    REPLAYED_VERSION,
    PackError,
    Table,
    count_moves,
    pack,
    unpack,
)
from referee.record import Move
from referee.rules import Game

cards = st.sampled_from(CARDS)
decks = st.permutations(list(CARDS)) | st.lists(cards, max_size=40)
# Canonical actions of both rulesets, and anything else a move's text may be.
canonical = st.one_of(
    st.just("take"),
    st.builds(lambda c: f"lead {c}", cards),
    st.builds(lambda c: f"swap lead {c}", cards),
    st.builds(lambda a, b: f"cover {a} {b}", cards, cards),
    st.builds(lambda a, b: f"swap cover {a} {b}", cards, cards),
    st.builds(lambda a: f"cover {a}", cards),
    st.lists(cards, min_size=1, max_size=5).map(lambda cs: "lead " + " ".join(cs)),
    st.lists(st.tuples(cards, cards), min_size=1, max_size=5).map(
        lambda ps: "cover " + " ".join(f"{a}:{b}" for a, b in ps)
    ),
)
texts = canonical | st.text(min_size=1, max_size=60) | canonical.map(lambda t: t + " ")
whole_micros = st.integers(min_value=0, max_value=10**12).map(lambda n: n / 1e6)
seconds = whole_micros | st.floats(min_value=0, max_value=1e9, allow_nan=False)
moves = st.builds(
    Move,
    st.integers(min_value=0, max_value=3),
    texts,
    seconds,
    st.none() | seconds,
)


@settings(max_examples=400, deadline=None)
@given(decks, st.lists(moves, max_size=60))
def test_round_trip_is_exact(deck: list[str], played: list[Move]) -> None:
    back = unpack(pack(deck, played))
    assert back.deck == tuple(deck)
    assert back.moves == tuple(played)
    # Equal floats are not enough: the very same double (sign of zero included) comes back.
    for before, after in zip(played, back.moves, strict=True):
        assert repr(after.seconds) == repr(float(before.seconds))


def _random_game(
    seed: int, *, players: int = 2, cpu: bool = False, end: int | None = None
) -> tuple[list[str], list[Move], Table]:
    """A random game (cut after ``end`` moves), with times as the referee rounds them."""
    rng = random.Random(seed)
    ruleset = "default" if players == 2 and seed % 2 == 0 else "classic"
    game: Any = Game.new(seed=seed, ruleset=ruleset, players=players)
    moves: list[Move] = []
    while not game.over and len(moves) != end:
        seat = game.to_move
        assert seat is not None
        action = rng.choice(game.legal_actions())
        game.play(action)
        spent = round(rng.expovariate(1000), 6) if cpu else None
        moves.append(Move(seat, str(action), round(rng.lognormvariate(-7, 2), 6), spent))
    assert game.deck is not None
    table = Table(game.dealer, game.turn_limit, ruleset, players)
    return [str(c) for c in game.deck], moves, table


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**9),
    st.sampled_from([2, 3, 4]),
    st.booleans(),
    st.none() | st.integers(min_value=0, max_value=300),
)
def test_played_games_round_trip_in_the_replayed_format(
    seed: int, players: int, cpu: bool, end: int | None
) -> None:
    deck, played, table = _random_game(seed, players=players, cpu=cpu, end=end)
    data = pack(deck, played, table)
    assert data[0] == REPLAYED_VERSION
    assert count_moves(data) == len(played) == count_moves(pack(deck, played))
    back = unpack(data, table)
    assert (back.deck, back.moves) == (tuple(deck), tuple(played))
    # The general format holds the same game, only bigger.
    assert unpack(pack(deck, played)) == back
    assert len(data) <= len(pack(deck, played))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_played_games_pack_to_a_few_bits_a_move(players: int) -> None:
    for seed in range(4):
        deck, played, table = _random_game(seed, players=players, cpu=True)
        data = pack(deck, played, table)
        assert unpack(data, table).moves == tuple(played)
        # Deal 18 bytes; a move: its index among the legal actions (a few bits) and two
        # times around a millisecond (about 12 bits each). Far below a byte per card.
        assert len(data) <= 32 + len(played) * 4, (len(data), len(played))
        assert b"cover" not in data and b"lead" not in data


def test_what_does_not_replay_is_stored_in_the_general_format() -> None:
    deck, played, table = _random_game(0, end=10)
    wrong_seat = [*played[:-1], Move(1 - played[-1].seat, played[-1].action, 0.5)]
    illegal = [*played, Move(played[-1].seat, "cover 7C lead 8D", 0.5)]
    off_grid = [*played[:-1], Move(played[-1].seat, played[-1].action, 0.1234567891)]
    some_cpu = [*played[:-1], Move(played[-1].seat, played[-1].action, 0.5, 0.25)]
    other_dealer = Table(1 - table.dealer, table.turn_limit)
    for moves, at in (
        (wrong_seat, table),
        (illegal, table),
        (off_grid, table),
        (some_cpu, table),
        (played, other_dealer),
    ):
        data = pack(deck, moves, at)
        assert data[0] == FORMAT_VERSION
        assert unpack(data, at).moves == tuple(moves)
    with pytest.raises(PackError, match="needs its table"):
        unpack(pack(deck, played, table))


def test_text_that_is_not_a_canonical_action_is_kept_as_text() -> None:
    odd = [
        Move(0, "cover 7C lead 8D", 1.25),
        Move(1, "lead 6c", 0.5),
        Move(0, "lead 6C  ", 0.5),
        Move(1, "ход ♠", 0.1),
    ]
    data = pack(list(CARDS), odd)
    assert unpack(data).moves == tuple(odd)
    assert "ход ♠".encode() in data


@pytest.mark.parametrize(
    ("deck", "played", "fragment"),
    [
        (["XX"], [], "'XX' is not a card"),
        ([], [Move(4, "take", 0.1)], "seat must be 0..3, got 4"),
        ([], [Move(0, "take", -0.5)], "got -0.5"),
        ([], [Move(0, "take", 0.5, float("nan"))], "got nan"),
    ],
)
def test_what_cannot_be_packed_is_refused_by_name(
    deck: list[str], played: list[Move], fragment: str
) -> None:
    with pytest.raises(PackError, match=fragment):
        pack(deck, played)


@pytest.mark.parametrize(
    "data", [b"", b"\x09", b"\x01\x24\x00", b"\x01\x01\x00\x37\x00", b"\x01\x00\x01"]
)
def test_bytes_that_are_not_a_packed_game_are_refused(data: bytes) -> None:
    with pytest.raises(PackError):
        unpack(data)
