"""Game lists name the loser of a table game (they said "no result")."""

from __future__ import annotations

from datetime import UTC, datetime

from leaderboard.web.pages import result_text
from leaderboard.web.queries import GameRow

LABELS = {1: ("alpha", "1"), 2: ("bravo", "1"), 3: ("charlie", "1")}


def _row(**kw: object) -> GameRow:
    fields: dict[str, object] = {
        "game_id": 7, "series_id": 1, "tournament_id": 1, "number": 1, "attempt": 1,
        "seats": (1, 2, 3), "dealer": 0, "result": "table",
        "end_reason": "last holder", "forfeit_seat": None, "voided": False, "moves": 30,
        "finished_at": datetime(2026, 12, 1, tzinfo=UTC), "ruleset": "classic",
    }  # fmt: skip
    return GameRow(**(fields | kw))  # type: ignore[arg-type]


def test_a_table_game_in_a_list_names_its_loser() -> None:
    assert result_text(_row(loser_seat=2), LABELS) == "charlie 1 lost"


def test_a_table_game_at_the_turn_limit_names_who_lost_pairwise() -> None:
    text = result_text(_row(loser_seat=None, pairwise=((0, 1), (0, 2))), LABELS)
    assert text == "turn limit: bravo 1 lost, charlie 1 lost"


def test_a_two_player_row_is_unchanged() -> None:
    row = _row(ruleset="default", seats=(1, 2), result="seat1")
    assert result_text(row, LABELS) == "bravo 1 won"
