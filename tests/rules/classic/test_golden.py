"""Golden playthroughs of the classic table (2, 3 and 4 players) must not drift.

Regenerate with ``python scripts/gen_golden_classic.py`` only for an intended rules change, and
review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.rules import Game
from referee.rules.classic.playthrough import record_playthrough

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))


def test_golden_files_cover_every_table_size_and_both_endings() -> None:
    data = [json.loads(p.read_text()) for p in GOLDEN]
    assert {d["players"] for d in data} == {2, 3, 4}
    assert {d["reason"] for d in data} == {"last holder", "all out"}
    assert all(d["ruleset"] == "classic" for d in data)


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_replaying_the_golden_actions_gives_the_recorded_states(path: Path) -> None:
    data = json.loads(path.read_text())
    n = data["players"]
    game = Game.from_deck(data["deck"].split(), data["dealer"], players=n, ruleset="classic")
    assert game.trump.letter == data["trump"]
    for number, step in enumerate(data["steps"]):
        assert game.to_move == step["seat"], number
        assert len(game.legal_actions()) == step["legal"], number
        game.play(step["action"])
        assert [" ".join(map(str, h)) for h in game.hands] == step["hands"], number
        assert " ".join(map(str, game.led)) == step["led"], number
        assert len(game.discard) == step["discard"], number
        assert len(game.stock) == step["stock"], number
        assert [s for s in range(n) if game.out[s]] == step["out"], number
        assert (game.leader, game.defender) == (step["leader"], step["defender"]), number
    assert game.over
    assert game.loser == data["loser"]
    assert (game.reason.value if game.reason else None) == data["reason"]
    assert [list(p) for p in game.pairwise_results()] == data["pairwise"]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_recording_again_gives_the_same_file(path: Path) -> None:
    data = json.loads(path.read_text())
    assert record_playthrough(data["seed"], data["dealer"], data["players"]) == data
