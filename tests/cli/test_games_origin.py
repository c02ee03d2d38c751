"""Imported games verify in any database: the game file carries where a series' seed and deals
come from (``SeriesSeedIds``, ``RoundSeed``, ``DealBook``), since a series seed derives from
the submission ids of the database that made it and an extension round has a seed of its own.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode
from referee.rules import shuffled_deck

RUN = ["--games", "2", "--backend", "process", "--move-seconds", "0.2"]


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def game_ids(capsys: pytest.CaptureFixture[str], db: Path, tournament: int) -> list[int]:
    code, out, _ = kryt(capsys, "games", "list", "-t", str(tournament), "-d", str(db))
    assert code == 0, out
    return [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) │", out, re.M)]


def verify(capsys: pytest.CaptureFixture[str], db: Path, game: int) -> tuple[int, str]:
    code, out, _ = kryt(capsys, "replay", str(game), "--verify", "-d", str(db))
    return code, " ".join(out.split())


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose own tournament took the first submission ids, so an import's bots
    get other ids than in the database the games come from."""
    folder = tmp_path_factory.mktemp("other")
    db = folder / "other.db"
    code = main(
        ["tournament", "run", "builtin:mc", "builtin:random", *RUN, "--name", "home",
         "-d", str(db), "--store", str(folder / "store")]
    )  # fmt: skip
    assert code == 0
    return db


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tournament of two bots, extended by a round of two more games."""
    folder = tmp_path_factory.mktemp("extended")
    db = folder / "source.db"
    store = str(folder / "store")
    code = main(
        ["tournament", "run", "builtin:greedy", "builtin:random", *RUN, "--name", "cup",
         "--seed", "7", "-d", str(db), "--store", store]
    )  # fmt: skip
    assert code == 0
    assert main(["tournament", "extend", "1", "--games", "2", "-d", str(db)]) == 0
    return db


def copy(db: Path, to: Path) -> Path:
    """A copy of an SQLite database, what its write-ahead log holds included."""
    with sqlite3.connect(db) as source, sqlite3.connect(to) as target:
        source.backup(target)
    source.close()
    target.close()
    return to


def test_an_extended_tournament_verifies_where_its_bots_have_other_ids(
    capsys: pytest.CaptureFixture[str], extended: Path, other: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "cup.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-d", str(extended))[0] == 0
    text = exported.read_text()
    # Both series derive from submissions 1 and 2 of the source; the round's from its seed.
    assert text.count('[SeriesSeedIds "1 2"]') == 4
    assert len(re.findall(r'\[RoundSeed "\d+"\]', text)) == 2
    target = copy(other, tmp_path / "target.db")
    code, out, _ = kryt(capsys, "games", "import", str(exported), "-d", str(target))
    assert code == 0 and "imported 4 new games" in out
    games = game_ids(capsys, target, 2)
    assert len(games) == 4
    for game in games:
        code, out = verify(capsys, target, game)
        assert code == 0, out
        assert "the deal follows from the tournament's seed" in out
    # The chain is checked, not assumed: a round seed that does not give the series seed.
    forged = re.sub(r'\[RoundSeed "(\d+)"\]', lambda m: f'[RoundSeed "{int(m[1]) + 1}"]', text)
    forged = forged.replace('[Tournament "cup"]', '[Tournament "forged"]')
    # With the round's published commitment the import refuses the forged seed outright
    # (tests/games/test_seed_commitment.py); a file without it (an older export) imports.
    assert "[RoundSeedCommitment " in forged
    forged = re.sub(r'^\[RoundSeedCommitment "[0-9a-f]+"\]\n', "", forged, flags=re.M)
    (tmp_path / "forged.kgn").write_text(forged)
    assert kryt(capsys, "games", "import", str(tmp_path / "forged.kgn"), "-d", str(target))[0] == 0
    results = [verify(capsys, target, game) for game in game_ids(capsys, target, 3)]
    failed = [out for code, out in results if code == ExitCode.FAILED]
    assert len(failed) == 2 and all("is not the one the tournament seed gives" in o for o in failed)


def test_an_import_of_an_import_exports_the_same_file(
    capsys: pytest.CaptureFixture[str], extended: Path, other: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.kgn", tmp_path / "second.kgn"
    assert kryt(capsys, "games", "export", str(first), "-d", str(extended))[0] == 0
    target = copy(other, tmp_path / "target.db")
    assert kryt(capsys, "games", "import", str(first), "-d", str(target))[0] == 0
    assert kryt(capsys, "games", "export", str(second), "-t", "2", "-d", str(target))[0] == 0
    # The ids of the place differ (informative); where the seeds come from does not.
    drop = re.compile(r'^\[(GameId|TournamentId|SeriesId) "\d+"\]\n', re.M)
    assert drop.sub("", second.read_text()) == drop.sub("", first.read_text())


def test_a_deal_book_tournament_verifies_what_the_file_can_show(
    capsys: pytest.CaptureFixture[str], other: Path, tmp_path: Path
) -> None:
    decks = [" ".join(str(card) for card in shuffled_deck(seed)) for seed in (1, 2, 3)]
    book = tmp_path / "book.txt"
    book.write_text("\n".join(decks) + "\n")
    source = tmp_path / "source.db"
    code = main(
        ["tournament", "run", "builtin:greedy", "builtin:random", *RUN, "--name", "booked",
         "--book", str(book), "-d", str(source), "--store", str(tmp_path / "store")]
    )  # fmt: skip
    assert code == 0
    exported = tmp_path / "booked.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-d", str(source))[0] == 0
    assert exported.read_text().count('[DealBook "3"]') == 2
    target = copy(other, tmp_path / "target.db")
    assert kryt(capsys, "games", "import", str(exported), "-d", str(target))[0] == 0
    for game in game_ids(capsys, target, 2):
        code, out = verify(capsys, target, game)
        assert code == 0, out
        assert "the series seed follows from the tournament's seed" in out
        assert "deal book (3 decks)" in out and "not checked" in out
    # In the database that has the book, the deck itself is checked against it (and the
    # deal is not said to follow from the seed: a book's decks are not drawn from it).
    for game in game_ids(capsys, source, 1):
        code, out = verify(capsys, source, game)
        assert code == 0 and "the deal is the deck the tournament's deal book (3 decks)" in out
        assert "the series seed follows from the tournament's seed" in out
        assert "the deal follows from" not in out


def test_origin_headers_are_checked(
    capsys: pytest.CaptureFixture[str], extended: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "cup.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-d", str(extended))[0] == 0
    text = exported.read_text()
    cases = {
        "ids": (text.replace('[SeriesSeedIds "1 2"]', '[SeriesSeedIds "1 x"]', 1), "1 x"),
        "zero": (text.replace('[SeriesSeedIds "1 2"]', '[SeriesSeedIds "0 2"]', 1), "0 2"),
        "alone": (
            re.sub(r'\[SeriesSeedIds "1 2"\]\n(?=\[RoundSeed)', "", text, count=1),
            "RoundSeed needs a SeriesSeedIds header",
        ),
        "disagree": (
            text.replace('[SeriesSeedIds "1 2"]', '[SeriesSeedIds "1 3"]', 1),
            "differs from an earlier record",
        ),
    }
    for name, (bad, expected) in cases.items():
        path = tmp_path / f"{name}.kgn"
        path.write_text(bad)
        target = tmp_path / f"{name}.db"
        code, _, err = kryt(capsys, "games", "import", str(path), "-d", str(target))
        assert code == ExitCode.BAD_INPUT and expected in err, (name, err)
        assert not target.exists()  # checked before the database is opened


def test_two_files_that_disagree_on_a_series_origin_conflict(
    capsys: pytest.CaptureFixture[str], extended: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "cup.kgn"
    assert kryt(capsys, "games", "export", str(exported), "-d", str(extended))[0] == 0
    records = exported.read_text().split("\n\n[KrytGameFile")
    first = records[0] + "\n"
    second = "[KrytGameFile" + records[1]
    target = tmp_path / "target.db"
    (tmp_path / "one.kgn").write_text(first)
    assert kryt(capsys, "games", "import", str(tmp_path / "one.kgn"), "-d", str(target))[0] == 0
    other_ids = second.replace('[SeriesSeedIds "1 2"]', '[SeriesSeedIds "2 1"]')
    assert other_ids != second
    (tmp_path / "two.kgn").write_text(other_ids)
    code, _, err = kryt(capsys, "games", "import", str(tmp_path / "two.kgn"), "-d", str(target))
    assert code != 0 and "another origin" in err and "Traceback" not in err
    assert len(game_ids(capsys, target, 1)) == 1  # the refused file stored nothing
