"""A bot's runtime is the rules core, the protocol and ``sdk`` (what a sandbox stages): a bot
plays whole games with nothing else importable (no referee game loop, client or series, no
author tools, sandbox, arena, leaderboard or CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import importlib.abc, sys

RUNTIME = ("referee.rules", "referee.protocol", "kryt_proto", "sdk")
PROJECT = ("referee", "sdk", "sandbox", "arena", "leaderboard", "kryt", "kryt_proto")


class OnlyTheRuntime(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top not in PROJECT or name in ("referee", "sdk"):
            return None
        if name.startswith("sdk.tools") or not any(
            name == r or name.startswith(r + ".") for r in RUNTIME
        ):
            raise ImportError(f"{name} is not part of a bot's runtime")
        return None


sys.meta_path.insert(0, OnlyTheRuntime())
import sdk, sdk.server, sdk.sim, sdk.tracker, sdk.strategy
from referee.protocol.messages import (
    Clock, Decision, DecisionRequest, GameStart, Handshake, HandshakeReply, SeriesScore,
    TimeControl,
)
from referee.rules import Game
from sdk.driver import BotDriver
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.mc.bot import MonteCarloBot
from sdk.examples.random.bot import RandomBot

bots = [BotDriver(MonteCarloBot(playouts=1, seed=1), name="mc", version="1"),
        BotDriver(GreedyBot(), name="greedy", version="1")]
tc = TimeControl()
for seat, bot in enumerate(bots):
    reply = bot.handle(Handshake(1, "test", 1, "other", tc))
    assert isinstance(reply, HandshakeReply), reply
    bot.handle(GameStart(1, seat, 0, SeriesScore(), "other", tc, 1000))
game = Game.new(seed=5, dealer=0)
ids = 0
while not game.over:
    ids += 1
    seat = game.to_move
    reply = bots[seat].handle(DecisionRequest(ids, 1, game.view(seat), Clock(1000, 10000)))
    assert isinstance(reply, Decision), reply
    game.play(reply.action)
try:
    import referee.series
except ImportError:
    pass
else:
    raise AssertionError("the guard let referee.series in")
print("RUNTIME OK", len(game.history))
"""


def test_bots_play_with_only_the_runtime_packages() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RUNTIME OK" in done.stdout
