"""CSV reader: the fixture loads; every malformed row is a typed error naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard.ratings import (
    CsvFormatError,
    EmptyResultsError,
    Game,
    Outcome,
    parse_games_csv,
    read_games_csv,
)
from tests.ratings.fixture import CSV


def test_reads_the_fixture() -> None:
    games = read_games_csv(CSV)
    assert len(games) == 840
    assert games[0] == Game("alpha", "bravo", Outcome.FIRST_WINS)
    assert {g.outcome for g in games} == set(Outcome)


def test_blank_lines_spaces_bom_and_quotes_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    text = '\ufefffirst, second ,result\n\n"x, the bot",y, 1/2-1/2 \ny,x,0-1\n'
    path.write_text(text, encoding="utf-8")
    assert read_games_csv(path) == [
        Game("x, the bot", "y", Outcome.DRAW),
        Game("y", "x", Outcome.SECOND_WINS),
    ]


def test_a_quoted_name_after_a_space_is_the_same_player() -> None:
    """The space kept the quotes: '"bravo"' was a second player with some of bravo's games."""
    text = 'first, second, result\nalpha, "bravo", 1-0\n"bravo", alpha, 1-0\nbravo , alpha,0-1\n'
    games = parse_games_csv(text)
    assert {g.first for g in games} | {g.second for g in games} == {"alpha", "bravo"}


@pytest.mark.parametrize(
    ("body", "line", "reason"),
    [
        ("a,b,1-0\na,b,2-0\n", 3, "unknown result '2-0'"),
        ("a,b,1-0\na,b\n", 3, "expected 3 fields, found 2"),
        ("a,b,1-0,extra\n", 2, "expected 3 fields, found 4"),
        ("a,a,1-0\n", 2, "cannot play against itself"),
        (",b,1-0\n", 2, "empty player name"),
        ('a,"b,1-0\n', 2, "not valid CSV"),
        ('a, "b" ,1-0\n', 2, "not valid CSV"),  # refused, not read as another name 'b '
    ],
)
def test_bad_rows_name_their_line(body: str, line: int, reason: str) -> None:
    with pytest.raises(CsvFormatError) as caught:
        parse_games_csv("first,second,result\n" + body, source="games.csv")
    error = caught.value
    assert error.line_number == line
    assert reason in str(error)
    assert f"games.csv:{line}:" in str(error)
    assert error.line == body.splitlines()[line - 2]
    assert repr(error.line) in str(error)  # the offending line is quoted


def test_missing_header_is_an_error() -> None:
    with pytest.raises(CsvFormatError, match="expected the header first,second,result"):
        parse_games_csv("a,b,1-0\n")


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("\n\n")
    with pytest.raises(EmptyResultsError, match="empty file"):
        read_games_csv(path)


def test_header_only_gives_no_games() -> None:
    assert parse_games_csv("first,second,result\n") == []


def test_non_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"first,second,result\na,b,1-0\nb\xe9,a,0-1\n")
    with pytest.raises(CsvFormatError, match=r"latin1.csv:3: not UTF-8") as caught:
        read_games_csv(path)
    assert caught.value.line_number == 3


def test_missing_file_is_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_games_csv(tmp_path / "nope.csv")
