"""Splitting a run of one pair into independent series (game-level parallelism)."""

from __future__ import annotations

import threading

import pytest

from referee.pairing import pairing_configs, run_pairing, series_seed, split_games
from referee.record import GameRecord
from referee.series import SeriesConfig, SeriesConfigError, SeriesFormat
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.tools.local import LocalPlayer, PlayerSlot


def test_games_are_split_evenly_and_never_into_empty_series() -> None:
    assert split_games(10, 3, SeriesFormat.STANDARD) == [4, 3, 3]
    assert split_games(2, 8, SeriesFormat.STANDARD) == [1, 1]
    assert split_games(7, 1, SeriesFormat.STANDARD) == [7]


def test_duplicate_runs_keep_deal_pairs_whole() -> None:
    assert split_games(10, 2, SeriesFormat.DUPLICATE) == [6, 4]
    assert split_games(4, 4, SeriesFormat.DUPLICATE) == [2, 2]
    with pytest.raises(SeriesConfigError, match="even"):
        split_games(5, 2, SeriesFormat.DUPLICATE)


def test_series_seeds_are_derived_and_one_job_keeps_the_run_seed() -> None:
    base = SeriesConfig(games=9, seed=7)
    assert [c.seed for c in pairing_configs(base, 1)] == [7]
    configs = pairing_configs(base, 3)
    assert [c.seed for c in configs] == ["7/1", "7/2", "7/3"]
    assert sum(c.games for c in configs) == 9
    assert series_seed("x", 0, 2) != series_seed("x", 1, 2)


def _slots(index: int) -> tuple[PlayerSlot, PlayerSlot]:
    return (
        PlayerSlot(lambda: LocalPlayer(GreedyBot()), "greedy", seat=0),
        PlayerSlot(lambda: LocalPlayer(RandomBot(seed=index)), "random", seat=1),
    )


def test_parallel_series_report_every_game_once_in_series_order() -> None:
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def on_game(series: int, number: int, record: GameRecord) -> None:
        with lock:
            seen.append((series, number))

    configs = pairing_configs(SeriesConfig(games=7, seed=3), 3)
    outcome = run_pairing(configs, _slots, on_game)
    assert not outcome.stopped and outcome.errors == ()
    assert sorted(seen) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 1), (2, 2)]
    for series in range(3):  # each series reports its own games in order
        numbers = [n for s, n in seen if s == series]
        assert numbers == sorted(numbers)


def test_should_stop_ends_every_series_early() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def on_game(series: int, number: int, record: GameRecord) -> None:
        with lock:
            seen.append(series)

    configs = pairing_configs(SeriesConfig(games=200, seed=3), 2)
    outcome = run_pairing(configs, _slots, on_game, should_stop=lambda: len(seen) >= 4)
    assert outcome.stopped
    # Each series may finish the game it was playing when the limit was reached.
    assert 4 <= len(seen) <= 6
