"""The classic table beyond the rules core: wire form, the one record, the referee's table
series (forfeits, voids, dealers), the round robin of seatings, and the example bots."""

from __future__ import annotations

import asyncio
import math
import random
from itertools import combinations, pairwise

import pytest

from arena.db.table_results import table_pair_scores
from arena.tournament.seatings import table_seatings
from referee.protocol.messages import (
    Clock,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    Handshake,
    HandshakeReply,
    SeriesScore,
    TimeControl,
)
from referee.protocol.wire import (
    MalformedMessageError,
    decode_bot_message,
    decode_referee_message,
    encode_bot_message,
    encode_referee_message,
    table_view_from_pb,
    table_view_to_pb,
)
from referee.record import Forfeit, GameRecord
from referee.replay import verify
from referee.rules import ClassicAction, ClassicGame, ClassicView, View
from referee.series import BotStartError, SeriesConfig
from referee.table import first_table_dealer, run_table_series_async
from sdk import Bot
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.mc.bot import MonteCarloBot
from sdk.examples.random.bot import RandomBot
from sdk.sim import sample_table_game
from sdk.tools.local import play_table_local
from sdk.tracker import TableTracker


def views_of_a_game(players: int, seed: int) -> list[ClassicView]:
    game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
    rng = random.Random(seed)
    views = []
    while not game.over:
        views += [game.view(s) for s in range(players)]
        game.play(rng.choice(game.legal_actions()))
    return views + [game.view(s) for s in range(players)]


@pytest.mark.parametrize("players", [2, 3, 4])
def test_table_views_survive_the_wire_and_the_tracker_and_sampler_accept_them(
    players: int,
) -> None:
    rng = random.Random(players)
    for view in views_of_a_game(players, 7 + players):
        assert table_view_from_pb(table_view_to_pb(view)) == view
        request = DecisionRequest(5, 3, view, Clock(100, 900))
        assert decode_referee_message(encode_referee_message(request)) == request
        tracker = TableTracker.from_view(view)
        assert len(tracker.unseen) == sum(tracker.hidden) + tracker.stock_hidden_count
        if not view.over:
            sampled = sample_table_game(view, rng)
            assert sampled.view(view.seat) == view  # the sample is consistent with the view


def test_handshake_and_game_end_carry_the_table() -> None:
    hello = Handshake(1, "r", 4, "a, b", TimeControl(), "classic", 3, ("a", "b", "c"), 2)
    assert decode_referee_message(encode_referee_message(hello)) == hello
    end = GameEnd(2, None, GameEndReason.LAST_HOLDER, "", None, (), SeriesScore(1, 0, 1), 1)
    assert decode_referee_message(encode_referee_message(end)) == end
    reply = HandshakeReply(1, "x", "1", "sdk", ("default", "classic"))
    assert decode_bot_message(encode_bot_message(reply)) == reply
    assert reply.plays("classic")
    # A version-1 bot that names no rulesets plays the default game only.
    old = HandshakeReply(1, "x", "1", "sdk")
    assert old.plays("default") and not old.plays("classic")
    with pytest.raises(MalformedMessageError, match="table size 5"):
        bad = Handshake(1, "r", 4, "", TimeControl(), "classic", 5)
        decode_referee_message(encode_referee_message(bad))


def test_the_record_refuses_inconsistent_table_results() -> None:
    deck = tuple(str(c) for c in ClassicGame.new(seed=1, players=3).deck or ())
    base = dict(deck=deck, dealer=0, turn_limit=1000, moves=(), players=("a", "b", "c"),
                ruleset="classic", seats=3)  # fmt: skip
    forfeit = Forfeit(1, GameEndReason.CRASH, "", "gone")
    ok = GameRecord(**base, ending=GameEndReason.CRASH, winner=None, forfeit=forfeit,  # type: ignore[arg-type]
                    loser=1, pairwise=((0, 1), (2, 1)))  # fmt: skip
    assert ok.outcome(1) == "loss" and ok.outcome(0) == "win" and ok.score(2) == 1.0
    with pytest.raises(ValueError, match="pairwise"):
        GameRecord(**base, ending=GameEndReason.CRASH, winner=None, forfeit=forfeit,  # type: ignore[arg-type]
                   loser=1, pairwise=((0, 1),))  # fmt: skip
    with pytest.raises(ValueError, match="forfeited"):
        GameRecord(**base, ending=GameEndReason.CRASH, winner=None, forfeit=forfeit,  # type: ignore[arg-type]
                   loser=2, pairwise=((0, 2), (1, 2)))  # fmt: skip
    with pytest.raises(ValueError, match="classic table only"):
        GameRecord(deck=deck, dealer=0, turn_limit=1, moves=(), ending=GameEndReason.ALL_OUT,
                   winner=None)  # fmt: skip


class Offender(RandomBot):
    """Plays randomly, but answers with an illegal lead in game ``bad_game``."""

    def __init__(self, bad_game: int) -> None:
        super().__init__(seed=1)
        self.bad_game = bad_game

    def act_table(self, view: ClassicView) -> ClassicAction:
        if self.context is not None and self.context.game_number == self.bad_game:
            return ClassicAction.lead("6C", "6D", "6H", "6S")  # rarely all in hand: illegal
        return super().act_table(view)


def test_a_forfeit_loses_to_everyone_and_the_offender_deals_next() -> None:
    result = play_table_local([RandomBot(1), Offender(bad_game=2), RandomBot(3)], 4, seed=9)
    games = result.games
    assert [g.ending.is_forfeit for g in games.values()] == [False, True, False, False]
    forfeited = games[2]
    assert forfeited.forfeit is not None and forfeited.forfeit.seat == 1
    assert forfeited.ending in (GameEndReason.MALFORMED_REPLY, GameEndReason.ILLEGAL_ACTION)
    assert forfeited.loser == 1 and sorted(forfeited.pairwise) == [(0, 1), (2, 1)]
    assert games[3].dealer == 1  # the offender deals the next game
    for a, b in pairwise(games.values()):  # the loser deals; without one the dealer stays
        assert b.dealer == (a.dealer if a.loser is None else a.loser)
    assert games[1].dealer == first_table_dealer(9, 3)
    assert all(verify(g).ok for g in games.values())
    assert result.score(1).losses >= 1


def test_a_bot_of_the_default_game_only_cannot_sit_at_a_table() -> None:
    class DefaultOnly(Bot):
        def act(self, view: View) -> str:
            return str(view.legal_actions[0])

    result = play_table_local([DefaultOnly(), RandomBot(1), RandomBot(2)], 2, seed=1)
    # Its hook is missing: it crashes each game it must move in and forfeits it.
    assert all(g.forfeit is not None and g.forfeit.seat == 0 for g in result.games.values())


@pytest.mark.parametrize(
    ("entrants", "size", "count"), [(3, 3, 2), (4, 4, 6), (4, 3, 8), (5, 2, 10)]
)
def test_every_set_plays_every_clockwise_order_once(entrants: int, size: int, count: int) -> None:
    seatings = table_seatings(list(range(entrants)), size)
    assert len(seatings) == count == math.comb(entrants, size) * math.factorial(size - 1)
    cycles = {min(s[i:] + s[:i] for i in range(size)) for s in seatings}
    assert len(cycles) == len(seatings)  # no order is a rotation of another


def test_the_example_bots_play_both_rulesets() -> None:
    for bot in (RandomBot(1), GreedyBot(), MonteCarloBot(playouts=2, seed=1)):
        assert set(bot.rulesets) == {"default", "classic"}
    result = play_table_local([RandomBot(1), GreedyBot(), MonteCarloBot(playouts=2, seed=1),
                               RandomBot(2)], 3, seed=4)  # fmt: skip
    assert len(result.games) == 3 and not result.forfeits


@pytest.mark.slow
def test_monte_carlo_beats_random_at_a_three_player_table() -> None:
    """Over 30 games with the seats rotated, MC loses far less often than chance (1/3):
    a one-sided binomial test at p < 0.001."""
    lost = 0
    games = 0
    for rotation in range(3):
        bots: list[Bot] = [MonteCarloBot(playouts=6, seed=rotation), RandomBot(rotation),
                           RandomBot(rotation + 10)]  # fmt: skip
        seated = bots[rotation:] + bots[:rotation]
        mc = seated.index(bots[0])
        result = play_table_local(seated, 10, seed=f"mc-{rotation}")
        games += len(result.games)
        lost += sum(1 for g in result.games.values() if g.loser == mc)
    p_value = sum(math.comb(games, k) * (1 / 3) ** k * (2 / 3) ** (games - k)
                  for k in range(lost + 1))  # fmt: skip
    assert p_value < 0.001, (lost, games, p_value)


class _NeverStarts:
    """A seat whose bot cannot start, every time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.starts = 0

    async def player(self, handshake: object) -> object:
        self.starts += 1
        raise BotStartError(f"{self.name} exited at once")

    async def diagnose(self) -> None:
        return None


class _Starts(_NeverStarts):
    """A seat whose bot starts (the game is never played: others at the table cannot)."""

    async def player(self, handshake: object) -> object:
        self.starts += 1
        return object()


@pytest.mark.parametrize(("failing", "seats"), [((0, 2), 4), ((1, 2, 3), 4), ((0, 1), 3)])
def test_every_bot_that_cannot_start_loses_to_every_bot_that_did(
    failing: tuple[int, ...], seats: int
) -> None:
    """Several seats that cannot start (after every attempt) all forfeit: the ones that
    started beat each of them, they draw among themselves; the first of them in the order
    of play is the record's loser and forfeit, and deals the next game."""
    slots = [(_NeverStarts if s in failing else _Starts)(f"bot{s}") for s in range(seats)]
    config = SeriesConfig(
        games=3, seed=5, ruleset="classic", players=seats, time_control=TimeControl(1000, 10_000)
    )
    result = asyncio.run(run_table_series_async(config, slots))  # type: ignore[arg-type]
    started = [s for s in range(seats) if s not in failing]
    for number, record in result.games.items():
        order = sorted(failing, key=lambda s: (s - record.dealer - 1) % seats)
        assert record.forfeit is not None and record.loser == order[0], number
        assert record.forfeit.seat == order[0]
        assert record.ending is GameEndReason.STARTUP_FAILURE
        assert sorted(record.pairwise) == sorted((w, x) for x in failing for w in started)
        assert all(record.outcome(s) == "loss" for s in failing)
        assert all(record.outcome(s) == "win" for s in started)
        scores = {
            (a, b): s for a, b, s in table_pair_scores(record.dealer, range(seats), record.pairwise)
        }
        for a, b in combinations(failing, 2):
            assert scores.get((a, b), scores.get((b, a))) == 0.5  # a draw between offenders
        for other in order[1:]:
            assert f"bot{other} (seat {other}) also: bot{other} exited at once" in (
                record.forfeit.detail
            )
        if number + 1 in result.games:
            assert result.games[number + 1].dealer == record.loser
    for seat in failing:
        assert result.score(seat).losses == 3 and result.score(seat).wins == 0
    for seat in started:
        assert result.score(seat).wins == 3


def test_the_record_accepts_several_startup_forfeits_only_as_the_rules_give_them() -> None:
    deck = tuple(str(c) for c in ClassicGame.new(seed=1, players=4).deck or ())
    base: dict[str, object] = dict(deck=deck, dealer=0, turn_limit=1000, moves=(), seats=4,
                ruleset="classic", players=("a", "b", "c", "d"), winner=None,
                ending=GameEndReason.STARTUP_FAILURE)  # fmt: skip
    first = Forfeit(1, GameEndReason.STARTUP_FAILURE, "", "gone")
    ok = GameRecord(**base, forfeit=first, loser=1, pairwise=((0, 1), (0, 3), (2, 1), (2, 3)))  # type: ignore[arg-type]
    assert ok.outcome(3) == "loss" and ok.outcome(2) == "win"
    alone = GameRecord(**base, forfeit=first, loser=1, pairwise=((0, 1), (0, 2), (0, 3)))  # type: ignore[arg-type]
    assert alone.outcome(0) == "win"  # only seat 0 started
    for loser, pairs in [
        (3, ((0, 1), (0, 3), (2, 1), (2, 3))),  # seat 3 is not the first to play of the two
        (1, ((0, 1), (2, 1), (2, 3))),  # seat 0 does not beat seat 3
        (1, ((0, 1), (1, 3), (2, 1), (2, 3), (0, 3))),  # an offender beats another
        (1, ((0, 2), (1, 2), (3, 2))),  # the loser is not among those who lost
    ]:
        forfeit = Forfeit(loser, GameEndReason.STARTUP_FAILURE, "", "gone")
        with pytest.raises(ValueError, match="pairwise"):
            GameRecord(**base, forfeit=forfeit, loser=loser, pairwise=pairs)  # type: ignore[arg-type]
