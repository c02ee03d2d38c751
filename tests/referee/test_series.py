"""Series sequencing: loser deals, a draw keeps the dealer, duplicate pairs, resume, voids,
bots that cannot start. Played in-process with scripted bots (no gRPC needed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar

import pytest

from referee.protocol.messages import GameEndReason, Handshake, TimeControl
from referee.record import GameRecord
from referee.rules import Game, View
from referee.series import (
    BotStartError,
    SeriesAborted,
    SeriesConfig,
    SeriesConfigError,
    SeriesFormat,
    deal_number,
    first_dealer,
    game_deck,
    next_dealer,
    run_series,
)
from sdk.bot import Bot, GameContext
from sdk.tools.local import LocalPlayer, PlayerSlot

FAST = TimeControl(move_ms=5000, bank_ms=5000)


class FirstLegal(Bot):
    """Plays the first legal action; forfeits (illegal reply) in the listed game numbers."""

    name = "first"
    version = "1"

    def __init__(self, lose_in: set[int] | None = None) -> None:
        self.lose_in = lose_in or set()
        self.number = 0

    def on_game_start(self, game: GameContext) -> None:
        self.number = game.game_number

    def act(self, view: View) -> str:
        if self.number in self.lose_in:
            return "lead 6C" if view.pile else "take"  # always illegal here
        return str(view.legal_actions[0])


def essence(games: dict[int, GameRecord]) -> dict[int, tuple[object, ...]]:
    """A record without the move times (which differ from run to run)."""
    return {
        n: (g.deck, g.dealer, tuple(m.action for m in g.moves), g.winner, g.ending, g.forfeit)
        for n, g in games.items()
    }


def local(factory: Callable[[], Bot], name: str) -> PlayerSlot:
    """A bot object played in-process, re-created after it failed (as a sandbox restarts)."""
    return PlayerSlot(lambda: LocalPlayer(factory()), name)


def slot(lose_in: set[int] | None = None, name: str = "first") -> PlayerSlot:
    return local(lambda: FirstLegal(lose_in), name)


def test_next_dealer_loser_deals_and_draw_keeps_dealer() -> None:
    assert next_dealer(0, winner=0) == 1
    assert next_dealer(0, winner=1) == 0
    assert next_dealer(1, winner=None) == 1
    assert next_dealer(0, winner=None) == 0


def test_first_dealer_and_decks_come_from_the_seed() -> None:
    assert {first_dealer(s) for s in range(40)} == {0, 1}
    assert first_dealer("abc") == first_dealer("abc")
    assert game_deck(7, 3) == game_deck(7, 3)
    assert game_deck(7, 3) != game_deck(7, 4) != game_deck(8, 3)


def test_the_loser_deals_the_next_game_and_forfeits_count_as_losses() -> None:
    config = SeriesConfig(games=5, seed=11, time_control=FAST)
    result = run_series(config, (slot({1, 2}, "a"), slot({3}, "b")))
    games = result.games
    assert games[1].winner == 1 and games[1].forfeit is not None
    assert games[1].forfeit.reason is GameEndReason.ILLEGAL_ACTION
    assert games[1].dealer == first_dealer(11)
    assert games[2].dealer == 0  # seat 0 lost game 1: he deals
    assert games[3].dealer == 0  # and lost game 2 too
    assert games[3].winner == 0
    assert games[4].dealer == 1  # seat 1 lost game 3
    for n in (4, 5):
        assert games[n].dealer == next_dealer(games[n - 1].dealer, games[n - 1].winner)
    assert result.score(0).wins + result.score(0).draws + result.score(0).losses == 5


def test_after_a_draw_the_same_dealer_deals() -> None:
    config = SeriesConfig(games=4, seed=3, time_control=FAST, turn_limit=1)
    result = run_series(config, (slot(), slot()))
    games = result.games.values()
    assert all(g.ending is GameEndReason.TURN_LIMIT and g.winner is None for g in games)
    assert {g.dealer for g in result.games.values()} == {first_dealer(3)}
    assert result.score(0).draws == 4


def test_each_game_is_dealt_from_the_seed_and_replays() -> None:
    config = SeriesConfig(games=3, seed="replay", time_control=FAST)
    result = run_series(config, (slot(), slot()))
    for number, record in result.games.items():
        assert record.deck == tuple(str(c) for c in game_deck("replay", number))
        replayed = Game.replay(record.deck, record.dealer, [m.action for m in record.moves])
        assert replayed.over and replayed.outcome == record.winner
        assert replayed.reason is not None
        assert GameEndReason.from_rules(replayed.reason) is record.ending


def test_duplicate_format_plays_each_deal_twice_with_the_dealer_swapped() -> None:
    config = SeriesConfig(games=6, seed=5, format=SeriesFormat.DUPLICATE, time_control=FAST)
    result = run_series(config, (slot(), slot({2, 6}, "b")))
    for pair in range(1, 4):
        first, second = result.games[2 * pair - 1], result.games[2 * pair]
        assert first.deck == second.deck == tuple(str(c) for c in game_deck(5, pair))
        assert first.dealer == 1 - second.dealer
        assert deal_number(config, 2 * pair) == pair
    # Both hands of a deal go to both bots: the non-dealer hand switches bots.
    assert len({result.games[1].deck}) == 1
    counts = result.pentanomial(0)
    assert sum(counts) == 3
    points = sum(k * c for k, c in enumerate(counts)) / 2
    assert points == result.score(0).wins + result.score(0).draws / 2
    with pytest.raises(SeriesConfigError, match="even"):
        SeriesConfig(games=5, seed=1, format=SeriesFormat.DUPLICATE)


def test_resuming_gives_the_same_series_as_an_uninterrupted_run() -> None:
    config = SeriesConfig(games=6, seed=99, time_control=FAST)
    full = run_series(config, (slot({2}, "a"), slot({4}, "b")))
    partial = {n: full.games[n] for n in (1, 2, 3)}
    played: list[int] = []

    def recorder(number: int, attempt: int, record: GameRecord) -> None:
        played.append(number)

    resumed = run_series(config, (slot({2}, "a"), slot({4}, "b")), recorder=recorder, done=partial)
    assert played == [4, 5, 6]
    assert essence(resumed.games) == essence(full.games)


def test_a_failed_write_voids_and_replays_the_same_deal() -> None:
    config = SeriesConfig(games=2, seed=1, time_control=FAST)
    calls: list[tuple[int, int]] = []

    def flaky(number: int, attempt: int, record: GameRecord) -> None:
        calls.append((number, attempt))
        if (number, attempt) == (1, 1):
            raise OSError("disk full")

    result = run_series(config, (slot(), slot()), recorder=flaky)
    assert calls == [(1, 1), (1, 2), (2, 1)]
    clean = run_series(config, (slot(), slot()))
    assert essence(result.games) == essence(clean.games)


def test_repeated_infrastructure_failure_aborts_the_series_resumably() -> None:
    config = SeriesConfig(games=2, seed=1, time_control=FAST, max_attempts=2)

    def broken(number: int, attempt: int, record: GameRecord) -> None:
        raise ConnectionError("database unreachable")

    with pytest.raises(SeriesAborted, match="database unreachable"):
        run_series(config, (slot(), slot()), recorder=broken)


class _NeverStarts:
    name = "dead"

    def player(self, handshake: Handshake) -> object:
        raise BotStartError("entry point exited with status 1")

    def diagnose(self) -> GameEndReason | None:
        return None

    def close(self) -> None:
        pass


def test_a_bot_that_cannot_start_forfeits_every_game_and_the_series_goes_on() -> None:
    config = SeriesConfig(games=3, seed=2, time_control=FAST)
    result = run_series(config, (slot(), _NeverStarts()))  # type: ignore[arg-type]
    assert len(result.games) == 3
    for record in result.games.values():
        assert record.winner == 0 and record.forfeit is not None
        assert record.forfeit.reason is GameEndReason.STARTUP_FAILURE
        assert "status 1" in record.forfeit.detail


class _CrashOnce(FirstLegal):
    created: ClassVar[list[int]] = []

    def __init__(self) -> None:
        super().__init__()
        _CrashOnce.created.append(1)

    def act(self, view: View) -> str:
        if len(_CrashOnce.created) == 1 and len(view.history) > 4:
            raise RuntimeError("segfault, sort of")
        return super().act(view)


def test_a_crashed_bot_is_restarted_for_the_next_game() -> None:
    _CrashOnce.created.clear()
    factory: Callable[[], Bot] = _CrashOnce
    crashing = local(factory, "crashy")
    created_before = len(_CrashOnce.created)
    config = SeriesConfig(games=3, seed=4, time_control=FAST)
    result = run_series(config, (crashing, slot()))
    crashed = [g for g in result.games.values() if g.forfeit is not None]
    assert len(crashed) == 1 and crashed[0].forfeit is not None
    assert crashed[0].forfeit.reason is GameEndReason.CRASH and crashed[0].winner == 1
    assert len(_CrashOnce.created) - created_before == 2  # restarted once, after the crash
    assert all(g.forfeit is None for n, g in result.games.items() if g is not crashed[0])


def test_when_neither_bot_starts_the_game_is_retried_then_a_double_forfeit() -> None:
    config = SeriesConfig(games=2, seed=2, time_control=FAST, max_attempts=3)
    calls: list[tuple[int, int]] = []

    def recorder(number: int, attempt: int, record: GameRecord) -> None:
        calls.append((number, attempt))

    result = run_series(config, (_NeverStarts(), _NeverStarts()), recorder=recorder)  # type: ignore[arg-type]
    assert calls == [(1, 3), (2, 3)]  # two retries each, then scored
    for record in result.games.values():
        assert record.ending is GameEndReason.DOUBLE_FORFEIT and record.winner is None
        assert record.forfeit is None and record.moves == ()
        # The record keeps why: both failures of the last attempt.
        detail = record.double_forfeit_detail
        assert detail.startswith("neither bot could start: ")
        assert detail.count("entry point exited with status 1") == 2, detail
    assert result.score(0).draws == 2


@pytest.mark.parametrize("failure", ["ours", "start"])
def test_a_failure_while_the_run_stops_is_an_interruption_not_a_failure(
    failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Ctrl-C while bots started: each attempt failed ('is being stopped by the runner'),
    was logged as failed on our side three times and the series reported 'aborted'."""
    from referee.series import (
        InfrastructureError,
        SeriesInterrupted,
        _NeitherStarted,
        play_with_retries,
    )

    config = SeriesConfig(games=2, seed=1, time_control=FAST)
    attempts: list[int] = []

    async def play_once() -> GameRecord:
        attempts.append(1)
        if failure == "ours":
            raise InfrastructureError("greedy@1.0.0 is being stopped by the runner")
        raise _NeitherStarted.__new__(_NeitherStarted)

    def give_up(_exc: InfrastructureError) -> GameRecord:
        raise AssertionError("no forfeit is scored for a stopped run")

    with pytest.raises(SeriesInterrupted, match="stopped during game 1"):
        asyncio.run(
            play_with_retries(
                config, 1, kind="game", described="a vs b", play_once=play_once,
                start_failure=_NeitherStarted, give_up=give_up, recorder=None,
                stopping=lambda: True,
            )
        )  # fmt: skip
    assert attempts == [1]
    assert "failed on our side" not in caplog.text
