"""``benchmarks/referee_overhead.py``'s replay measures what it says: the referee's own
requests, of whole games the minimal bot would play, written to a real minimal bot that
answers each one.

The figures are the benchmark's business (never a timed test); this checks the instrument.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from referee.client import BotClient
from referee.protocol.messages import Clock, Decision, DecisionRequest
from referee.protocol.wire import decode_referee_message, encode_bot_message
from referee.rules import Game
from tests.protocol.helpers import socket_dir
from tests.referee.bench_loader import BENCHMARKS, load_benchmark

ROOT = Path(__file__).resolve().parents[2]


ro = load_benchmark("referee_overhead")


def test_the_recorded_requests_are_whole_first_action_games_as_the_referee_encodes_them() -> None:
    recorded = ro.recorded_requests(400, "t15")
    assert len(recorded) >= 400
    position = 0
    number = 0
    while position < len(recorded):
        number += 1
        game = Game.new(f"t15-{number}", dealer=number % 2)
        while not game.over:
            seat, data = recorded[position]
            request = decode_referee_message(data)
            assert isinstance(request, DecisionRequest)
            assert seat == game.to_move
            assert request.request_id == position + 1
            assert request.game_number == number
            assert request.clock == Clock(move_ms=10_000, bank_ms=60_000)
            assert request.view == game.view(seat)
            game.play(game.legal_actions()[0])
            position += 1
    assert position == len(recorded)  # the last recorded game was played to its end


def test_a_reply_is_checked_against_its_request() -> None:
    _, data = ro.recorded_requests(1, "t15")[0]
    request = decode_referee_message(data)
    assert isinstance(request, DecisionRequest)
    first = request.view.legal_actions[0]
    ro.check_reply(data, encode_bot_message(Decision(request.request_id, first)))
    with pytest.raises(AssertionError):
        ro.check_reply(data, encode_bot_message(Decision(request.request_id + 1, first)))
    other = request.view.legal_actions[-1]
    assert other != first
    with pytest.raises(AssertionError):
        ro.check_reply(data, encode_bot_message(Decision(request.request_id, other)))
    with pytest.raises(AssertionError):
        ro.check_reply(data, None)  # the stream ended instead


@pytest.mark.timeout(120)
def test_the_replay_is_answered_by_a_real_minimal_bot() -> None:
    """Every warm-up reply is checked (a wrong or missing answer fails the replay)."""
    recorded = ro.recorded_requests(150, "t15-live")
    with socket_dir() as tmp:
        address = f"unix://{tmp / 'minimal.sock'}"
        proc = subprocess.Popen(
            [sys.executable, str(BENCHMARKS / "minimal_bot.py"), address, "--aio"],
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            client = BotClient(address)
            client.wait_healthy(60)
            client.close()
            cost = asyncio.run(ro.replay([address, address], 2, recorded, [proc.pid]))
        finally:
            proc.kill()
            proc.wait()
    own, bots, system = cost
    assert own > 0 and math.isfinite(own)
    assert system >= 0  # in clock ticks: coarser than own, so not compared with it
    assert bots >= 0
