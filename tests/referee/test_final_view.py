"""GameEnd's view says the game is over however it ended: by the rules, by a forfeit, or by a
failure of ours (a void), at the default game and at a classic table."""

from __future__ import annotations

import pytest

from referee.client import Reply
from referee.match import play_game
from referee.protocol.messages import (
    AnyView,
    Clock,
    GameEnd,
    GameEndReason,
    SeriesScore,
    TimeControl,
)
from referee.rules import ClassicView, View, shuffled_deck
from tests.referee.test_one_loop import Scripted, first


class Refusing(Scripted):
    """Plays the first legal action ``moves`` times, then answers with an illegal one."""

    def __init__(self, name: str, moves: int) -> None:
        super().__init__(name, first)
        self.moves = moves

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        if len(self.views) >= self.moves:
            self.views.append(view)
            return Reply(action="take take", elapsed=0.001, request_id=len(self.views))
        return super().decide(view, clock, game_number, timeout)


class Failing(Scripted):
    """Our side fails while this seat decides (an exception that is no bot fault)."""

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        raise RuntimeError("the referee's own failure")


def _play(players: list[Scripted], ruleset: str) -> list[GameEnd]:
    record = play_game(
        players,
        number=1,
        deck=shuffled_deck(9),
        dealer=1,
        scores=[SeriesScore()] * len(players),
        time_control=TimeControl(move_ms=10_000, bank_ms=0),
        turn_limit=1000,
        ruleset=ruleset,
    )
    ends = [p.of_type(GameEnd)[0] for p in players]
    for end in ends:
        assert end.reason is record.ending and end.winner == record.winner
    return ends


def _assert_over(view: AnyView) -> None:
    assert view.over and view.to_move is None and view.legal_actions == ()
    assert view.reason is None  # an ending under the rules only: GameEnd.reason says why


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_after_a_forfeit_every_seat_sees_the_game_over(ruleset: str) -> None:
    players = [Refusing("a", moves=2), Scripted("b", first)]
    ends = _play(players, ruleset)
    for seat, end in enumerate(ends):
        assert end.reason is GameEndReason.MALFORMED_REPLY
        view = end.view
        assert view is not None and view.seat == seat
        _assert_over(view)
        if isinstance(view, View):
            assert view.outcome == 1  # the offender's opponent
        else:
            assert isinstance(view, ClassicView)
            assert view.loser == 0 and view.leader is None and view.defender is None
        # The position is the one the game stopped in: the offender's two moves were played.
        assert len(view.history) >= 2


@pytest.mark.parametrize("ruleset", ["default", "classic"])
def test_after_a_void_every_seat_sees_the_game_over_with_no_winner(ruleset: str) -> None:
    players = [Failing("a", first), Scripted("b", first)]
    ends = _play(players, ruleset)
    for end in ends:
        assert end.reason is GameEndReason.VOID
        view = end.view
        assert view is not None
        _assert_over(view)
        assert (view.outcome if isinstance(view, View) else view.loser) is None


def test_a_game_ended_by_the_rules_keeps_the_engines_final_view() -> None:
    players = [Scripted("a", first), Scripted("b", first)]
    ends = _play(players, "default")
    for end in ends:
        view = end.view
        assert isinstance(view, View) and view.over and view.reason is not None
        assert view.to_move is None and view.legal_actions == ()
