"""``kryt ratings fit``: table, JSON, paired mode, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kryt.commands.ratings import app
from tests.ratings.fixture import CSV, expected

runner = CliRunner()
EXPECTED = expected()


def test_table_lists_bots_best_first_with_bayeselo_numbers() -> None:
    result = runner.invoke(app, ["fit", str(CSV)])
    assert result.exit_code == 0, result.output
    out = result.output
    for header in ("Rank", "Bot", "Rating", "±", "Games", "Score %", "Draws %", "LOS next"):
        assert header in out
    positions = [out.index(name) for name in EXPECTED.ratings]
    assert positions == sorted(positions)
    assert "116.4" in out and "-170.3" in out and "0.941" in out
    assert "drawelo 93.9" in out


def test_json_output_matches_the_fixture() -> None:
    result = runner.invoke(app, ["fit", str(CSV), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["model"] == "bayeselo" and data["prior"] == 2.0
    players = data["players"]
    assert [p["name"] for p in players] == list(EXPECTED.ratings)
    for p in players:
        assert p["rating"] == pytest.approx(EXPECTED.ratings[p["name"]], abs=1.0)
        assert round(p["interval"]) == EXPECTED.intervals[p["name"]]
        assert p["games"] == p["wins"] + p["draws"] + p["losses"]
    assert players[-1]["los_next"] is None
    assert players[0]["los_next"] == pytest.approx(EXPECTED.los_next["alpha"], abs=0.01)


def test_prior_and_offset_options() -> None:
    result = runner.invoke(app, ["fit", str(CSV), "--json", "--prior", "0", "--offset", "1500"])
    assert result.exit_code == 0, result.output
    ratings = {p["name"]: p["rating"] for p in json.loads(result.output)["players"]}
    for name, rating in EXPECTED.ratings_prior0.items():
        assert ratings[name] == pytest.approx(1500 + rating, abs=1.0)


def test_paired_mode_adds_paired_intervals_and_pentanomials() -> None:
    table = runner.invoke(app, ["fit", str(CSV), "--paired"])
    assert table.exit_code == 0, table.output
    assert "paired" in table.output and "alpha v bravo" in table.output
    result = runner.invoke(app, ["fit", str(CSV), "--paired", "--json"])
    data = json.loads(result.output)
    assert data["paired_method"] == "sandwich"
    assert all(p["interval_paired"] > 0 for p in data["players"])
    assert sum(sum(p["counts"]) for p in data["pentanomials"]) == 420


def one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    assert lines[0].startswith("error: ")
    return lines[0]


def test_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fit", str(tmp_path / "nope.csv")])
    assert result.exit_code == 2
    assert "nope.csv" in one_error_line(result.output)
    assert "No such file" in result.output


def test_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fit", str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory" in one_error_line(result.output)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("first,second,result\na,b,1-0\nb,a,win\n", ":3: unknown result 'win'"),
        ("first,second,result\na,b\n", ":2: expected 3 fields"),
        ("a,b,1-0\n", ":1: expected the header"),
        ("", "empty file"),
        ("first,second,result\na,b,1-0\nc,d,0-1\n", "never played each other"),
    ],
)
def test_bad_csv_is_one_line_and_exit_2(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    result = runner.invoke(app, ["fit", str(path)])
    assert result.exit_code == 2
    assert needle in one_error_line(result.output)


def test_paired_mode_rejects_rows_that_are_not_deal_pairs(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    path.write_text("first,second,result\na,b,1-0\nb,a,0-1\na,b,1/2-1/2\n")
    result = runner.invoke(app, ["fit", str(path), "--paired"])
    assert result.exit_code == 2
    assert "deal pairs" in one_error_line(result.output)


def test_many_disconnected_groups_are_summed_up_in_a_short_line(tmp_path: Path) -> None:
    """500 bots in 250 pairs that never met named every group: a line of kilobytes."""
    rows = ["first,second,result"] + [f"b{2 * i},b{2 * i + 1},1-0" for i in range(250)]
    results = tmp_path / "split.csv"
    results.write_text("\n".join(rows) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "kryt", "ratings", "fit", str(results)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "250 groups that never played each other" in done.stderr
    assert "and 245 more" in done.stderr and len(done.stderr) < 400, done.stderr
