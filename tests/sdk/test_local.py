"""play_local and the series loop: sequencing (loser deals, draw keeps dealer), replayable
decks, hooks, and forfeits for bots that misbehave."""

from __future__ import annotations

import itertools

import pytest

from referee.rules import Game, View
from sdk import Bot, GameContext, GameEndReason, GameResult, SeriesScore, next_dealer, play_local
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.local import first_dealer, game_seed


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
    games = result.games
    assert [g.game_number for g in games] == list(range(1, 13))
    assert games[0].dealer == first_dealer("seq")
    for before, after in itertools.pairwise(games):
        assert after.dealer == next_dealer(before.dealer, before.winner)
    for record in games:
        deck = Game.new(seed=game_seed("seq", record.game_number)).deck
        assert deck is not None
        replayed = Game.replay(deck, record.dealer, record.actions)
        assert replayed.over and replayed.outcome == record.winner
        assert GameEndReason.from_rules(replayed.reason) is record.reason  # type: ignore[arg-type]
    again = play_local(GreedyBot(), RandomBot(seed=5), games=12, seed="seq")
    assert [(g.dealer, g.actions) for g in again.games] == [(g.dealer, g.actions) for g in games]
    score = result.score(0)
    assert score.wins + score.draws + score.losses == 12
    assert result.score(1) == SeriesScore(score.losses, score.draws, score.wins)


def test_hooks_see_context_results_and_the_revealed_deal() -> None:
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
    assert [c.dealer for c in watcher.starts] == [g.dealer for g in result.games]
    assert watcher.starts[0].score == SeriesScore() and watcher.starts[0].opponent_name
    assert [e.result for e in watcher.ends] == [
        "draw" if g.winner is None else ("win" if g.winner == 1 else "loss") for g in result.games
    ]
    assert watcher.ends[-1].score == result.score(1)
    for end, record in zip(watcher.ends, result.games, strict=True):
        assert end.deck == Game.new(seed=game_seed(2, record.game_number)).deck


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
    assert all(g.reason is reason and g.winner == 1 for g in result.games)
    assert all(detail in g.detail for g in result.games)
    assert result.forfeits == result.games


def test_play_local_refuses_one_object_in_both_seats() -> None:
    bot = GreedyBot()
    with pytest.raises(ValueError, match="two bot objects"):
        play_local(bot, bot)
    with pytest.raises(ValueError, match="at least one game"):
        play_local(bot, GreedyBot(), games=0)
