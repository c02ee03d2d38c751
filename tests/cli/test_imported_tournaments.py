"""A tournament created by ``kryt games import`` (stored config ``{"imported": true}``):
``status`` shows its games with no plan to resume; ``resume``, ``extend`` and ``set``
refuse it in one line that says why, instead of calling its config invalid."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from arena.tournament.seeds import commitment
from kryt.cli import main
from kryt.errors import ExitCode
from tests.cli.helpers import kryt

IMPORTED_CONFIG = {
    "imported": True,
    "imported_series": {"0": {"seed_ids": [1, 2], "round_seed": None, "book_decks": None}},
}


def imported_config(seed: int, config: str) -> dict[str, object]:
    """A stored imported config, less the seed commitment the file published (checked: the
    commitment of the tournament's ``seed``, which the test draws afresh)."""
    record = json.loads(config)
    assert record.pop("seed_commitment") == commitment(seed)
    return dict(record)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding one imported tournament (an exported round of two bots)."""
    folder = tmp_path_factory.mktemp("imported")
    source, games = folder / "source.db", folder / "games.kgn"
    code = main(
        [
            "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
            "--backend", "process", "--move-seconds", "0.5", "--name", "cup",
            "-d", str(source), "--store", str(folder / "store"),
        ]
    )  # fmt: skip
    assert code == 0
    assert main(["games", "export", str(games), "-d", str(source)]) == 0
    target = folder / "imported.db"
    assert main(["games", "import", str(games), "-d", str(target)]) == 0
    with sqlite3.connect(target) as conn:
        rows = conn.execute("select id, seed, config from tournaments").fetchall()
    assert [tid for tid, _, _ in rows] == [1]
    # A record, not settings: where the series' seed came from (replay --verify follows it).
    assert imported_config(rows[0][1], rows[0][2]) == IMPORTED_CONFIG
    return target


def test_status_shows_an_imported_tournament_and_its_games(
    capsys: pytest.CaptureFixture[str], imported: Path
) -> None:
    code, out, err = kryt(capsys, "tournament", "status", "1", "-d", str(imported))
    assert code == 0, err
    assert "random" in out and "greedy" in out and "2/2" in out
    assert "imported from a game file" in out and "nothing to resume" in out
    assert "invalid stored setting" not in out + err
    code, out, err = kryt(capsys, "tournament", "status", "-d", str(imported))
    assert code == 0, err
    assert "(imported)" in out and "cup" in out


@pytest.mark.parametrize(
    ("args", "consequence"),
    [
        (["resume", "1"], "it has nothing to resume"),
        (["extend", "1", "--games", "2"], "it cannot be extended"),
        (["set", "1", "name=renamed"], "it has no settings"),
        (["set", "1", "sandbox.memory_mb=512"], "it has no settings"),
    ],
)
def test_resume_extend_and_set_refuse_it_in_one_line(
    capsys: pytest.CaptureFixture[str], imported: Path, args: list[str], consequence: str
) -> None:
    code, out, err = kryt(capsys, "tournament", *args, "-d", str(imported))
    assert code == ExitCode.BAD_INPUT, (out, err)
    assert err == f"error: tournament 1 was imported from a game file: {consequence}\n"
    with sqlite3.connect(imported) as conn:  # nothing changed
        rows = conn.execute("select name, seed, config from tournaments").fetchall()
        assert conn.execute("select count(*) from series").fetchone() == (1,)
    assert [(name, imported_config(seed, config)) for name, seed, config in rows] == [
        ("cup", IMPORTED_CONFIG)
    ]
