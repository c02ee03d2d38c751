"""A bot as its own process, the way the sandbox runs it: address from the environment or
argv, ready when healthy, exits on Shutdown and on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from referee.client import BotClient
from referee.protocol.messages import PROTOCOL_VERSION, Handshake, TimeControl
from tests.protocol.helpers import socket_dir

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)

STARTUP = 60.0
"""Seconds a bot process may take to start serving (not under test; CI's machine is busy)."""
PATIENT = 30.0
"""Seconds for a reply or an exit that is not under test."""


def _start(args: list[str], env_address: str | None, cwd: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KRYT_BOT_ADDRESS", None)
    if env_address:
        env["KRYT_BOT_ADDRESS"] = env_address
    return subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE
    )


def _handshake() -> Handshake:
    return Handshake(PROTOCOL_VERSION, "test", 1, "nobody", TimeControl(1000, 1000))


def test_example_bot_serves_from_env_and_exits_on_shutdown() -> None:
    with socket_dir() as tmp:
        address = f"unix://{tmp / 'bot.sock'}"
        folder = ROOT / "sdk" / "examples" / "greedy"
        proc = _start(["bot.py"], address, folder)
        try:
            client = BotClient(address)
            client.wait_healthy(STARTUP)
            reply = client.handshake(_handshake(), timeout=PATIENT)
            assert (reply.name, reply.version) == ("greedy", "1.0.0")  # from its bot.toml
            client.shutdown("bye", timeout=PATIENT)
            assert proc.wait(PATIENT) == 0
        finally:
            proc.kill()
            _, err = proc.communicate()
        assert b"serving on unix://" in err


def test_python_m_sdk_serve_takes_the_address_argument_and_stops_on_sigterm() -> None:
    with socket_dir() as tmp:
        address = f"unix://{tmp / 'm.sock'}"
        proc = _start(
            ["-m", "sdk", "serve", "sdk.examples.random.bot:RandomBot", address], None, ROOT
        )
        try:
            client = BotClient(address)
            client.wait_healthy(STARTUP)
            assert client.handshake(_handshake(), timeout=PATIENT).name == "random"
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(PATIENT) == 0
            client.close()
        finally:
            proc.kill()
            proc.communicate()


def test_python_m_sdk_serve_rejects_a_bad_class_spec() -> None:
    proc = _start(["-m", "sdk", "serve", "sdk.examples.random.bot:Nope"], None, ROOT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert b"is not a subclass of sdk.Bot" in err


def test_a_raw_protobuf_bot_plays_a_series_through_the_referee() -> None:
    """``benchmarks/minimal_bot.py`` knows only the generated protocol, like a bot in another
    language: the referee's series loop plays it to the end with no fault."""
    from referee.client import RemotePlayer
    from sdk.examples.greedy.bot import GreedyBot
    from sdk.tools.local import LocalPlayer, run_series

    with socket_dir() as tmp:
        address = f"unix://{tmp / 'minimal.sock'}"
        proc = _start([str(ROOT / "benchmarks" / "minimal_bot.py"), address], None, tmp)
        client = BotClient(address)
        try:
            client.wait_healthy(STARTUP)
            remote = RemotePlayer(client, handshake_timeout=PATIENT)
            # Roomy clocks: a move forfeited on a busy machine is not what this test is about.
            roomy = TimeControl(move_ms=10_000, bank_ms=60_000)
            series = run_series(
                [remote, LocalPlayer(GreedyBot())], 4, seed="raw", time_control=roomy
            )
        finally:
            client.close()
            proc.terminate()
            proc.wait(PATIENT)
    assert remote.name == "minimal"
    assert len(series.games) == 4
    assert series.forfeits == [], series.forfeits
    assert all(len(g.moves) > 4 for g in series.games.values())
