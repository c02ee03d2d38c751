"""``kryt games import`` and ``export`` on three findings of an outside CLI audit: one file
naming the same bot content under two names (the import kept one name and dropped the other);
a header value of megabytes echoed whole in an import error."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from arena.db import (
    ConflictError,
    open_database,
)
from kryt.errors import ExitCode
from leaderboard.gamefile import GameEntry, Seat, format_games, to_json
from leaderboard.games_io import import_entries
from referee.rules import shuffled_deck
from tests.cli.helpers import game_entry, kryt, table_counts

DECK = tuple(str(card) for card in shuffled_deck("kryt:test:audit:1"))
ALPHA = Seat("alpha", "1.0", "a" * 64)
BETA = Seat("beta", "2.0", "b" * 64)


def entry(number: int = 1, seats: tuple[Seat, Seat] = (ALPHA, BETA)) -> GameEntry:
    return game_entry(number, seats=seats, deck=DECK)


def counts(db: Path) -> dict[str, int]:
    return table_counts(db)


def only_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# -- F4. one file, one content, two names ---------------------------------------------------------


def test_a_game_file_naming_one_content_twice_is_refused_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    renamed = Seat("zzz", ALPHA.version, ALPHA.sha256)
    file = tmp_path / "two-names.kgn"
    file.write_text(format_games([entry(1), entry(2, (renamed, BETA))]), encoding="utf-8")
    second = 1 + file.read_text().splitlines().index('[KrytGameFile "1"]', 1)
    target = tmp_path / "f4.db"
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == ExitCode.BAD_INPUT and out == ""
    assert only_error_line(err) == (
        f"error: two-names.kgn:{second}: content sha256 {'a' * 64} is alpha 1.0 at"
        " two-names.kgn:1; it cannot also be zzz 1.0"
    )
    assert not target.exists()  # checked before the database is opened: nothing imported


def test_a_json_file_naming_one_content_twice_is_refused_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = tmp_path / "two-names.json"
    games = json.loads(to_json([entry(1), entry(2)]))
    games[1]["Seat0"] = "zzz"
    file.write_text(json.dumps(games), encoding="utf-8")
    target = tmp_path / "f4.db"
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == ExitCode.BAD_INPUT
    assert "two-names.json[1]: content sha256" in only_error_line(err)
    assert "is alpha 1.0 at two-names.json[0]; it cannot also be zzz 1.0" in err
    assert not target.exists()


def test_a_game_file_giving_one_version_two_contents_is_refused_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = Seat(ALPHA.bot, ALPHA.version, "c" * 64)
    file = tmp_path / "two-contents.kgn"
    file.write_text(format_games([entry(1), entry(2, (other, BETA))]), encoding="utf-8")
    target = tmp_path / "f4.db"
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == ExitCode.BAD_INPUT
    assert f"alpha 1.0 has content sha256 {'a' * 64} at two-contents.kgn:1;" in err
    assert f"it cannot also have {'c' * 64}" in only_error_line(err)
    assert not target.exists()


def test_a_version_stored_with_other_content_names_both_and_no_bot_toml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A game file bringing a bot version the database holds with other content: no
    bot.toml is involved, so the refusal names both contents, not a manifest to edit."""
    target = tmp_path / "f4b.db"
    first = tmp_path / "first.kgn"
    first.write_text(format_games([entry(1)]), encoding="utf-8")
    code, out, err = kryt(capsys, "games", "import", str(first), "-d", str(target))
    assert code == ExitCode.OK, (out, err)
    before = table_counts(target)
    other = Seat(ALPHA.bot, ALPHA.version, "c" * 64)
    second = tmp_path / "second.kgn"
    second.write_text(format_games([entry(1, (other, BETA))]), encoding="utf-8")
    code, _, err = kryt(capsys, "games", "import", str(second), "-d", str(target))
    assert code == ExitCode.BAD_INPUT
    line = only_error_line(err)
    assert "second.kgn:1: alpha 1.0 already exists with different content" in line, line
    assert f"(sha256 {'a' * 64}, submission 1)" in line, line
    assert f"versions are immutable; the file's is sha256 {'c' * 64}" in line, line
    assert "bot.toml" not in err
    assert table_counts(target) == before  # nothing written


def test_import_entries_refuses_a_second_name_for_one_content(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Whoever calls it without the file's checks: no name is dropped silently either."""
    renamed = Seat("zzz", ALPHA.version, ALPHA.sha256)
    second = replace(entry(2, (renamed, BETA)), where="x.kgn:40")
    database = open_database(f"sqlite:///{tmp_path / 'direct.db'}")
    try:
        expected = r"x\.kgn:40: content sha256 a{64} is alpha 1\.0"
        with pytest.raises(ConflictError, match=expected), database.session() as session:
            import_entries([entry(1), second], session=session)
    finally:
        database.close()
    assert set(counts(tmp_path / "direct.db").values()) == {0}  # nothing written


# -- F13. a header of megabytes ------------------------------------------------------------------


def test_a_huge_referee_is_quoted_bounded_naming_the_header_and_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = format_games([entry(1)]).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[Referee "))
    lines[at] = f'[Referee "{"x" * 3_000_000}"]'
    file = tmp_path / "big.kgn"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "tb.db"
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(target))
    assert code == ExitCode.BAD_INPUT
    line = only_error_line(err)
    assert line.startswith(
        f"error: big.kgn:{at + 1}: Referee must be 1 to 64 printable characters, got 'xxx"
    )
    assert line.endswith("... (3000000 characters)") and len(line) < 300
    assert not target.exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("VoidReason", "v" * 1_000_000),  # 'ending out with void reason ...'
        ("FinalCover", "c" * 1_000_000),  # 'an automatic final cover ...'
        ("Deck", " ".join(["d" * 100_000] * 36)),  # 'deck cards must be canonical ...'
        ("Referee", "kryt\x1b[2J" * 100_000),
    ],
)
def test_a_record_check_never_echoes_a_huge_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: str, value: str
) -> None:
    text = format_games([entry(1)])
    header = f"[{key} {json.dumps(value)}]"
    if f"[{key} " in text:
        lines = [header if x.startswith(f"[{key} ") else x for x in text.splitlines()]
    else:
        lines = text.splitlines()
        lines.insert(1, header)
    file = tmp_path / "big.kgn"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = kryt(capsys, "games", "import", str(file), "-d", str(tmp_path / "tb.db"))
    assert code == ExitCode.BAD_INPUT
    assert len(only_error_line(err)) < 600 and "\x1b" not in err, err[:1000]
