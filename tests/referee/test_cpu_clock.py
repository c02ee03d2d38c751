"""The CPU clock in a sandbox that accounts CPU time (bwrap's cgroup, Docker's container
cgroup): a bot that waits without computing is not charged for the wait, while the wall clock
makes the same waits a timeout; every move records both times."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.tournament.config import SandboxSettings
from arena.tournament.seats import SandboxSlot
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import GameRecord
from referee.series import SeriesConfig, run_series
from sandbox import load_submission
from sandbox.backend import Backend

ROOT = Path(__file__).resolve().parents[2]
NAPPER = ROOT / "tests" / "referee" / "bots" / "napper"
GREEDY = ROOT / "sdk" / "examples" / "greedy"

pytestmark = pytest.mark.timeout(900)


def _series(backend: Backend, clock: str, label: str) -> list[GameRecord]:
    # 0.65 s a move: the 1 s naps are over it on the wall clock; on the CPU clock the hard
    # wall limit (4x: 2.6 s) leaves room for a loaded machine.
    control = TimeControl(move_ms=600, bank_ms=0, grace_ms=50, clock=clock)
    limits = SandboxSettings(startup_seconds=120).limits()
    slots = [
        SandboxSlot(backend, load_submission(path), name=name, limits=limits,
                    label=f"{label}-{seat}", trusted=False)
        for seat, (name, path) in enumerate([("napper", NAPPER), ("greedy", GREEDY)])
    ]  # fmt: skip
    try:
        # Greedy's clock is not under test: roomy, so it never forfeits on a busy machine.
        roomy = TimeControl(move_ms=10_000, bank_ms=60_000)
        config = SeriesConfig(games=1, seed=5, seat_controls=(control, roomy), turn_limit=8)
        result = run_series(config, (slots[0], slots[1]))
    finally:
        for slot in slots:
            slot.close()
    return list(result.games.values())


@pytest.mark.parametrize(
    "backend_name", [pytest.param("docker", marks=pytest.mark.docker), "bwrap"]
)
def test_waiting_is_free_on_the_cpu_clock_and_a_timeout_on_the_wall_clock(
    backend_name: str, request: pytest.FixtureRequest
) -> None:
    backend: Backend = request.getfixturevalue(f"{backend_name}_backend")
    (on_cpu,) = _series(backend, "cpu", f"kryt-test-cpuclock-{backend_name}")
    assert on_cpu.forfeit is None, on_cpu.forfeit
    napper_moves = [m for m in on_cpu.moves if m.seat == 0]
    assert napper_moves and all(m.cpu_seconds is not None for m in napper_moves)
    assert all(m.seconds >= 1.0 for m in napper_moves)
    cpu = sum(m.cpu_seconds or 0.0 for m in napper_moves)
    assert cpu < sum(m.seconds for m in napper_moves) / 3
    (on_wall,) = _series(backend, "wall", f"kryt-test-wallclock-{backend_name}")
    assert on_wall.ending is GameEndReason.TIMEOUT
    assert on_wall.forfeit is not None and on_wall.forfeit.seat == 0
