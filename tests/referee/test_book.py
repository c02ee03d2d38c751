"""Deal books: the file format, its errors (file, line and token named), and series that
play the book's decks in order, each twice with the hands swapped."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.book import MAX_BOOK_BYTES, BookError, format_book, load_book, parse_book
from referee.pairing import pairing_configs
from referee.rules import Card
from referee.series import SeriesConfig, SeriesConfigError, SeriesFormat
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.tools import play_local


def deck(seed: int) -> list[str]:
    cards = [str(c) for c in Card.all()]
    random.Random(seed).shuffle(cards)
    return cards


def test_a_book_is_one_deck_a_line_with_comments_and_blank_lines() -> None:
    first, second = deck(1), deck(2)
    spelled = ["10" + c[1].lower() if c[0] == "T" else c for c in second]  # 10h for TH
    text = f"# my book\n\n{' '.join(first)}   # opening 1\n  {', '.join(spelled)}\n   # the end\n"
    assert parse_book(text) == (tuple(first), tuple(second))
    assert parse_book(format_book(parse_book(text))) == parse_book(text)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (lambda d: " ".join([*d[:35], "XZ"]), r"book.txt line 2, card 36: 'XZ' is not a card"),
        (
            lambda d: " ".join([*d[:35], d[3]]),
            r"book.txt line 2, card 36: '\w\w' is card 4 again",
        ),
        (lambda d: " ".join(d[:35]), r"book.txt line 2: a deck has 36 cards, got 35; missing: "),
        (lambda d: " ".join([*d, "6C"]), r"book.txt line 2, card 37: '6C' is card \d+ again"),
    ],
)
def test_a_bad_line_is_named_with_its_token(line: Callable[[list[str]], str], message: str) -> None:
    text = f"# first line\n{line(deck(3))}\n"
    with pytest.raises(BookError, match=message):
        parse_book(text, "book.txt")


def test_the_missing_card_is_named() -> None:
    cards = deck(4)
    with pytest.raises(BookError, match=f"missing: {cards[-1]}$"):
        parse_book(" ".join(cards[:-1]))


def test_an_empty_book_unreadable_file_or_binary_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BookError, match="no decks"):
        parse_book("# nothing\n\n")
    with pytest.raises(BookError, match="cannot read the deal book"):
        load_book(tmp_path / "missing.txt")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe" + b"AS " * 10)
    with pytest.raises(BookError, match="is not UTF-8"):
        load_book(binary)
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"#" * (MAX_BOOK_BYTES + 1))
    with pytest.raises(BookError, match="larger than"):
        load_book(huge)


def test_a_series_plays_the_book_in_order_each_deck_twice_with_the_hands_swapped() -> None:
    book = (tuple(deck(10)), tuple(deck(11)))
    result = play_local(GreedyBot(), RandomBot(seed=2), games=6, seed="b", book=book)
    games = [result.games[n] for n in range(1, 7)]
    # Decks 1, 1, 2, 2, then the book again from its start.
    assert [g.deck for g in games] == [book[0], book[0], book[1], book[1], book[0], book[0]]
    for a, b in zip(games[::2], games[1::2], strict=True):
        assert a.dealer == 1 - b.dealer  # each bot holds each hand of the deck once


def test_parallel_series_continue_the_book() -> None:
    book = tuple(tuple(deck(n)) for n in range(5))
    base = SeriesConfig(games=10, seed=1, format=SeriesFormat.DUPLICATE, book=book)
    configs = pairing_configs(base, 3)
    assert [c.games for c in configs] == [4, 4, 2]
    assert [c.book_start for c in configs] == [0, 2, 4]


def test_a_book_needs_the_two_player_duplicate_format() -> None:
    book = (tuple(deck(1)),)
    with pytest.raises(SeriesConfigError, match="needs the duplicate format"):
        SeriesConfig(games=2, seed=1, book=book)
    with pytest.raises(SeriesConfigError, match="a deal book is for the two-player game"):
        SeriesConfig(games=2, seed=1, book=book, ruleset="classic", players=3)
