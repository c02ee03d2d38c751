"""A table game that several bots could not start: each of them lost (rules-classic.md, as
the record's pairwise results say), so every surface that words a game's result names every
one of them, the forfeit's seat first, not only the first."""

from __future__ import annotations

from datetime import UTC, datetime

from arena.db.models import Game
from kryt.commands.games import _result_cell
from kryt.commands.replay import _result_text
from leaderboard.web.pages import result_text
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord
from referee.rules import ClassicGame

# Seats 1 and 3 could not start: 0 and 2 beat each of them; seat 1 plays first of the two.
PAIRWISE = ((0, 1), (0, 3), (2, 1), (2, 3))
LABELS = {11: ("a", "1"), 12: ("b", "1"), 13: ("c", "1"), 14: ("d", "1")}


def _record(loser: int, pairwise: tuple[tuple[int, int], ...]) -> GameRecord:
    deck = tuple(str(c) for c in ClassicGame.new(seed=1, players=4).deck or ())
    return GameRecord(
        deck=deck, dealer=0, turn_limit=1000, moves=(), seats=4, ruleset="classic",
        players=("a", "b", "c", "d"), winner=None, ending=GameEndReason.STARTUP_FAILURE,
        forfeit=Forfeit(loser, GameEndReason.STARTUP_FAILURE, "", "gone"), loser=loser,
        pairwise=pairwise,
    )  # fmt: skip


def _row(loser: int, pairwise: tuple[tuple[int, int], ...]) -> Game:
    now = datetime.now(UTC)
    return Game(
        series_id=1, number=1, dealer=0, first_mover=1, turn_limit=1000, packed=b"",
        end_reason="startup failure", referee_version="test", seat0_submission_id=11,
        seat1_submission_id=12, started_at=now, finished_at=now, ruleset="classic",
        players=4, voided=False, result="table", loser_seat=loser,
        pairwise=[list(p) for p in pairwise], seats=[11, 12, 13, 14],
    )  # fmt: skip


def test_the_web_names_every_bot_that_could_not_start() -> None:
    assert result_text(_row(1, PAIRWISE), LABELS) == "b 1 lost, d 1 lost"


def test_the_game_list_names_every_seat_that_could_not_start() -> None:
    assert _result_cell(_row(1, PAIRWISE)) == "s1,s3 lost"


def test_replay_names_every_bot_that_could_not_start() -> None:
    assert _result_text(_record(1, PAIRWISE), "table", ("a", "b", "c", "d")) == ("b loses; d loses")


def test_a_single_loser_is_still_named_alone() -> None:
    alone = ((0, 1), (2, 1), (3, 1))
    assert result_text(_row(1, alone), LABELS) == "b 1 lost"
    assert _result_cell(_row(1, alone)) == "s1 lost"
    assert _result_text(_record(1, alone), "table", ("a", "b", "c", "d")) == "b loses"
