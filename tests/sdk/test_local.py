"""play_local and the series loop: sequencing (loser deals, draw keeps dealer), replayable
decks, hooks, and forfeits for bots that misbehave."""

from __future__ import annotations

import itertools

import pytest

from referee.rules import Action, Game, View
from referee.series import first_dealer, game_seed, next_dealer
from sdk import Bot, GameContext, GameEndReason, GameResult, SeriesScore
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.tools import play_local


@pytest.mark.parametrize(
    ("dealer", "outcome", "expected"),
    [(0, None, 0), (1, None, 1), (0, 0, 1), (0, 1, 0), (1, 0, 1), (1, 1, 0)],
)
def test_next_dealer_loser_deals_and_draw_keeps_dealer(
    dealer: int, outcome: int | None, expected: int
) -> None:
    assert next_dealer(dealer, outcome) == expected


def test_series_follows_the_dealing_rules_and_replays() -> None:
    result = play_local(GreedyBot(), RandomBot(seed=5), games=12, seed="seq")
    assert sorted(result.games) == list(range(1, 13))
    games = [result.games[n] for n in range(1, 13)]
    assert games[0].dealer == first_dealer("seq")
    for before, after in itertools.pairwise(games):
        assert after.dealer == next_dealer(before.dealer, before.winner)
    for number, record in enumerate(games, start=1):
        deck = Game.new(seed=game_seed("seq", number)).deck
        assert deck is not None and record.deck == tuple(str(c) for c in deck)
        replayed = Game.replay(deck, record.dealer, [m.action for m in record.moves])
        assert replayed.over and replayed.outcome == record.winner
        assert replayed.reason is not None
        assert GameEndReason.from_rules(replayed.reason) is record.ending
    again = play_local(GreedyBot(), RandomBot(seed=5), games=12, seed="seq")
    assert [(g.dealer, g.moves) for g in again.games.values()] != [] and [
        (g.dealer, [m.action for m in g.moves]) for _, g in sorted(again.games.items())
    ] == [(g.dealer, [m.action for m in g.moves]) for g in games]
    score = result.score(0)
    assert score.wins + score.draws + score.losses == 12
    assert result.score(1) == SeriesScore(score.losses, score.draws, score.wins)


def test_hooks_see_context_results_and_no_deal() -> None:
    class Watcher(RandomBot):
        def __init__(self) -> None:
            super().__init__(seed=1)
            self.starts: list[GameContext] = []
            self.ends: list[GameResult] = []

        def on_game_start(self, game: GameContext) -> None:
            self.starts.append(game)

        def on_game_end(self, result: GameResult) -> None:
            self.ends.append(result)

    watcher = Watcher()
    result = play_local(GreedyBot(), watcher, games=4, seed=2)
    assert [c.seat for c in watcher.starts] == [1] * 4
    games = [result.games[n] for n in sorted(result.games)]
    assert [c.dealer for c in watcher.starts] == [g.dealer for g in games]
    assert watcher.starts[0].score == SeriesScore() and watcher.starts[0].opponent_name
    assert [e.result for e in watcher.ends] == [
        "draw" if g.winner is None else ("win" if g.winner == 1 else "loss") for g in games
    ]
    assert watcher.ends[-1].score == result.score(1)
    # The deal is never revealed (rules.md: nothing of another hand or the stock, ever).
    assert [end.deck for end in watcher.ends] == [()] * len(watcher.ends)


class Illegal(Bot):
    def act(self, view: View) -> str:
        return "take" if not view.pile else "lead 6C"


class Crashing(Bot):
    def act(self, view: View) -> str:
        raise RuntimeError("kaboom")


class Babbling(Bot):
    def act(self, view: View) -> str:
        return "cover the table"


@pytest.mark.parametrize(
    ("bot", "reason", "detail"),
    [
        (Illegal(), GameEndReason.ILLEGAL_ACTION, "illegal action"),
        (Crashing(), GameEndReason.CRASH, "RuntimeError: kaboom"),
        (Babbling(), GameEndReason.MALFORMED_REPLY, "malformed action 'cover the table'"),
    ],
)
def test_misbehaving_bots_forfeit_and_the_series_goes_on(
    bot: Bot, reason: GameEndReason, detail: str
) -> None:
    result = play_local(bot, GreedyBot(), games=3, seed=1)
    assert len(result.games) == 3
    games = list(result.games.values())
    assert all(g.ending is reason and g.winner == 1 for g in games)
    assert all(g.forfeit is not None and g.forfeit.seat == 0 for g in games)
    assert all(g.forfeit is not None and detail in g.forfeit.detail for g in games)
    assert result.forfeits == games


def test_play_local_refuses_one_object_in_both_seats() -> None:
    bot = GreedyBot()
    with pytest.raises(ValueError, match="two bot objects"):
        play_local(bot, bot)
    with pytest.raises(ValueError, match="at least one game"):
        play_local(bot, GreedyBot(), games=0)


class SlightlySlow(Bot):
    """Overruns its move limit by about 20 ms on every move."""

    def act(self, view: View) -> str:
        import time

        time.sleep(0.07)
        return str(view.legal_actions[0])


def test_small_overruns_on_every_move_lose_on_time_once_they_add_up() -> None:
    from referee.protocol.messages import TimeControl

    control = TimeControl(move_ms=50, bank_ms=0, grace_ms=30)
    # Greedy's clock is not under test: roomy, so a busy machine cannot make it the loser.
    roomy = TimeControl(move_ms=10_000, bank_ms=60_000)
    result = play_local(
        SlightlySlow(), GreedyBot(), games=1, seed=3, seat_controls=(control, roomy)
    )
    (game,) = result.games.values()
    assert game.ending is GameEndReason.TIMEOUT and game.forfeit is not None
    assert game.forfeit.seat == 0
    # The grace holds one 20 ms overrun, never two: the slow bot moved at most twice.
    assert sum(1 for m in game.moves if m.seat == 0) <= 1


class _DefaultOnly(Bot):
    name, version = "defonly", "1.0.0"

    def act(self, view: View) -> Action:
        return view.legal_actions[0]


def test_a_table_series_refuses_locally_a_bot_without_classic_at_its_handshake() -> None:
    """As over gRPC: a startup failure naming the rulesets, not a crash at its first move."""
    from sdk.tools.local import play_table_local

    result = play_table_local([_DefaultOnly(), RandomBot(seed=1), GreedyBot()], games=2, seed=1)
    for record in result.games.values():
        assert record.ending is GameEndReason.STARTUP_FAILURE and record.moves == ()
        assert record.forfeit is not None and record.forfeit.seat == 0
        assert "plays the rulesets ['default'], not 'classic'" in record.forfeit.detail


def test_a_crash_inside_the_sdk_is_located_in_the_sdk_not_the_authors_bot_py() -> None:
    """A bot listing "classic" without writing act_table: the base class raises, in
    sdk/bot.py, which the detail named "bot.py" like the author's own file."""
    from sdk.tools.local import play_table_local

    class NoTable(_DefaultOnly):
        name, rulesets = "notable", ("default", "classic")

    result = play_table_local([NoTable(), RandomBot(seed=1), GreedyBot()], games=1, seed=1)
    (record,) = result.games.values()
    assert record.ending is GameEndReason.CRASH and record.forfeit is not None
    assert " at sdk/bot.py:" in record.forfeit.detail, record.forfeit.detail
    assert "in act_table" in record.forfeit.detail
