"""One game loop for every table: :func:`referee.match.play_game` plays the two-player default
game and the classic table of 2-4 seats, with the same clock, forfeits and records."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from referee.client import Reply
from referee.match import play_game
from referee.protocol.messages import (
    AnyAction,
    AnyView,
    Clock,
    GameEnd,
    GameEndReason,
    GameStart,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    SeriesScore,
    TimeControl,
)
from referee.record import GameRecord
from referee.replay import verify
from referee.rules import Action, ClassicView, shuffled_deck
from referee.table import play_table_game

T = TypeVar("T")

Choose = Callable[[AnyView], str | AnyAction]


class Scripted:
    """An in-process player that keeps every message it gets and replies with ``choose``."""

    def __init__(self, name: str, choose: Choose) -> None:
        self.name = name
        self.choose = choose
        self.messages: list[RefereeMessage] = []
        self.views: list[AnyView] = []

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        raise AssertionError("a game does not handshake")  # pragma: no cover

    def send(self, message: RefereeMessage) -> None:
        self.messages.append(message)

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        self.views.append(view)
        return Reply(action=self.choose(view), elapsed=0.001, request_id=len(self.views))

    def of_type(self, kind: type[T]) -> list[T]:
        return [m for m in self.messages if isinstance(m, kind)]


def first(view: AnyView) -> str | AnyAction:
    return view.legal_actions[0]


def play(players: list[Scripted], ruleset: str, seed: int = 5) -> GameRecord:
    return play_game(
        players,
        number=1,
        deck=shuffled_deck(seed),
        dealer=1,
        scores=[SeriesScore()] * len(players),
        time_control=TimeControl(move_ms=10_000, bank_ms=0),
        turn_limit=1000,
        ruleset=ruleset,
    )


def test_the_default_game_is_a_two_seat_table_with_the_version_1_messages() -> None:
    players = [Scripted("a", first), Scripted("b", first)]
    record = play(players, "default")
    assert record.ruleset == "default" and record.seats == 2 and verify(record).ok
    assert len(record.moves) > 0 and record.players == ("a", "b")
    for seat, player in enumerate(players):
        (start,) = player.of_type(GameStart)
        # A version-1 bot of the default game sees no table fields.
        assert (start.seat, start.opponent_name) == (seat, "ba"[seat])
        assert (start.ruleset, start.players, start.seat_names) == ("default", 2, ())
        (end,) = player.of_type(GameEnd)
        assert end.winner == record.winner and end.loser is None
        assert all(not isinstance(v, ClassicView) for v in player.views)


@pytest.mark.parametrize("seats", [2, 3, 4])
def test_the_same_loop_plays_a_classic_table(seats: int) -> None:
    names = "abcd"[:seats]
    players = [Scripted(n, first) for n in names]
    record = play(players, "classic", seed=seats)
    assert record.ruleset == "classic" and record.seats == seats and verify(record).ok
    assert record.players == tuple(names)
    for seat, player in enumerate(players):
        (start,) = player.of_type(GameStart)
        assert (start.ruleset, start.players, start.seat_names) == ("classic", seats, tuple(names))
        assert start.opponent_name == ", ".join(n for n in names if n != player.name)
        (end,) = player.of_type(GameEnd)
        assert end.loser == record.loser
        assert end.score == SeriesScore(
            wins=record.outcome(seat) == "win",
            draws=record.outcome(seat) == "draw",
            losses=record.outcome(seat) == "loss",
        )
        assert all(isinstance(v, ClassicView) and v.seat == seat for v in player.views)


def test_play_table_game_is_the_one_loop_with_the_classic_ruleset() -> None:
    deck = shuffled_deck(3)
    one = [Scripted(n, first) for n in "abc"]
    two = [Scripted(n, first) for n in "abc"]
    common = {
        "number": 1,
        "deck": deck,
        "dealer": 0,
        "scores": [SeriesScore()] * 3,
        "time_control": TimeControl(move_ms=10_000, bank_ms=0),
        "turn_limit": 1000,
    }
    a = play_table_game(one, **common)  # type: ignore[arg-type]
    b = play_game(two, ruleset="classic", **common)  # type: ignore[arg-type]
    assert (a.moves, a.loser, a.pairwise, a.ending) == (b.moves, b.loser, b.pairwise, b.ending)


def test_an_action_of_the_other_ruleset_is_judged_by_its_text_at_a_table() -> None:
    """A default-game action sent to a table goes to the table's gate as its text, which is
    no table action: a malformed reply, forfeited by its sender."""
    foreign = Action.parse("cover 9H 6C")
    players = [Scripted("a", first), Scripted("b", lambda view: foreign), Scripted("c", first)]
    record = play(players, "classic", seed=11)
    assert record.forfeit is not None and record.forfeit.seat == 1, record
    assert record.forfeit.reason is GameEndReason.MALFORMED_REPLY
    assert record.forfeit.offending_input == "cover 9H 6C"
    assert record.loser == 1 and len(players[1].views) == 1


def test_an_illegal_move_at_a_table_makes_the_offender_lose_to_everyone() -> None:
    def illegal(view: AnyView) -> str | AnyAction:
        return "lead AS AH AD AC AS"

    players = [Scripted("a", first), Scripted("b", illegal), Scripted("c", first)]
    record = play(players, "classic", seed=2)
    assert record.forfeit is not None and record.forfeit.seat == 1
    assert record.loser == 1 and sorted(record.pairwise) == [(0, 1), (2, 1)]
    assert record.forfeit.offending_input == "lead AS AH AD AC AS"
    assert all(p.of_type(GameEnd)[0].loser == 1 for p in players)
