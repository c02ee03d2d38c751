"""The Monte Carlo example at a classic table: its fast simulator plays the table's rules
and greedy's choices exactly as the engine does, and the bot beats both random and greedy
at a 3-player table by a significant margin (fixed seeds, so the figures are reproducible).
"""

from __future__ import annotations

import math
import random
import time

import pytest

from referee.protocol.messages import TimeControl
from referee.rules import Card, ClassicAction, ClassicGame, Suit
from sdk import Bot
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.mc.bot import MonteCarloBot
from sdk.examples.mc.fast import TableState
from sdk.examples.random.bot import RandomBot
from sdk.strategy import greedy_table_action
from sdk.tools.local import play_table_local

# Time is not under test: a loaded machine must not turn slow moves into forfeits.
GENEROUS = TimeControl(move_ms=60_000, bank_ms=0)


def positions(count: int) -> list[ClassicGame]:
    """Running games of 2, 3 and 4 seats after a random number of random moves."""
    found = []
    for seed in range(count):
        players = 2 + seed % 3
        game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
        rng = random.Random(seed)
        for _ in range(rng.randrange(40)):
            if game.over:
                break
            game.play(rng.choice(game.legal_actions()))
        if not game.over:
            found.append(game)
    return found


def same_state(state: TableState, game: ClassicGame) -> bool:
    if game.over:
        return state.over and state.loser == game.loser and state.out == list(game.out)
    return not state.over and state == TableState.of_game(game)


def test_the_fast_simulator_plays_every_legal_action_as_the_engine_does() -> None:
    checked = 0
    for game in positions(120):
        for action in game.legal_actions():
            state = TableState.of_game(game)
            state.play(action)
            after = game.copy()
            after.play(action)
            assert same_state(state, after), (game, action, state)
            checked += 1
    assert checked > 300


def test_a_fast_greedy_playout_ends_as_the_engine_under_greedy_play() -> None:
    games = positions(300)
    assert len(games) > 200
    for game in games:
        state = TableState.of_game(game)
        engine = game.copy()
        while not engine.over:
            state.greedy_step()
            engine.play(greedy_table_action(engine.legal_actions(), engine.trump))
            assert same_state(state, engine), (game, engine.history[-1], state)


def loss_p_value(lost: int, decided: int) -> float:
    """One-sided binomial test: the chance of ``lost`` or fewer losses in ``decided`` games
    if the bot were only as good as its two opponents (each seat loses 1/3 of the games)."""
    return sum(
        math.comb(decided, k) * (1 / 3) ** k * (2 / 3) ** (decided - k) for k in range(lost + 1)
    )


MC_PLAYOUTS = 20
"""Samples per candidate move (six times as many in the endgame): fixed, so that the games,
and this test, are reproducible."""


def mc_losses(opponent: type[Bot], games: int) -> tuple[int, int]:
    """MC against two ``opponent`` bots at a 3-player table, one game per deal: deal ``i``
    (its deck and its dealer drawn from its seed) puts MC in seat ``i mod 3``, so MC sits
    in every seat equally often and meets every dealer at random. (MC's losses, decided
    games): under the null hypothesis MC loses a third of the decided games."""
    lost = decided = 0
    for i in range(games):
        seat = i % 3
        bots: list[Bot] = [opponent(), opponent(), opponent()]
        if opponent is RandomBot:
            bots = [RandomBot(f"{i}-{s}") for s in range(3)]
        bots[seat] = MonteCarloBot(playouts=MC_PLAYOUTS, seed=i)
        result = play_table_local(bots, 1, seed=f"mc-table-{i}", time_control=GENEROUS)
        assert not result.forfeits, str(result)
        (record,) = result.games.values()
        if record.loser is not None:
            decided += 1
            lost += record.loser == seat
    return lost, decided


@pytest.mark.slow
@pytest.mark.timeout(600)  # the bound below is what is tested; a busy machine may be slower
@pytest.mark.parametrize(("opponent", "games"), [(GreedyBot, 60), (RandomBot, 18)])
def test_monte_carlo_beats_random_and_greedy_at_a_three_player_table(
    opponent: type[Bot], games: int
) -> None:
    """Under the null hypothesis (MC no better than the two others) MC loses a third of
    the decided games; it must lose significantly fewer (one-sided binomial, p < 0.01)."""
    started = time.monotonic()
    lost, decided = mc_losses(opponent, games)
    p_value = loss_p_value(lost, decided)
    figures = (
        f"MC lost {lost} of {decided} decided games ({games} played) against two "
        f"{opponent.__name__}s: {lost / max(decided, 1):.0%} against 33% by chance, "
        f"p = {p_value:.2g}, in {time.monotonic() - started:.0f} s"
    )
    print(figures)
    assert decided >= 0.8 * games, figures
    assert p_value < 0.01, figures


def _leads(hand: str, most: int) -> list[ClassicAction]:
    """Every lead of ``hand`` of at most ``most`` cards of one rank."""
    from itertools import combinations

    cards = [Card.parse(text) for text in hand.split()]
    return [
        ClassicAction.lead(*chosen)
        for size in range(1, most + 1)
        for chosen in combinations(cards, size)
        if len({c.rank for c in chosen}) == 1
    ]


@pytest.mark.parametrize(
    ("hand", "trump", "most", "chosen"),
    [
        ("7C 8C 7D", "D", 3, "lead 7C 7D"),  # every card of the rank, its trump too
        ("7C 7D 8D", "C", 3, "lead 7C 7D"),  # the same, though the trump sorts first
        ("7C 7D 7H 7S 9S", "D", 3, "lead 7C 7H 7S"),  # not all fit: the trump stays
        ("7D 8D", "D", 3, "lead 7D"),  # only trumps: the lowest
        ("7D 8C", "D", 3, "lead 8C"),  # a non-trump before a lower trump
    ],
)
def test_greedy_leads_the_same_whatever_the_suit_order(
    hand: str, trump: str, most: int, chosen: str
) -> None:
    """The greedy lead looked only at its first card's suit, so whether it threw in the
    trump of its lowest rank depended on where the trump suit sorts; and with more cards of
    the rank than the defender could take, which it kept was the listing's order."""
    actions = _leads(hand, most)
    assert str(greedy_table_action(actions, Suit.parse(trump))) == chosen
    assert str(greedy_table_action(actions[::-1], Suit.parse(trump))) == chosen
