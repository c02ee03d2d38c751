"""Tests from a mutation review of how a tournament is laid out: the round robin of tables
(``arena/tournament/seatings.py``), the gauntlet (``gauntlet.py``), secret seeds and the
check of a stored deal (``seeds.py``), the rounds ``kryt tournament extend`` adds
(``extend.py``) and the origins kept for imported series (``origin.py``).

Each test pins a documented behaviour that a mutant of those files changed while the fast
tests went on passing. Expected values come from docs/rules.md and rules-classic.md (every
set of ``n`` entrants plays once per distinct clockwise order: ``(n-1)!`` orders, counted
here with itertools), docs/configuration.md (seeds in 0..2**62-1, a series seed from the
seed and the submission ids in order, an extension round's series "from the round's own
seed, the same way") and docs/games-format.md (the duplicate format deals deck ``k`` in games
``2k-1`` and ``2k``; a deal book's decks in order; the stored origins and commitments).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, permutations
from math import comb, factorial
from typing import Any

import pytest

from arena.db.models import Series
from arena.tournament.extend import (
    EXTENSIONS_KEY,
    Extension,
    extension_specs,
    extensions,
    new_extension,
    seed_chain,
    series_origin,
)
from arena.tournament.gauntlet import GauntletError, gauntlet_pairs, gauntlet_seatings
from arena.tournament.origin import (
    IMPORTED_ORIGINS_KEY,
    IMPORTED_ROUND_COMMITMENTS_KEY,
    OriginError,
    SeriesOrigin,
    imported_commitment,
    imported_origin,
    with_imported_commitment,
    with_imported_origin,
)
from arena.tournament.runner import TournamentError, series_seed
from arena.tournament.seatings import seating_key, table_seatings
from arena.tournament.seeds import SEED_BITS, commitment, deal_problems, draw_seed
from arena.tournament.table_runner import table_series_seed
from referee.series import game_deck

# ------------------------------------------------------------------------------ helpers


def _cycle(seats: Sequence[int]) -> tuple[int, ...]:
    """A seating order up to rotation: rotated to start at its smallest entrant."""
    turn = seats.index(min(seats))
    return tuple(seats[turn:]) + tuple(seats[:turn])


def _all_cycles(group: Sequence[int]) -> set[tuple[int, ...]]:
    """Every distinct clockwise order of ``group`` (all permutations, up to rotation)."""
    return {_cycle(p) for p in permutations(group)}


def _deck(seed: int, deal: int) -> tuple[str, ...]:
    return tuple(str(c) for c in game_deck(seed, deal))


def _series(
    position: int,
    a: int,
    b: int,
    *,
    seats: list[int] | None = None,
    fmt: str = "standard",
    games: int = 4,
) -> Series:
    return Series(
        tournament_id=1,
        position=position,
        submission_a_id=a,
        submission_b_id=b,
        format=fmt,
        games_planned=games,
        seed=0,
        status="finished",
        ruleset="classic" if seats else "default",
        seats=seats,
    )


# --------------------------------------------------------------------- the round robin


@pytest.mark.parametrize(("entrants", "size"), [(2, 2), (4, 2), (4, 3), (5, 3), (4, 4), (5, 4)])
def test_every_set_plays_once_in_every_distinct_clockwise_order(entrants: int, size: int) -> None:
    """rules-classic.md: every set of ``n`` entrants plays one series per distinct clockwise
    order, ``(n-1)!`` of them; each order once (rotations are the same order), listed from
    the set's first entrant, sets in the order the entrants were given."""
    ids = [30 + 7 * i for i in range(entrants)][::-1]  # not sorted: order as given counts
    seatings = table_seatings(ids, size)
    assert len(seatings) == comb(entrants, size) * factorial(size - 1)
    assert len({_cycle(s) for s in seatings}) == len(seatings)  # no order twice
    by_group: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
    for seats in seatings:
        assert len(set(seats)) == size
        group = tuple(sorted(seats, key=ids.index))
        assert seats[0] == group[0]
        by_group.setdefault(group, set()).add(_cycle(seats))
    assert list(by_group) == list(combinations(ids, size))
    for group, cycles in by_group.items():
        assert cycles == _all_cycles(group)


@pytest.mark.parametrize("size", [1, 0, 5])
def test_a_table_needs_two_to_all_the_entrants(size: int) -> None:
    """A table seats 2..len(entrants) (rules.md: 2, 3 or 4 players)."""
    with pytest.raises(ValueError, match="seats"):
        table_seatings([1, 2, 3, 4], size)


def test_a_table_of_every_entrant_is_allowed() -> None:
    assert len(table_seatings([1, 2, 3], 3)) == 2


def test_an_entrant_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        table_seatings([1, 2, 2, 3], 2)


def test_another_seat_order_is_another_seating_with_a_seed_of_its_own() -> None:
    """configuration.md: "at a table, another seat order is another seating with a seed of
    its own" (the key that names a seating must keep the seat order and the ids apart)."""
    assert seating_key((1, 2, 3)) != seating_key((1, 3, 2))
    assert seating_key((1, 23)) != seating_key((12, 3))
    assert table_series_seed(9, (1, 2, 3)) != table_series_seed(9, (1, 3, 2))
    assert table_series_seed(9, (1, 23)) != table_series_seed(9, (12, 3))


# -------------------------------------------------------------------------- the gauntlet


def test_gauntlet_pairs_keep_the_order_given_and_the_gauntlet_bot_first() -> None:
    """configuration.md: the gauntlet bot plays every other entrant (it is the first bot)."""
    assert gauntlet_pairs([8, 3, 5, 1], 5) == [(5, 8), (5, 3), (5, 1)]


def test_a_gauntlet_refuses_an_entrant_listed_twice() -> None:
    with pytest.raises(GauntletError, match="listed twice"):
        gauntlet_pairs([1, 2, 2], 1)
    with pytest.raises(GauntletError, match="listed twice"):
        gauntlet_seatings([1, 2, 3, 3], 1, 3)
    with pytest.raises(GauntletError, match="not among"):
        gauntlet_seatings([1, 2, 3], 4, 2)


@pytest.mark.parametrize(("entrants", "size"), [(3, 2), (4, 3), (5, 3), (5, 4), (4, 4)])
def test_a_classic_gauntlet_seats_every_opponent_set_in_every_order(
    entrants: int, size: int
) -> None:
    """configuration.md: every set of ``table_size - 1`` opponents, in each clockwise order,
    the gauntlet bot at seat 0; no table without it."""
    ids = [50 - 3 * i for i in range(entrants)]
    gauntlet = ids[1]
    seatings = gauntlet_seatings(ids, gauntlet, size)
    others = [i for i in ids if i != gauntlet]
    assert len(seatings) == comb(entrants - 1, size - 1) * factorial(size - 1)
    assert all(s[0] == gauntlet and len(set(s)) == size for s in seatings)
    want = {c for g in combinations(others, size - 1) for c in _all_cycles((gauntlet, *g))}
    assert {_cycle(s) for s in seatings} == want
    assert len({_cycle(s) for s in seatings}) == len(seatings)


@pytest.mark.parametrize("size", [1, 5])
def test_a_gauntlet_table_needs_two_to_all_the_entrants(size: int) -> None:
    with pytest.raises(GauntletError, match="seats"):
        gauntlet_seatings([1, 2, 3, 4], 1, size)


def test_a_gauntlet_table_of_every_entrant_is_allowed() -> None:
    assert sorted(gauntlet_seatings([1, 2, 3], 2, 3)) == [(2, 1, 3), (2, 3, 1)]


# ------------------------------------------------------------------------------- seeds


def test_a_drawn_seed_is_a_whole_number_below_two_to_the_62() -> None:
    """configuration.md: a seed is a whole number 0 to 2**62 - 1 (it fits a BIGINT); the
    CSPRNG's draws use that whole range."""
    assert SEED_BITS == 62
    seeds = [draw_seed() for _ in range(200)]
    assert all(0 <= s < 2**62 for s in seeds)
    assert any(s >= 2**61 for s in seeds)  # fails with probability 2**-200


def test_a_commitment_is_64_lowercase_hex_digits_of_its_seed() -> None:
    """games-format.md: the commitment is a SHA-256 of the seed, 64 lowercase hex digits."""
    mark = commitment(42)
    assert len(mark) == 64 and set(mark) <= set("0123456789abcdef")
    assert commitment(42) == mark and commitment(43) != mark


def _problems(**changes: Any) -> list[str]:
    args: dict[str, Any] = {
        "tournament_seed": 7,
        "stored_commitment": commitment(7),
        "series_seed": 1234,
        "expected_series_seed": 1234,
        "series_format": "standard",
        "games_planned": 6,
        "number": 3,
        "deck": _deck(1234, 3),
    }
    args.update(changes)
    return deal_problems(**args)


def test_a_deal_that_follows_from_the_committed_seed_has_no_problem() -> None:
    assert _problems() == []
    assert _problems(stored_commitment=None) == []  # nothing stored: nothing to compare


def test_a_seed_that_does_not_match_its_commitment_is_a_problem() -> None:
    (problem,) = _problems(stored_commitment=commitment(8))
    assert "commitment" in problem


def test_a_series_seed_the_tournament_seed_does_not_give_is_a_problem() -> None:
    """The deal is checked against the stored series seed the game was dealt from; a series
    seed that is not the derived one is one problem, not two."""
    (problem,) = _problems(expected_series_seed=99)
    assert "series seed 1234" in problem


def test_a_deck_the_series_seed_does_not_give_is_a_problem() -> None:
    (problem,) = _problems(deck=_deck(1234, 2))
    assert "series seed gives" in problem


def test_the_duplicate_format_deals_each_deck_twice() -> None:
    """games-format.md: games 2k-1 and 2k of a duplicate series deal deck k."""
    for number, deal in ((1, 1), (2, 1), (3, 2), (4, 2), (6, 3)):
        assert _problems(series_format="duplicate", number=number, deck=_deck(1234, deal)) == []
    assert _problems(series_format="duplicate", number=4, deck=_deck(1234, 4)) != []


def test_a_deal_book_gives_its_decks_in_order_each_twice_and_starts_again() -> None:
    """games-format.md: a book's decks in order, each twice (duplicate), from deck 1 again
    once they are used up."""
    book = ["AS KS", "QH JH", "9C 8C"]
    for number, deck in ((1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (7, 0), (10, 1)):
        found = _problems(
            series_format="duplicate",
            games_planned=10,
            number=number,
            deck=tuple(book[deck].split()),
            book=book,
        )
        assert found == [], (number, found)
    (problem,) = _problems(
        series_format="duplicate", number=3, deck=tuple(book[0].split()), book=book
    )
    assert "deal book" in problem


def test_a_deal_from_an_unknown_book_is_not_checked_but_its_seeds_are() -> None:
    """games-format.md: an imported deal-book game verifies its series seed; its deck is
    not checked."""
    assert _problems(deck=("AS",), unknown_book=True) == []
    (problem,) = _problems(deck=("AS",), unknown_book=True, expected_series_seed=5)
    assert "series seed" in problem


def test_a_duplicate_series_with_no_games_planned_checks_its_first_game() -> None:
    """A series may be stored with 0 games planned (the schema allows it); a game 1 of such
    a duplicate series is still checked, not refused as a game of an odd-length series."""
    assert (
        _problems(series_format="duplicate", games_planned=0, number=1, deck=_deck(1234, 1)) == []
    )


# ---------------------------------------------------------------------------- extend

ROUND_1 = Extension(games=4, first_position=5, seed=111, seed_commitment=commitment(111))
ROUND_2 = Extension(games=2, first_position=9, seed=222, seed_commitment=commitment(222))
CONFIG: dict[str, Any] = {
    "seed_commitment": commitment(7),
    EXTENSIONS_KEY: [ROUND_1.to_json(), ROUND_2.to_json()],
}


@pytest.mark.parametrize(
    ("position", "seed"), [(1, 7), (4, 7), (5, 111), (8, 111), (9, 222), (30, 222)]
)
def test_a_series_seed_chain_goes_to_the_round_it_belongs_to(position: int, seed: int) -> None:
    """extend.py / configuration.md: a round's series (from its first position on) derive
    from the round's own seed "the same way" as the first series from the tournament's,
    published with the round's commitment; the series before any round from the tournament
    seed and its stored commitment."""
    chain = seed_chain(7, CONFIG, _series(position, 3, 8))
    assert chain.seed == seed
    assert chain.commitment == commitment(seed)
    assert chain.series_seed == series_seed(seed, 3, 8)
    assert chain.series_seed != series_seed(seed, 8, 3)
    table = seed_chain(7, CONFIG, _series(position, 3, 8, seats=[3, 8, 5]))
    assert table.series_seed == table_series_seed(seed, (3, 8, 5))


def test_a_seed_chain_without_a_stored_commitment_has_none() -> None:
    assert seed_chain(7, {}, _series(1, 3, 8)).commitment is None


@pytest.mark.parametrize(("position", "seed"), [(4, None), (5, 111), (8, 111), (9, 222)])
def test_a_game_files_origin_names_the_round_seed_and_the_seed_ids(
    position: int, seed: int | None
) -> None:
    """games-format.md: ``SeriesSeedIds`` (first bot, then second), ``RoundSeed`` (the
    round the series belongs to) and ``DealBook`` (the book's number of decks)."""
    origin = series_origin(CONFIG, _series(position, 3, 8))
    assert origin == SeriesOrigin((3, 8), seed, None)
    booked = series_origin({**CONFIG, "book": ["AS", "KS", "QS"]}, _series(position, 3, 8))
    assert booked == SeriesOrigin((3, 8), seed, 3)
    assert series_origin(CONFIG, _series(position, 3, 8, seats=[3, 8, 5])) is None


def test_an_imported_series_chain_follows_its_stored_origin() -> None:
    """origin.py: an imported series' seed derives from the ids and round seed its game file
    named, whatever ids the import gave its bots; its commitment is the one stored for that
    seed, and a deal-book origin keeps the book's size."""
    config: dict[str, Any] = {
        "imported": True,
        "seed_commitment": commitment(7),
        IMPORTED_ROUND_COMMITMENTS_KEY: {"111": commitment(111)},
        IMPORTED_ORIGINS_KEY: {
            "1": SeriesOrigin((40, 41)).to_json(),
            "2": SeriesOrigin((40, 42), 111, 6).to_json(),
        },
    }
    first = seed_chain(7, config, _series(1, 3, 8))
    assert (first.seed, first.commitment) == (7, commitment(7))
    assert first.series_seed == series_seed(7, 40, 41)
    assert first.imported_book is None
    second = seed_chain(7, config, _series(2, 3, 9))
    assert (second.seed, second.commitment) == (111, commitment(111))
    assert second.series_seed == series_seed(111, 40, 42)
    assert second.imported_book == 6
    assert series_origin(config, _series(2, 3, 9)) == SeriesOrigin((40, 42), 111, 6)


def test_an_extension_round_adds_one_series_per_distinct_pairing_in_position_order() -> None:
    """configuration.md: ``extend --games N`` adds one new series of N games per pairing the
    tournament already has (per seating at tables), seeded from the round's seed the same
    way as the first series, in the same format."""
    rows = [
        _series(3, 2, 9, fmt="duplicate"),
        _series(1, 4, 2, fmt="duplicate"),
        _series(2, 4, 9, fmt="duplicate"),
        _series(5, 4, 2, fmt="duplicate", games=2),  # an earlier round's series of a pair
        _series(4, 4, 2, seats=[4, 2, 9]),
        _series(6, 4, 2, seats=[4, 2, 9]),
        _series(7, 4, 9, seats=[4, 9, 2]),
    ]
    specs = extension_specs(rows, 6, 555)
    got = [(s.submission_a_id, s.submission_b_id, s.seats) for s in specs]
    assert got == [(4, 2, ()), (4, 9, ()), (2, 9, ()), (4, 2, (4, 2, 9)), (4, 9, (4, 9, 2))]
    assert [s.games_planned for s in specs] == [6] * 5
    assert [s.format.value for s in specs] == ["duplicate"] * 3 + ["standard"] * 2
    assert [s.ruleset for s in specs] == ["default"] * 3 + ["classic"] * 2
    assert [s.seed for s in specs] == [
        series_seed(555, 4, 2),
        series_seed(555, 4, 9),
        series_seed(555, 2, 9),
        table_series_seed(555, (4, 2, 9)),
        table_series_seed(555, (4, 9, 2)),
    ]


def test_a_new_round_publishes_the_commitment_of_its_own_seed() -> None:
    round_ = new_extension(10, 7, 31337)
    assert round_ == Extension(10, 7, 31337, commitment(31337))
    assert Extension.from_json(round_.to_json()) == round_


@pytest.mark.parametrize(
    "entry",
    [
        [],
        {"games": True, "first_position": 1, "seed": 2, "seed_commitment": "x"},
        {"games": 1, "first_position": 1, "seed": "2", "seed_commitment": "x"},
        {"games": 1, "first_position": 1, "seed": 2},
        {"games": 1, "first_position": 1, "seed": 2, "seed_commitment": 5},
    ],
)
def test_a_damaged_extension_record_is_refused(entry: object) -> None:
    with pytest.raises(TournamentError, match="extension"):
        extensions({EXTENSIONS_KEY: [entry]})


@pytest.mark.parametrize("stored", [None, {}, 0, "rounds"])
def test_a_damaged_extensions_list_is_refused(stored: object) -> None:
    with pytest.raises(TournamentError, match="must be a list"):
        extensions({EXTENSIONS_KEY: stored})


def test_no_extensions_recorded_is_no_round() -> None:
    assert extensions({}) == []


# ---------------------------------------------------------------------------- origins


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"seed_ids": [1]},
        {"seed_ids": [1, 2, 3]},
        {"seed_ids": [1, True]},
        {"seed_ids": "1 2"},
        {"seed_ids": [1, 2], "round_seed": "5"},
        {"seed_ids": [1, 2], "round_seed": False},
        {"seed_ids": [1, 2], "book_decks": 2.0},
        {"seed_ids": [1, 2], "book_decks": True},
    ],
)
def test_a_malformed_stored_origin_is_refused(data: object) -> None:
    with pytest.raises(OriginError):
        SeriesOrigin.from_json(data)


def test_an_origin_is_stored_per_position_once() -> None:
    """games-format.md: an import keeps each series' origin; a later file that says
    otherwise about a series stops with a conflict; the same again adds nothing."""
    origin = SeriesOrigin((4, 9), 111, None)
    config = with_imported_origin({}, 3, origin)
    assert config is not None
    assert imported_origin(config, 3) == origin
    assert imported_origin(config, 4) is None
    assert SeriesOrigin.from_json(config[IMPORTED_ORIGINS_KEY]["3"]) == origin
    assert with_imported_origin(config, 3, origin) is None
    with pytest.raises(OriginError, match="another origin"):
        with_imported_origin(config, 3, SeriesOrigin((4, 9)))
    both = with_imported_origin(config, 4, SeriesOrigin((9, 4)))
    assert both is not None
    assert imported_origin(both, 3) == origin and imported_origin(both, 4) == SeriesOrigin((9, 4))


@pytest.mark.parametrize("round_seed", [0, 5])
def test_a_rounds_commitment_is_kept_apart_from_the_tournaments(round_seed: int) -> None:
    """games-format.md: the file's ``SeedCommitment`` is stored as ``seed_commitment``, a
    ``RoundSeedCommitment`` under ``imported_round_commitments`` by round seed (a round seed
    of 0 is a round seed too)."""
    config = with_imported_commitment({}, None, "t" * 64)
    assert config is not None
    assert imported_commitment(config, None) == "t" * 64
    assert imported_commitment(config, round_seed) is None
    with_round = with_imported_commitment(config, round_seed, "r" * 64)
    assert with_round is not None
    assert imported_commitment(with_round, round_seed) == "r" * 64
    assert imported_commitment(with_round, None) == "t" * 64
    assert with_round[IMPORTED_ROUND_COMMITMENTS_KEY] == {str(round_seed): "r" * 64}
    assert with_imported_commitment(with_round, round_seed, "r" * 64) is None
    assert with_imported_commitment(with_round, None, "t" * 64) is None
    with pytest.raises(OriginError, match=f"round seed {round_seed}"):
        with_imported_commitment(with_round, round_seed, "s" * 64)
    with pytest.raises(OriginError, match="tournament's seed"):
        with_imported_commitment(with_round, None, "s" * 64)


def test_a_stored_commitment_that_is_not_text_is_none() -> None:
    assert imported_commitment({"seed_commitment": 5}, None) is None
    assert imported_commitment({IMPORTED_ROUND_COMMITMENTS_KEY: {"3": 5}}, 3) is None
    assert imported_commitment({IMPORTED_ROUND_COMMITMENTS_KEY: ["x"]}, 3) is None
