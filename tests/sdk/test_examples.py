"""The example bots: greedy's heuristic does what it says, and the Monte-Carlo bot beats
both random and greedy over seeded series (fixed playouts, so the result is reproducible)."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.protocol.messages import TimeControl
from referee.rules import Action, Suit
from sandbox.submission import load_submission
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.mc.bot import MonteCarloBot
from sdk.examples.random.bot import RandomBot
from sdk.strategy import greedy_action
from sdk.tools import play_local

GENEROUS = TimeControl(move_ms=60_000, bank_ms=0)

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"


def _choose(*texts: str, trump: Suit = Suit.HEARTS) -> str:
    return str(greedy_action([Action.parse(t) for t in texts], trump))


def test_greedy_goes_out_when_it_can() -> None:
    assert _choose("take", "cover AH") == "cover AH"


def test_greedy_covers_with_the_cheapest_non_trump_and_keeps_trumps() -> None:
    assert _choose("take", "cover 7H 8C", "cover 9C 8C", "cover KC 8C") == "cover 9C 8C"
    assert _choose("take", "cover 7H 8C", "cover 9H 8C") == "cover 7H 8C"


def test_greedy_leads_its_weakest_non_trump_and_swaps_the_six() -> None:
    assert _choose("lead 6H", "lead 9C", "lead 7S") == "lead 7S"
    assert _choose("lead 6H", "lead 9C", "swap lead 9C") == "swap lead 9C"
    assert _choose("take") == "take"
    with pytest.raises(ValueError, match="at least one legal action"):
        greedy_action([], Suit.CLUBS)


@pytest.mark.parametrize("name", ["random", "greedy", "mc"])
def test_examples_are_valid_submissions(name: str) -> None:
    submission = load_submission(EXAMPLES / name)
    assert submission.manifest.name == name and submission.entry_path.name == "bot.py"


def test_greedy_beats_random() -> None:
    result = play_local(GreedyBot(), RandomBot(seed=1), games=40, seed="greedy-vs-random")
    assert not result.forfeits
    assert result.points(0) >= 28, str(result)


@pytest.mark.slow
@pytest.mark.timeout(900)  # the time is not under test: a busy machine may need many minutes
@pytest.mark.parametrize(("opponent", "minimum"), [(RandomBot(seed=3), 24), (GreedyBot(), 20)])
def test_monte_carlo_beats_random_and_greedy(opponent: object, minimum: float) -> None:
    assert isinstance(opponent, RandomBot | GreedyBot)
    mc = MonteCarloBot(playouts=4, seed=11)
    # Time is not under test: a loaded machine must not turn slow moves into forfeits.
    result = play_local(mc, opponent, games=30, seed="mc-strength", time_control=GENEROUS)
    assert not result.forfeits
    assert result.points(0) >= minimum, str(result)  # 30 games: >= 80% / >= 67% of points
