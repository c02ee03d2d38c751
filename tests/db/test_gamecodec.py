"""The packed form of a game's deal and moves gives back exactly what was packed."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.db.gamecodec import CARDS, PackError, pack, unpack
from referee.record import Move
from referee.rules import Game
from referee.rules.classic import ClassicGame

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


def _random_game_moves(seed: int, *, players: int = 2) -> tuple[list[str], list[Move]]:
    rng = random.Random(seed)
    game = Game.new(seed=seed) if players == 2 else ClassicGame.new(seed=seed, players=players)
    moves = []
    while not game.over:
        seat = game.to_move
        action = rng.choice(game.legal_actions())
        game.play(action)
        moves.append(Move(seat, str(action), round(rng.uniform(0, 0.01), 6)))
    assert game.deck is not None
    return [str(c) for c in game.deck], moves


@pytest.mark.parametrize("players", [2, 3, 4])
def test_played_games_pack_to_a_few_bytes_a_move(players: int) -> None:
    for seed in range(5):
        deck, played = _random_game_moves(seed, players=players)
        data = pack(deck, played)
        assert unpack(data).moves == tuple(played)
        # Canonical actions are never stored as text: card bytes and a varint per time.
        assert len(data) <= 1 + 1 + 36 + len(played) * (1 + 8 + 3)
        assert b"cover" not in data and b"lead" not in data


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
