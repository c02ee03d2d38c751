"""A bot's runtime holds only ``sdk``, ``kryt_proto`` and ``referee`` (the sandbox image):
serving a bot must not need ``sandbox``, ``leaderboard`` or ``kryt``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
for name in ("sandbox", "leaderboard", "kryt"):
    sys.modules[name] = None  # any import of these now raises ImportError
import sdk, sdk.server, sdk.client, sdk.local, sdk.sim, sdk.tracker, sdk.strategy
from sdk.examples.random.bot import RandomBot
from sdk.examples.greedy.bot import GreedyBot
from sdk.examples.mc.bot import MonteCarloBot
result = sdk.play_local(MonteCarloBot(playouts=1, seed=1), GreedyBot(), games=1, seed=1)
assert len(result.games) == 1 and not result.forfeits
print("RUNTIME OK")
"""


def test_bots_run_with_only_the_runtime_packages() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RUNTIME OK" in done.stdout
