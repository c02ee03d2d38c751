"""``kryt games import`` and ``export`` on hostile input: every malformed file is refused with
one clear line (file, line, field, escaped value) and exit status 2, never a traceback, and
the database is left as it was (the whole file is checked before anything is written)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from leaderboard.gamefile import GameEntry, Seat, format_games, to_json
from referee.rules import shuffled_deck
from tests.cli.helpers import game_entry, kryt, table_counts

DECK = tuple(str(card) for card in shuffled_deck("kryt:test:hostile:1"))
SEATS = (Seat("alpha", "1.0", "a" * 64), Seat("beta", "2.0-rc1", "b" * 64))


def game(number: int = 1, position: int = 0) -> GameEntry:
    return game_entry(number, seats=SEATS, deck=DECK, position=position)


def counts(db: Path) -> dict[str, int]:
    return table_counts(db)


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A database holding one imported game (so "unchanged" is more than "empty")."""
    path = tmp_path / "games.db"
    good = tmp_path / "good.kgn"
    good.write_text(format_games([game(1)]), encoding="utf-8")
    code, out, err = kryt(capsys, "games", "import", str(good), "-d", str(path))
    assert code == 0, err
    assert "imported 1 new games" in out
    assert counts(path) == {"submissions": 2, "tournaments": 1, "series": 1, "games": 1}
    return path


def with_header(text: str, key: str, value: str) -> tuple[str, int]:
    """``text`` with the first ``[key "..."]`` header set to ``value``, and its line."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"[{key} "):
            lines[index] = f"[{key} {json.dumps(value)}]"
            return "\n".join(lines) + "\n", index + 1
    raise AssertionError(f"no header {key}")


def refused(capsys: pytest.CaptureFixture[str], db: Path, file: Path, *expected: str) -> str:
    """Import ``file`` into ``db``: exit 2, one error line with ``expected``, no change."""
    before = counts(db)
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(db))
    assert code == ExitCode.BAD_INPUT, (code, out, err)
    assert "Traceback" not in err and "\x1b" not in err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    for part in expected:
        assert part in err, (part, err)
    assert counts(db) == before
    return err


BIG = "99999999999999999999999"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("TournamentStatus", "", "TournamentStatus must be one of pending, running"),
        ("TournamentStatus", "done", "TournamentStatus must be one of"),
        ("SeriesFormat", "", "SeriesFormat must be one of standard, duplicate"),
        ("SeriesFormat", "swiss", "SeriesFormat must be one of"),
        ("SeriesStatus", "over", "SeriesStatus must be one of pending"),
        ("SeriesASeat", "-1", "SeriesASeat must be an integer in [0, 1]"),
        ("SeriesASeat", "5", "SeriesASeat must be an integer in [0, 1]"),
        ("SeriesASeat", BIG, "SeriesASeat must be an integer in [0, 1]"),
        ("Game", BIG, "Game must be an integer in [1, 2]"),
        ("Game", "5", "Game must be an integer in [1, 2] (the series' SeriesGames)"),
        ("Game", "0", "Game must be an integer in [1, 2]"),
        ("Attempt", BIG, "Attempt must be an integer in [1, 2147483647]"),
        ("TurnLimit", BIG, "TurnLimit must be an integer in [1, 2147483647]"),
        ("SeriesGames", BIG, "SeriesGames must be an integer in [1, 2147483647]"),
        ("SeriesPosition", BIG, "SeriesPosition must be an integer in [0, 2147483647]"),
        ("TournamentSeed", BIG, "TournamentSeed must be an integer in [0, 9223372036854775807]"),
        ("Dealer", "١", "Dealer must be an integer"),
        ("Seat0Version", "-1", "Seat0Version must be a version as in bot.toml"),
        ("Seat1Version", "1 0", "Seat1Version must be a version as in bot.toml"),
        ("Seat0", "Alpha!", "Seat0 must be a bot name as in bot.toml"),
        ("Seat1Sha256", "a" * 64, "Seat0Sha256 and Seat1Sha256 are the same bot version"),
    ],
)
def test_a_bad_header_is_one_line_naming_file_line_field_and_value(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    tmp_path: Path,
    key: str,
    value: str,
    message: str,
) -> None:
    text, line = with_header(format_games([game(1)]), key, value)
    bad = tmp_path / "bad.kgn"
    bad.write_text(text, encoding="utf-8")
    err = refused(capsys, db, bad, message, f"bad.kgn:{line}:")
    if key != "Seat1Sha256":
        assert repr(value) in err or repr(value[:80]) in err


def test_control_characters_of_a_bad_value_are_escaped(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    text, line = with_header(format_games([game(1)]), "SeriesStatus", "\x1b]0;PWNED\x07\x1b[2J")
    bad = tmp_path / "esc.kgn"
    bad.write_text(text, encoding="utf-8")
    err = refused(capsys, db, bad, f"esc.kgn:{line}: SeriesStatus", "\\x1b]0;PWNED\\x07")
    assert "\x07" not in err


def test_a_bad_record_after_a_good_one_stores_neither(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    """The whole file is checked first: the good new game of series 1 is not stored."""
    second, _ = with_header(format_games([game(1, position=1)]), "SeriesASeat", "-1")
    bad = tmp_path / "two.kgn"
    bad.write_text(format_games([game(2)]) + "\n" + second, encoding="utf-8")
    refused(capsys, db, bad, "two.kgn:", "SeriesASeat must be an integer in [0, 1]")


def test_records_of_one_series_must_agree(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    other = replace(game(2), series_games=4)
    bad = tmp_path / "split.kgn"
    text = format_games([game(1), other])
    bad.write_text(text, encoding="utf-8")
    starts = [n for n, line in enumerate(text.splitlines(), start=1) if line.startswith("[Kryt")]
    refused(
        capsys,
        db,
        bad,
        f"split.kgn:{starts[1]}:",
        "differs from an earlier record of it, at split.kgn:1",
    )


def test_a_binary_file_is_refused(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "random.kgn"
    bad.write_bytes(b"[KrytGameFile \xc4\x00\xff\xfe garbage" * 50)
    refused(capsys, db, bad, "random.kgn: not a UTF-8 text file")


@pytest.mark.parametrize("seconds", ["1.2.3", "1e999", "--1"])
def test_a_bad_move_time_is_refused(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, seconds: str
) -> None:
    text = format_games([game(2)]).replace("{0.5}", "{" + seconds + "}")
    bad = tmp_path / "moves.kgn"
    bad.write_text(text, encoding="utf-8")
    (line,) = [
        number
        for number, text_line in enumerate(text.splitlines(), start=1)
        if text_line.startswith("2. ") and text_line.endswith("{" + seconds + "}")
    ]
    refused(capsys, db, bad, f"moves.kgn:{line}: move 2: a move's seconds must be a finite number")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("SeriesASeat", "5", "SeriesASeat must be an integer in [0, 1]"),
        ("TournamentStatus", "nope", "TournamentStatus must be one of"),
        ("Game", BIG, "Game must be an integer in [1, 2]"),
        ("Seat0Version", "-1", "Seat0Version must be a version as in bot.toml"),
    ],
)
def test_a_bad_json_field_is_refused(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    tmp_path: Path,
    key: str,
    value: str,
    message: str,
) -> None:
    data = json.loads(to_json([game(2)]))
    data[0][key] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    refused(capsys, db, bad, f"bad.json[0]: {key}", message)


def test_deeply_nested_json_is_refused(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000, encoding="utf-8")
    refused(capsys, db, bad, "deep.json: not JSON")


def test_a_refused_file_does_not_create_the_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text, _ = with_header(format_games([game(1)]), "SeriesFormat", "")
    bad = tmp_path / "bad.kgn"
    bad.write_text(text, encoding="utf-8")
    target = tmp_path / "new.db"
    code, _, err = kryt(capsys, "games", "import", str(bad), "-d", str(target))
    assert code == ExitCode.BAD_INPUT and "Traceback" not in err
    assert not target.exists()


def test_export_to_a_missing_folder_is_one_line(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "no" / "such" / "dir" / "g.kgn"
    code, out, err = kryt(capsys, "games", "export", str(target), "-d", str(db))
    assert code == ExitCode.BAD_INPUT, (code, out, err)
    assert err.strip() == f"error: cannot write {target}: No such file or directory"
    code, _, err = kryt(capsys, "games", "export", str(tmp_path), "-d", str(db))
    assert code == ExitCode.BAD_INPUT and err.startswith("error: cannot write")


@pytest.mark.parametrize(
    ("deck", "message"),
    [
        (lambda d: d[:-1], "deck must have 36 cards, got 35"),
        (lambda d: [*d[:-1], d[0]], "deck has duplicate cards"),
        (lambda d: [*d[:-1], "1Z"], "deck cards must be canonical"),
    ],
)
def test_a_bad_deck_is_refused_with_its_place_before_the_database_opens(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    deck: Callable[[list[str]], list[str]],
    message: str,
) -> None:
    """The record checks the database would make are made on the file, line named; no
    database is created for a refused file."""
    good = format_games([game(1)])
    cards = json.loads(next(x for x in good.splitlines() if x.startswith("[Deck "))[6:-1]).split()
    text, _ = with_header(good, "Deck", " ".join(deck(cards)))
    bad = tmp_path / "bad.kgn"
    bad.write_text(text, encoding="utf-8")
    target = tmp_path / "new.db"
    code, _, err = kryt(capsys, "games", "import", str(bad), "-d", str(target))
    assert code == ExitCode.BAD_INPUT and "Traceback" not in err
    assert "bad.kgn:1:" in err and message in err, err
    assert not target.exists()


def test_a_header_given_twice_in_a_record_is_refused(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    good = format_games([game(1)])
    lines = good.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("[Dealer "))
    lines.insert(at + 1, '[Dealer "1"]')
    bad = tmp_path / "bad.kgn"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused(capsys, db, bad, f"bad.kgn:{at + 2}: header Dealer appears twice", f"line {at + 1}")


@pytest.mark.parametrize("value", ["kryt\x00referee", "kryt\x1b[2J"])
def test_a_referee_version_with_control_characters_is_refused(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, value: str
) -> None:
    """It was the one text field stored as given: SQLite kept the NUL, PostgreSQL's import
    died with a traceback. Now refused on both, in one line, before anything is stored."""
    text, _ = with_header(format_games([game(1)]), "Referee", value)
    bad = tmp_path / "bad.kgn"
    bad.write_text(text, encoding="utf-8")
    refused(capsys, db, bad, "Referee must be 1 to 64 printable characters")
