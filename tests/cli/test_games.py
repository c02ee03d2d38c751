"""``kryt games``: list with filters and ids, export as text/CSV/JSON, import; the export
round-trips (export, import into a fresh database: the same games and the same standings)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with a finished round robin of the three bundled bots (6 games)."""
    folder = tmp_path_factory.mktemp("source")
    db = folder / "source.db"
    code = main(
        [
            "tournament", "run", "builtin:greedy", "builtin:random", "builtin:mc",
            "--games", "2", "--backend", "process", "--move-seconds", "0.2",
            "--name", "cup", "-d", str(db), "--store", str(folder / "store"),
        ]
    )  # fmt: skip
    assert code == 0
    return db


def test_list_shows_ids_and_filters(capsys: pytest.CaptureFixture[str], source: Path) -> None:
    code, out, _ = kryt(capsys, "games", "list", "-d", str(source))
    assert code == 0
    ids = [int(m.group(1)) for m in re.finditer(r"^\s*(\d+) │", out, re.M)]
    assert sorted(ids) == [1, 2, 3, 4, 5, 6]
    assert "kryt replay ID" in out
    code, out, _ = kryt(capsys, "games", "list", "--bot", "random", "-d", str(source))
    rows = [line for line in out.splitlines() if re.match(r"^\s*\d+ │", line)]
    assert len(rows) == 4 and all("random" in row for row in rows)
    with sqlite3.connect(source) as conn:
        wins = conn.execute(
            "select count(*) from games g join submissions s on s.id in"
            " (g.seat0_submission_id, g.seat1_submission_id) join bots b on b.id = s.bot_id"
            " where b.name = 'greedy' and ((g.result = 'seat0' and s.id = g.seat0_submission_id)"
            " or (g.result = 'seat1' and s.id = g.seat1_submission_id))"
        ).fetchone()[0]
    code, out, _ = kryt(
        capsys, "games", "list", "--bot", "greedy", "--result", "win", "-d", str(source)
    )
    rows = [line for line in out.splitlines() if re.match(r"^\s*\d+ │", line)]
    assert len(rows) == wins
    code, out, _ = kryt(capsys, "games", "list", "--reason", "crash", "-d", str(source))
    assert code == 0 and "no games match" in out
    code, out, _ = kryt(capsys, "games", "list", "-t", "1", "-n", "2", "-d", str(source))
    assert len([ln for ln in out.splitlines() if re.match(r"^\s*\d+ │", ln)]) == 2


def test_bad_filters_are_one_line(capsys: pytest.CaptureFixture[str], source: Path) -> None:
    code, _, err = kryt(capsys, "games", "list", "--reason", "won", "-d", str(source))
    assert code == ExitCode.BAD_INPUT and "'won'" in err and "timeout" in err
    code, _, err = kryt(capsys, "games", "list", "--result", "win", "-d", str(source))
    assert code == ExitCode.BAD_INPUT and "needs a bot" in err


def test_export_import_round_trips(
    capsys: pytest.CaptureFixture[str], source: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "all.kgn"
    code, _, err = kryt(capsys, "games", "export", str(exported), "-d", str(source))
    assert code == 0 and "wrote 6 games" in err
    text = exported.read_text()
    assert text.count("[KrytGameFile ") == 6 and '[Tournament "cup"]' in text
    fresh = tmp_path / "fresh.db"
    code, out, err = kryt(capsys, "games", "import", str(exported), "-d", str(fresh))
    assert code == 0, err
    assert "imported 6 new games of 6 read (1 new tournament)" in out
    again = tmp_path / "again.kgn"
    assert kryt(capsys, "games", "export", str(again), "-d", str(fresh))[0] == 0
    assert again.read_text() == text  # the same games, ids, places and moves
    # The same standings (ratings, W/D/L, forfeits, progress).
    boards = []
    for db in (source, fresh):
        code, out, _ = kryt(capsys, "leaderboard", "--json", "-d", str(db))
        assert code == 0
        board = json.loads(out)
        # Submission ids are each database's own keys: the importer numbers bots in the
        # order the file names them, the source in the order they were submitted.
        for row in board["rows"]:
            row.pop("submission_id", None)
        boards.append(board)
    assert boards[0] == boards[1] and len(boards[0]["rows"]) == 3
    # Importing again adds nothing; imported games replay and verify.
    code, out, _ = kryt(capsys, "games", "import", str(exported), "-d", str(fresh))
    assert code == 0 and "imported 0 new games of 6 read (0 new tournaments)" in out
    code, out, _ = kryt(capsys, "replay", "3", "--verify", "-d", str(fresh))
    assert code == 0 and "verified" in out


def test_json_and_csv_exports(
    capsys: pytest.CaptureFixture[str], source: Path, tmp_path: Path
) -> None:
    as_json = tmp_path / "greedy.json"
    code, _, _ = kryt(capsys, "games", "export", str(as_json), "--bot", "greedy", "-d", str(source))
    assert code == 0
    games = json.loads(as_json.read_text())
    assert len(games) == 4 and all("greedy" in (g["Seat0"], g["Seat1"]) for g in games)
    assert all(len(g["Moves"]) > 0 for g in games)
    fresh = tmp_path / "fromjson.db"
    code, out, _ = kryt(capsys, "games", "import", str(as_json), "-d", str(fresh))
    assert code == 0 and "imported 4 new games" in out
    code, out, _ = kryt(capsys, "games", "export", "-", "--format", "csv", "-d", str(source))
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("game_id,") and len(lines) == 7


def test_a_damaged_file_names_the_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.kgn"
    bad.write_text('[KrytGameFile "1"]\n[Dealer "0"]\n\n1. 0 lead 6H\n*\n')
    code, _, err = kryt(capsys, "games", "import", str(bad), "-d", str(tmp_path / "x.db"))
    assert code == ExitCode.BAD_INPUT and "bad.kgn:4" in err and "Traceback" not in err
