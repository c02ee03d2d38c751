"""Time that adds up: over a game a seat never gets more than its move allowances, its bank
and one grace; the grace absorbs jitter once, it is not a gift on every move."""

from __future__ import annotations

import pytest

from referee.protocol.messages import TimeControl, TimeControlError
from referee.timecontrol import GameClock


def test_small_overruns_add_up_to_a_timeout_past_bank_and_grace() -> None:
    clock = GameClock(TimeControl(move_ms=200, bank_ms=0, grace_ms=50))
    # 30 ms over on every move: the 50 ms grace covers one such move, not two.
    assert clock.charge(0, 0.230)
    assert not clock.charge(0, 0.230)


def test_the_bank_is_spent_before_the_grace_and_neither_comes_back() -> None:
    clock = GameClock(TimeControl(move_ms=100, bank_ms=100, grace_ms=20))
    overruns = 0
    while clock.charge(0, 0.130):  # 30 ms over each time
        overruns += 1
    # 100 ms of bank + 20 ms of grace hold four 30 ms overruns (120 ms), not a fifth.
    assert overruns == 4
    assert clock.banks[0] == pytest.approx(0.0) and clock.graces[0] == pytest.approx(0.0)
    assert clock.deadline(0) == pytest.approx(0.100)
    assert clock.charge(0, 0.099)  # within the move's own allowance: still fine


def test_each_seat_has_its_own_bank_and_grace() -> None:
    clock = GameClock(TimeControl(move_ms=100, bank_ms=0, grace_ms=10))
    assert not clock.charge(0, 0.2)
    assert clock.charge(1, 0.105) and clock.graces[1] == pytest.approx(0.005)
    assert clock.deadline(1) == pytest.approx(0.105)


def test_the_default_grace_is_milliseconds_not_a_quarter_second() -> None:
    assert TimeControl().grace_ms <= 100


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"move_ms": 0}, "move_ms must be at least 1"),
        ({"move_ms": True}, "move_ms must be a whole number"),
        ({"bank_ms": -1}, "bank_ms must be a whole number"),
        ({"grace_ms": 1.5}, "grace_ms must be a whole number"),
        ({"move_ms": 10**12}, "move_ms must be a whole number"),
    ],
)
def test_time_controls_out_of_range_are_refused(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(TimeControlError, match=fragment):
        TimeControl(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [1e300, float("nan"), -0.5, True, "1"])
def test_seconds_out_of_range_are_refused(seconds: object) -> None:
    with pytest.raises(TimeControlError, match="move_seconds"):
        TimeControl.from_seconds(seconds, 10)  # type: ignore[arg-type]


def test_the_cpu_clock_charges_cpu_time_and_keeps_a_wall_limit() -> None:
    clock = GameClock(TimeControl(move_ms=100, bank_ms=0, grace_ms=0, clock="cpu"))
    assert clock.deadline(0) == pytest.approx(0.4)  # a hard wall limit remains
    assert clock.charge(0, elapsed=0.35, cpu=0.02)  # slow on the wall, cheap on the CPU
    assert not clock.charge(0, elapsed=0.15, cpu=0.15)  # over on the CPU
    # Where the sandbox cannot measure the CPU, the wall time is charged.
    assert not GameClock(TimeControl(move_ms=100, bank_ms=0, grace_ms=0, clock="cpu")).charge(
        0, elapsed=0.35, cpu=None
    )


def test_an_unknown_clock_is_refused() -> None:
    with pytest.raises(TimeControlError, match="clock must be one of"):
        TimeControl(clock="sundial")
