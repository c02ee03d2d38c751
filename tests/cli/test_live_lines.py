"""The line ``kryt tournament run -v`` prints for a game names its result once."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from arena.db import open_database
from kryt.commands.tournament import LiveLines
from kryt.texts import result_by
from referee.protocol.messages import GameEndReason
from tests.db.helpers import build_world, game


def test_a_draw_by_the_final_answer_is_named_once(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'k.db'}")
    world = build_world(db)
    out = io.StringIO()
    lines = LiveLines(world.tournament_id, db, verbose=True, console=Console(file=out, width=300))
    record, _ = game(
        world, 1, winner=None, ending=GameEndReason.DRAW_BY_FINAL_ANSWER, final_cover="7H"
    )
    lines.game(world.series_id, 1, record)
    won, _ = game(world, 2, winner=1)
    lines.game(world.series_id, 2, won)
    shown = out.getvalue().splitlines()
    assert ": draw by final answer, 3 moves" in shown[0], shown
    assert "draw by draw" not in out.getvalue()
    assert ": bravo 1.0.0 wins by out, 3 moves" in shown[1], shown


def test_result_by() -> None:
    assert result_by("draw", "draw by final answer") == "draw by final answer"
    assert result_by("draw", "turn limit") == "draw by turn limit"
    assert result_by("greedy wins", "out") == "greedy wins by out"
