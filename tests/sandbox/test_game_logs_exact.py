"""A bot's output per game, read by position from its sandbox (as the arena stores game
logs): a bot that repeats itself once its bounded tail is full is still split exactly, with
nothing lost or told twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.service.play import LogTail
from arena.tournament.seats import SandboxSlot
from referee.protocol.messages import TimeControl
from referee.record import GameRecord
from referee.series import SeriesConfig, run_series
from sandbox import load_submission
from sandbox.backend import Backend
from tests.sandbox.conftest import roomy

pytestmark = pytest.mark.timeout(600)

LINE = "R" * 99 + "\n"
"""What the bot writes on each of its first ``PER_GAME`` decisions of every game."""

PER_GAME = 5
GAMES = 10

BOT = f"""
import sys

from sdk import Bot, serve


class Repeating(Bot):
    def __init__(self):
        self.decisions = 0

    def on_game_start(self, game):
        self.decisions = 0
        print(f"GAME {{game.game_number}}", file=sys.stderr, flush=True)

    def act(self, view):
        self.decisions += 1
        if self.decisions <= {PER_GAME}:
            print({LINE!r}, end="", file=sys.stderr, flush=True)
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Repeating())
"""


def _bot(folder: Path) -> Path:
    folder.mkdir()
    (folder / "bot.py").write_text(BOT)
    (folder / "bot.toml").write_text(
        'name = "repeating"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def test_repeating_output_is_split_per_game_exactly(
    sandbox_backend: Backend, tmp_path: Path
) -> None:
    submission = load_submission(_bot(tmp_path / "repeating"))
    # A local tail of 1 KiB is full after two games here. Docker reads the engine's log file
    # by timestamp, which is rotated (emptied) at log_bytes: keep its default (1 MiB).
    limits = roomy() if sandbox_backend.name == "docker" else roomy(log_bytes=1024)
    slots = [
        SandboxSlot(
            sandbox_backend,
            submission,
            name="repeating",
            limits=limits,
            label=f"test-logs-{sandbox_backend.name}-{seat}",
        )
        for seat in range(2)
    ]
    tail = LogTail(slots[0])
    logs: dict[int, tuple[str, bool]] = {}

    def recorder(number: int, _attempt: int, record: GameRecord) -> None:
        logs[number] = tail.new_output()

    control = TimeControl(move_ms=10_000, bank_ms=60_000, grace_ms=5_000)
    try:
        run_series(
            SeriesConfig(games=GAMES, seed=5, time_control=control),
            (slots[0], slots[1]),
            recorder=recorder,
        )
    finally:
        for slot in slots:
            slot.close()
    assert slots[0].starts == 1
    expected = {n: f"GAME {n}\n" + LINE * PER_GAME for n in range(1, GAMES + 1)}
    assert sorted(logs) == sorted(expected)
    # Before the first game the SDK said it was serving: that is the first game's too.
    banner, _, first = logs[1][0].partition("\n")
    assert banner.startswith("kryt bot repeating 1.0.0 serving on "), logs[1]
    logs[1] = (first, logs[1][1])
    assert not any(cut for _, cut in logs.values()), logs
    # Nothing lost, nothing told twice.
    assert "".join(logs[n][0] for n in sorted(logs)) == "".join(expected.values())
    if sandbox_backend.name != "docker":
        # The local tail reads what waits in the pipe before it answers: each game's part
        # is exactly what the bot wrote before its last reply. (Docker's log copier runs
        # on its own, so there a game's last lines may come with the next game's.)
        assert {n: text for n, (text, _) in logs.items()} == expected
