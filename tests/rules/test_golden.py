"""Golden playthroughs: committed step-by-step records of seeded games must not drift.

Regenerate with ``python scripts/gen_golden.py`` only for an intended rules change, and review
the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.rules import Game
from referee.rules.playthrough import record_playthrough

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))


def test_golden_files_exist_and_cover_a_draw() -> None:
    assert len(GOLDEN) >= 5
    reasons = {json.loads(p.read_text())["reason"] for p in GOLDEN}
    assert {"out", "draw by final answer"} <= reasons


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_replaying_the_golden_actions_gives_the_recorded_states(path: Path) -> None:
    data = json.loads(path.read_text())
    game = Game.from_deck(data["deck"].split(), data["dealer"])
    assert game.trump.letter == data["trump"]
    for number, step in enumerate(data["steps"]):
        assert game.to_move == step["seat"], number
        assert len(game.legal_actions()) == step["legal"], number
        game.play(step["action"])
        assert [" ".join(map(str, h)) for h in game.hands] == step["hands"], number
        assert " ".join(map(str, game.pile)) == step["pile"], number
        assert len(game.stock) == step["stock"], number
        assert (str(game.face_up) if game.face_up else None) == step["face_up"], number
    assert game.over
    assert game.outcome == data["outcome"]
    assert (game.reason.value if game.reason else None) == data["reason"]
    assert (str(game.final_cover) if game.final_cover else None) == data["final_cover"]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_recording_again_gives_the_same_file(path: Path) -> None:
    data = json.loads(path.read_text())
    assert record_playthrough(data["seed"], data["dealer"]) == data
