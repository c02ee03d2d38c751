"""Table tournaments on Dask: a 3-player classic tournament run with ``--executor dask`` (a
local cluster) ends with the same standings as the local executor for the same seed.

The bots are deterministic (each plays a fixed function of its view) and the clock is
generous, so the games depend only on the seed: any difference between the executors is a
difference in what they ran or recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kryt.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"

_BOT = """\
from typing import ClassVar

from referee.rules import Action, ClassicAction, ClassicView, View
from sdk import Bot, serve


class Pick(Bot):
    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view: View) -> Action:
        return view.legal_actions[{index}]

    def act_table(self, view: ClassicView) -> ClassicAction:
        return view.legal_actions[{index}]


if __name__ == "__main__":
    serve(Pick())
"""


def pick_bot(where: Path, name: str, index: int) -> Path:
    """A deterministic bot that always plays legal action ``index`` (0 first, -1 last)."""
    where.mkdir()
    (where / "bot.toml").write_text(
        f'name = "{name}"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (where / "bot.py").write_text(_BOT.format(index=index))
    return where


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def standings(
    capsys: pytest.CaptureFixture[str], bots: list[Path], executor: str, db: Path
) -> list[dict[str, Any]]:
    """Run the tournament on ``executor`` into its own database; its leaderboard rows."""
    url = f"sqlite:///{db}"
    code, _, err = kryt(
        capsys, "tournament", "run", *map(str, bots), "--ruleset", "classic",
        "--table-size", "3", "-n", "2", "--seed", "18", "--backend", "process", "--unsafe",
        "--executor", executor, "--move-seconds", "5", "--bank-seconds", "30",
        "--name", f"table-{executor}", "--database", url,
    )  # fmt: skip
    assert code == 0, err
    code, out, err = kryt(
        capsys, "leaderboard", "--ruleset", "classic", "--table-size", "3", "--json",
        "--database", url,
    )  # fmt: skip
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)["rows"]
    return rows


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:running untrusted bot")  # our own test bots, --unsafe
@pytest.mark.timeout(600)  # a local Dask cluster and 12 bot processes on a busy machine
def test_a_table_tournament_on_dask_has_the_standings_of_the_local_executor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bots = [
        EXAMPLES / "greedy",
        pick_bot(tmp_path / "first", "first", 0),
        pick_bot(tmp_path / "last", "last", -1),
    ]
    local = standings(capsys, bots, "local", tmp_path / "local.db")
    on_dask = standings(capsys, bots, "dask", tmp_path / "dask.db")
    assert {r["bot"] for r in local} == {"greedy", "first", "last"}
    # Two seating orders of three bots, two games each: 4 games, each 2 pairwise results
    # (the loser's; two winners have none between themselves) or 3 (a draw, the turn limit).
    assert all(4 <= r["games"] <= 8 for r in local), local
    assert 2 * 4 <= sum(r["games"] for r in local) // 2 <= 3 * 4, local
    assert sum(r["wins"] for r in local) == sum(r["losses"] for r in local) > 0, local
    # The live Elo follows the order games finished in, which parallel series do not fix;
    # everything else (counts, the fitted rating and its interval, ranks) is the seed's.
    assert [without_live_elo(r) for r in on_dask] == [without_live_elo(r) for r in local]


def without_live_elo(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "elo"}
