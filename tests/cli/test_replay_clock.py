"""``kryt replay N --verify`` checks recorded move times against the recorded time controls:
a game file whose move time was edited to one the clock could not allow (the audit's
``{1e308}`` in a 1+10+0 game that ends ``out``) imports, and its verification fails naming
the move; every game real bots played under a tight clock, timeouts included, verifies."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode
from tests.cli.helpers import flat, kryt

pytestmark = pytest.mark.timeout(600)


def game_ids(db: Path) -> list[int]:
    with sqlite3.connect(db) as conn:
        return [int(i) for (i,) in conn.execute("select id from games order by id")]


def run(folder: Path, name: str, *args: str) -> Path:
    """A finished tournament of the bundled bots (process sandbox) in its own database."""
    db = folder / f"{name}.db"
    common = ["--backend", "process", "--name", name, "-d", str(db)]
    assert main(["tournament", "run", *args, *common, "--store", str(folder / "store")]) == 0
    return db


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two games of greedy against random under 1+10+0, exported as a game file."""
    folder = tmp_path_factory.mktemp("audit")
    db = run(folder, "cup", "builtin:greedy", "builtin:random", "--games", "2", "--time", "1+10")
    target = folder / "games.kgn"
    assert main(["games", "export", str(target), "-d", str(db)]) == 0
    return target


def test_an_edited_move_time_the_clock_cannot_allow_fails_verification(
    capsys: pytest.CaptureFixture[str], audit: Path, tmp_path: Path
) -> None:
    text = audit.read_text()
    assert '[Seat0Time "1+10+0 grace=0.05 clock=wall"]' in text
    first = re.search(r"^1\. (\d) .* \{([0-9.e-]+)\}$", text, re.MULTILINE)
    assert first is not None
    seat = first.group(1)
    edited = tmp_path / "edited.kgn"
    edited.write_text(text[: first.start(2)] + "1e308" + text[first.end(2) :])
    db = tmp_path / "imported.db"
    # The import replays every game, its clock included (as replay --verify does): refused.
    code, _, err = kryt(capsys, "games", "import", str(edited), "-d", str(db))
    assert code == ExitCode.BAD_INPUT, err
    assert (
        f"edited.kgn:1: game 1 does not replay as recorded: move 1: seat {seat} took 1e+308 s,"
        " but its clock had at most 11.050000 s left (control 1+10+0, grace 0.05 s, clock"
        " wall): the referee would have ended the game there by timeout"
    ) in flat(err), err
    assert not db.exists()
    code, _, err = kryt(capsys, "games", "import", str(audit), "-d", str(db))
    assert code == ExitCode.OK, err
    _, other_id = game_ids(db)
    # The game the edit left alone verifies, its clock included.
    code, out, _ = kryt(capsys, "replay", str(other_id), "--verify", "-d", str(db))
    assert code == ExitCode.OK
    assert "verified: the rules engine reproduces the stored result and every move fits" in flat(
        out
    )


TIGHT = ["--move-seconds", "0.002", "--bank-seconds", "0.004", "--grace-seconds", "0"]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(
            ["builtin:greedy", "builtin:random", "builtin:mc", "--games", "2", *TIGHT,
             "--increment-seconds", "0.001"],
            id="pairs",
        ),
        pytest.param(
            ["builtin:greedy", "builtin:random", "builtin:mc", "--ruleset", "classic",
             "--table-size", "3", "--games", "1", *TIGHT],
            id="table",
        ),
    ],
)  # fmt: skip
def test_every_game_played_under_a_tight_clock_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]
) -> None:
    # Milliseconds a move: on a busy machine some games end on time, some normally; which
    # is up to the machine, and every one of them must verify.
    db = run(tmp_path, "tight", *args)
    ids = game_ids(db)
    assert ids
    for game_id in ids:
        code, out, err = kryt(capsys, "replay", str(game_id), "--verify", "-d", str(db))
        assert code == ExitCode.OK, out + err
        assert "every move fits its seat's clock" in flat(out)
