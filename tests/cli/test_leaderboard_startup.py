"""``kryt leaderboard`` with fresh stored ratings shows the table without importing what only a
fit (SciPy), the web server or the bot runners need: a structural check of its start-up (which
modules a subprocess loaded), not a timed one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.db import Database, SeriesFormat
from leaderboard.standings import refit_and_store
from tests.standings.test_standings import play, setup

ROOT = Path(__file__).resolve().parents[2]

NOT_FOR_A_TABLE = (
    "scipy",
    "fastapi",
    "starlette",
    "uvicorn",
    "jinja2",
    "docker",
    "grpc",
    "alembic",
    "dask",
    "distributed",
)
"""Top-level packages a table of fresh stored ratings does not need."""

RUN = """
import json, sys
from kryt.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump([code, sorted(sys.modules)], out)
"""


def leaderboard_modules(tmp_path: Path, *args: str) -> tuple[int, str, set[str]]:
    """Run ``kryt leaderboard ARGS`` in a new interpreter: exit code, output, modules loaded."""
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(report), "leaderboard", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert report.exists(), done.stderr
    code, modules = json.loads(report.read_text())
    return code, done.stdout, set(modules)


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(packages))


def database(tmp_path: Path, fmt: SeriesFormat) -> tuple[Database, str]:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"], fmt)
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat0", "seat0", "seat1"] * 2)
    play(db, series[1], (ids[0], ids[2]), ["seat0", "seat1", "draw", "seat0"] * 2)
    play(db, series[2], (ids[1], ids[2]), ["seat1", "seat0", "seat0", "seat0"] * 2)
    return db, f"sqlite:///{tmp_path / 'k.db'}"


@pytest.mark.parametrize("fmt", [SeriesFormat.STANDARD, SeriesFormat.DUPLICATE])
def test_fresh_stored_ratings_need_no_scipy_and_no_server(
    tmp_path: Path, fmt: SeriesFormat
) -> None:
    db, url = database(tmp_path, fmt)
    # Stale (no snapshot yet): the board is fitted, so SciPy is loaded; this also shows the
    # check below can see SciPy when it is there.
    code, stale_table, modules = leaderboard_modules(tmp_path, "--database", url)
    assert code == 0
    assert loaded(modules, ("scipy", "numpy")) == ["numpy", "scipy"]
    assert refit_and_store(db) is not None  # what a tournament run or the ladder stores
    db.close()
    code, table, modules = leaderboard_modules(tmp_path, "--database", url)
    assert code == 0
    assert "sqlmodel" in modules and "kryt.commands.leaderboard" in modules
    assert loaded(modules, NOT_FOR_A_TABLE) == []
    # Standard games need no NumPy either; duplicate deal pairs are counted by the ratings
    # package (pentanomials), which uses it.
    assert ("numpy" in modules) == (fmt is SeriesFormat.DUPLICATE)
    assert table == stale_table  # the same table as the fitted one
    assert "alpha" in table and "BayesElo: prior 2" in table
