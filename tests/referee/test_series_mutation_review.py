"""Mutation review of the series and the game clock: behaviour the law fixes that no other
test pinned down (each test kills a mutant that survived the rest of the suite).

- A series resumed with a gap in its recorded games (game 2 recorded, game 1 not) deals
  game 3 from game 2's result: after a draw the same dealer deals again (rules.md, Series),
  and that dealer is the loser of game 1, not game 1's dealer.
- ``SeriesResult.add`` counts a game once: the same game added again (a caller that adds
  the games it resumes from, then the same ones again) does not count twice, and a game
  added again with another result replaces the old result in the score.
- A move that spends exactly its move time, its bank and its grace is in time: the clock
  never lets a bot use *more* than that (protocol.md, time control), and a reply is a
  forfeit only when it comes *after* the limit (rules.md, Forfeits).
"""

from __future__ import annotations

import pytest

from referee.protocol.messages import GameEndReason, SeriesScore, TimeControl
from referee.record import GameRecord
from referee.rules import View
from referee.series import SeriesConfig, SeriesResult, first_dealer, run_series, series_deck
from referee.timecontrol import GameClock
from sdk.bot import Bot, GameContext
from sdk.tools.local import LocalPlayer, PlayerSlot

FAST = TimeControl(move_ms=5000, bank_ms=5000)


class Scripted(Bot):
    """Plays the first legal action, or an illegal one (a forfeit) in the listed games."""

    name = "scripted"
    version = "1"

    def __init__(self, lose_in: frozenset[int]) -> None:
        self.lose_in = lose_in
        self.number = 0

    def on_game_start(self, game: GameContext) -> None:
        self.number = game.game_number

    def act(self, view: View) -> str:
        if self.number in self.lose_in:
            return "lead 6C" if view.pile else "take"  # illegal in either case
        return str(view.legal_actions[0])


def _slot(name: str, lose_in: frozenset[int] = frozenset()) -> PlayerSlot:
    return PlayerSlot(lambda: LocalPlayer(Scripted(lose_in)), name)


def test_a_resumed_series_with_a_gap_deals_after_a_recorded_draw_as_the_rules_say() -> None:
    # Kills the mutant that deals game 3 from game 1 (the last game this run played) and
    # skips the recorded game 2 in between.
    seed = next(s for s in range(200) if first_dealer(s) == 1)
    config = SeriesConfig(games=3, seed=seed, time_control=FAST)
    # Game 1: seat 1 deals, so seat 0 moves first, and seat 0 forfeits at once: seat 1 wins,
    # seat 0 loses and therefore deals game 2.
    # Game 2 is already recorded (a resumption) as a draw (a double forfeit counts as a draw)
    # dealt by seat 0; after a draw the same dealer deals again, so seat 0 deals game 3.
    game_two = GameRecord(
        deck=tuple(str(c) for c in series_deck(config, 2)),
        dealer=0,
        turn_limit=config.turn_limit,
        moves=(),
        ending=GameEndReason.DOUBLE_FORFEIT,
        winner=None,
        players=("a", "b"),
        double_forfeit_detail="neither bot could start",
    )
    result = run_series(config, (_slot("a", frozenset({1})), _slot("b")), done={2: game_two})
    assert result.games[1].dealer == 1
    assert result.games[1].winner == 1
    assert result.games[1].ending.is_forfeit
    assert result.games[2] is game_two
    assert result.games[3].dealer == 0


def test_a_move_spending_exactly_move_time_bank_and_grace_is_in_time() -> None:
    # Kills the mutant that calls a move late when it uses its whole allowance exactly
    # (``>=`` for ``>``). All values are exact binary fractions, so no rounding is involved.
    control = TimeControl(move_ms=500, bank_ms=1000, grace_ms=250)
    clock = GameClock(control)
    assert clock.allowance(0) == 1.75
    assert clock.charge(0, 1.75) is True
    # Everything is spent: the bank and the grace are empty, only the move time is left.
    assert clock.banks[0] == 0.0
    assert clock.graces[0] == 0.0
    assert clock.allowance(0) == 0.5
    # The other seat's clock is untouched.
    assert clock.allowance(1) == 1.75


@pytest.mark.parametrize(("elapsed", "in_time"), [(1.75, True), (1.75 + 2**-20, False)])
def test_the_limit_is_the_allowance_itself(elapsed: float, in_time: bool) -> None:
    # Kills the same ``>=`` mutant from the other side, and pins that a hair more is late.
    clock = GameClock(TimeControl(move_ms=500, bank_ms=1000, grace_ms=250))
    assert clock.charge(1, elapsed) is in_time


def _decided(config: SeriesConfig, winner: int | None) -> GameRecord:
    """A record of game 1 of ``config`` won by ``winner`` (``None``: a turn-limit draw)."""
    return GameRecord(
        deck=tuple(str(c) for c in series_deck(config, 1)),
        dealer=0,
        turn_limit=config.turn_limit,
        moves=(),
        ending=GameEndReason.TURN_LIMIT if winner is None else GameEndReason.OUT,
        winner=winner,
    )


def test_the_same_game_added_twice_counts_once() -> None:
    # Kills the mutant that counts a win again when a game number is added a second time.
    config = SeriesConfig(games=2, seed=1)
    result = SeriesResult(config, ("a", "b"))
    won = _decided(config, 0)
    result.add(1, won)
    result.add(1, won)
    assert result.score(0) == SeriesScore(wins=1, draws=0, losses=0)
    assert result.score(1) == SeriesScore(wins=0, draws=0, losses=1)
    assert result.points(0) == 1.0


def test_a_game_added_again_with_another_result_replaces_it_in_the_score() -> None:
    config = SeriesConfig(games=2, seed=1)
    result = SeriesResult(config, ("a", "b"))
    result.add(1, _decided(config, 0))
    result.add(1, _decided(config, 1))
    assert result.winners == {1: 1}
    assert result.score(0) == SeriesScore(wins=0, draws=0, losses=1)
    assert result.score(1) == SeriesScore(wins=1, draws=0, losses=0)
    result.add(1, _decided(config, 0), keep=False)
    assert result.score(0) == SeriesScore(wins=1, draws=0, losses=0)
    assert result.games == {}, "a record replaced by one not kept is not kept either"
