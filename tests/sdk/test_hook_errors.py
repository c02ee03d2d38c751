"""An exception in a bot's hook is recorded as the arena records it, in-process
(``play_local``, ``play_table_local``) as over gRPC (the checker): ``on_game_end`` loses the
next game, ``on_game_start`` its own game, ``on_handshake`` every game it is asked to start,
each a forfeit with the same detail whichever tool plays the series."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import ClassVar

import pytest

from referee.protocol.messages import GameEndReason, TimeControl
from referee.rules import Action, ClassicAction, ClassicView, View
from referee.series import SeriesResult
from sdk import Bot, GameContext, GameResult, SeriesInfo
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.random.bot import RandomBot
from sdk.strategy import greedy_action, greedy_table_action
from sdk.tools import play_local
from sdk.tools.check import check_bot
from sdk.tools.local import play_table_local

pytestmark = pytest.mark.timeout(300)

ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)
"""No move is slow on a busy machine: time is not under test."""

BOT = """\
from sdk import Bot, serve
from sdk.strategy import greedy_action

HOOK, GAME = {hook!r}, {game!r}


class Flaky(Bot):
    def act(self, view):
        return greedy_action(view.legal_actions, view.trump)

    def on_game_start(self, game):
        if HOOK == "on_game_start" and game.game_number == GAME:
            raise ValueError("boom in on_game_start")

    def on_game_end(self, result):
        if HOOK == "on_game_end" and result.game_number == GAME:
            raise ValueError("boom in on_game_end")


if __name__ == "__main__":
    serve(Flaky())
"""


def _folder(tmp_path: Path, hook: str, game: int) -> Path:
    folder = tmp_path / "flaky"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "flaky"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (folder / "bot.py").write_text(BOT.format(hook=hook, game=game))
    return folder


def _load(folder: Path) -> Bot:
    """The folder's bot, made in this process from the very file the checker runs."""
    spec = importlib.util.spec_from_file_location(f"flaky_{id(folder)}", folder / "bot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bot: Bot = module.Flaky()
    return bot


def _forfeits(series: SeriesResult) -> dict[int, tuple[GameEndReason, str]]:
    return {
        n: (g.ending, g.forfeit.detail)
        for n, g in sorted(series.games.items())
        if g.forfeit is not None and g.forfeit.seat == 0
    }


def test_an_error_in_on_game_end_loses_the_next_game_in_process() -> None:
    class Raises(GreedyBot):
        def on_game_end(self, result: GameResult) -> None:
            if result.game_number == 2:
                raise ValueError("boom in on_game_end")

    result = play_local(Raises(), GreedyBot(), games=3, seed=1, time_control=ROOMY)
    assert [n for n, g in sorted(result.games.items()) if g.forfeit] == [3]
    game = result.games[3]
    assert game.ending is GameEndReason.CRASH and game.forfeit is not None
    assert game.forfeit.seat == 0 and game.winner == 1
    assert game.forfeit.detail.startswith(
        "bot reported an error: GameEnd: ValueError: boom in on_game_end at "
    )
    assert game.forfeit.detail.endswith(" in on_game_end")
    assert all(m.seat != 0 for m in game.moves)  # lost before it was asked to move
    assert result.forfeits == [game]


def test_an_error_in_on_game_end_of_the_last_game_costs_nothing() -> None:
    class Raises(GreedyBot):
        def on_game_end(self, result: GameResult) -> None:
            raise ValueError("boom")

    result = play_local(Raises(), GreedyBot(), games=1, seed=1, time_control=ROOMY)
    assert result.forfeits == []


def test_an_error_in_on_game_start_loses_that_game() -> None:
    class Raises(GreedyBot):
        def on_game_start(self, game: GameContext) -> None:
            if game.game_number == 2:
                raise ValueError("boom in on_game_start")

    result = play_local(Raises(), GreedyBot(), games=3, seed=1, time_control=ROOMY)
    assert {n: g.ending for n, g in result.games.items() if g.forfeit} == {2: GameEndReason.CRASH}
    forfeit = result.games[2].forfeit
    assert forfeit is not None and forfeit.seat == 0
    assert forfeit.detail.startswith("bot reported an error: GameStart: ValueError: boom")


def test_an_error_in_on_handshake_fails_every_start_and_a_failed_bot_is_handshaken_again() -> None:
    class Refuses(GreedyBot):
        def on_handshake(self, series: SeriesInfo) -> None:
            raise ValueError("boom in on_handshake")

    result = play_local(Refuses(), GreedyBot(), games=3, seed=1, time_control=ROOMY)
    assert [g.ending for g in result.games.values()] == [GameEndReason.STARTUP_FAILURE] * 3
    for game in result.games.values():
        assert game.forfeit is not None and game.forfeit.seat == 0
        assert game.forfeit.detail.startswith(  # worded as the arena words it
            "refuses failed the handshake: bot reported an error: Handshake: ValueError: boom"
        )

    class CrashesOnce(GreedyBot):
        handshakes = 0

        def on_handshake(self, series: SeriesInfo) -> None:
            self.handshakes += 1

        def act(self, view: View) -> Action:
            assert self.context is not None
            if self.context.game_number == 1:
                raise RuntimeError("once")
            return greedy_action(view.legal_actions, view.trump)

    once = CrashesOnce()
    result = play_local(once, GreedyBot(), games=2, seed=1, time_control=ROOMY)
    assert [g.ending.is_forfeit for g in result.games.values()] == [True, False]
    assert once.handshakes == 2  # as the arena restarts a bot after a crash


def test_an_error_in_on_game_end_at_a_table_loses_the_next_game() -> None:
    class Raises(RandomBot):
        rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

        def act_table(self, view: ClassicView) -> ClassicAction:
            return greedy_table_action(view.legal_actions, view.trump)

        def on_game_end(self, result: GameResult) -> None:
            if result.game_number == 1:
                raise ValueError("boom at the table")

    result = play_table_local([RandomBot(1), Raises(2), RandomBot(3)], 3, seed=4)
    forfeited = {n: g.forfeit for n, g in result.games.items() if g.forfeit is not None}
    assert list(forfeited) == [2]
    forfeit = forfeited[2]
    assert forfeit is not None and forfeit.seat == 1 and forfeit.reason is GameEndReason.CRASH
    assert "bot reported an error: GameEnd: ValueError: boom at the table" in forfeit.detail


@pytest.mark.parametrize(("hook", "game"), [("on_game_end", 2), ("on_game_start", 3)])
def test_play_local_records_what_the_checker_records_over_grpc(
    tmp_path: Path, hook: str, game: int
) -> None:
    folder = _folder(tmp_path, hook, game)
    report = check_bot(folder, games=4, time_control=ROOMY, startup_timeout=120)
    assert report.series is not None, report.format()
    over_grpc = _forfeits(report.series)
    in_process = _forfeits(play_local(_load(folder), GreedyBot(), games=4, time_control=ROOMY))
    lost = game + 1 if hook == "on_game_end" else game
    assert list(over_grpc) == [lost], report.format()  # that game only: no stray reply after
    assert in_process == over_grpc
    reason, detail = over_grpc[lost]
    assert reason is GameEndReason.CRASH
    message = "GameEnd" if hook == "on_game_end" else "GameStart"
    assert detail.startswith(
        f"bot reported an error: {message}: ValueError: boom in {hook} at bot.py:"
    )
    assert [(p.kind, p.games) for p in report.problems] == [("crash", (lost,))]
