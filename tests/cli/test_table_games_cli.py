"""``kryt replay`` and ``kryt games export`` on a database with classic-table games: a table
game is replayed and verified with every seat's name, and an export leaves the table games
out in one line (a game file has two seats) instead of failing on them."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode
from tests.cli.helpers import flat, kryt

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tournament 1: a table of the three bundled bots (two seatings, one game each);
    tournament 2: random against greedy (one game)."""
    folder = tmp_path_factory.mktemp("mixed")
    db = folder / "mixed.db"
    common = ["--backend", "process", "--move-seconds", "2", "-d", str(db)]
    common += ["--store", str(folder / "store")]
    table = ["builtin:greedy", "builtin:random", "builtin:mc", "--ruleset", "classic"]
    table += ["--table-size", "3", "--games", "1", "--name", "table"]
    assert main(["tournament", "run", *table, *common]) == 0
    pair = ["builtin:random", "builtin:greedy", "--games", "1", "--name", "pair"]
    assert main(["tournament", "run", *pair, *common]) == 0
    return db


def _table_game(db: Path) -> tuple[int, list[int]]:
    with sqlite3.connect(db) as conn:
        game_id, seats = conn.execute(
            "select id, seats from games where ruleset = 'classic' order by id limit 1"
        ).fetchone()
    return int(game_id), json.loads(seats)


def test_a_table_game_is_replayed_and_verified(
    capsys: pytest.CaptureFixture[str], mixed: Path
) -> None:
    game_id, seats = _table_game(mixed)
    assert len(seats) == 3
    code, out, err = kryt(capsys, "replay", str(game_id), "--verify", "-d", str(mixed))
    assert code == ExitCode.OK, out + err
    text = flat(out)
    for seat in range(3):
        assert f"seat {seat}:" in text
    assert {"greedy", "random", "mc"} <= set(re.findall(r"seat \d: (\w+)", text))
    assert re.search(r"result: (\w+ [\d.]+ loses|draw|.* beats .*) by ", text), text
    assert text.count("verified") == 2, text


def test_an_export_leaves_out_the_table_games_in_one_line(
    capsys: pytest.CaptureFixture[str], mixed: Path, tmp_path: Path
) -> None:
    target = tmp_path / "all.kgn"
    code, _, err = kryt(capsys, "games", "export", str(target), "-d", str(mixed))
    assert code == ExitCode.OK, err
    assert "wrote 1 games" in flat(err) and "left out 2 classic-table games" in flat(err)
    code, _, err = kryt(capsys, "games", "export", str(tmp_path / "t.json"), "-t", "1",
                        "-d", str(mixed))  # fmt: skip
    assert code == ExitCode.BAD_INPUT
    assert "nothing to export: the 2 games chosen are classic-table games" in flat(err)
    assert not (tmp_path / "t.json").exists()


def _listed(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> set[int]:
    code, out, err = kryt(capsys, "games", "list", *args, "-d", str(db))
    assert code == ExitCode.OK, err
    # The table's rows start with the game id and a column rule ("N games; ..." does not).
    return {int(m) for m in re.findall(r"^\s*(\d+)\s*│", out, flags=re.MULTILINE)}


@pytest.mark.parametrize("bot", ["greedy", "random", "mc"])
def test_list_finds_a_bots_table_games_at_any_seat_and_their_results(
    capsys: pytest.CaptureFixture[str], mixed: Path, bot: str
) -> None:
    with sqlite3.connect(mixed) as conn:
        (sub,) = conn.execute(
            "select s.id from submissions s join bots b on b.id = s.bot_id where b.name = ?",
            (bot,),
        ).fetchone()
        rows = conn.execute("select id, seats, pairwise from games where ruleset = 'classic'")
        games = [(gid, json.loads(seats), json.loads(pairs or "[]")) for gid, seats, pairs in rows]
    sat, lost, won = set(), set(), set()
    for gid, seats, pairs in games:
        if sub not in seats:
            continue
        seat = seats.index(sub)
        sat.add(gid)
        if any(loser == seat for _, loser in pairs):  # lost to any seat
            lost.add(gid)
        elif any(winner == seat for winner, _ in pairs):  # beat one, lost to none
            won.add(gid)
    assert len(sat) == 2  # every bot sits at both tables, at seat 0, 1 or 2
    assert _listed(capsys, mixed, "-t", "1", "--bot", bot) == sat
    assert _listed(capsys, mixed, "-t", "1", "--bot", bot, "--result", "loss") == lost
    assert _listed(capsys, mixed, "-t", "1", "--bot", bot, "--result", "win") == won
