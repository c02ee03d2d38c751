"""The clock of one game: a per-move limit, a per-game bank, and a per-game transport grace.

Over a game a seat can never use more than its move allowances plus its bank plus one grace:
the grace absorbs transport jitter once the bank is empty, it is not granted again per move.
"""

from __future__ import annotations

from referee.protocol.messages import CPU_CLOCK_WALL_FACTOR, TimeControl, TimeControlError

__all__ = ["GameClock", "TimeControl", "TimeControlError"]


class GameClock:
    """Every seat's bank and remaining grace during one game (seconds)."""

    def __init__(self, control: TimeControl, seats: int = 2) -> None:
        self.control = control
        self.banks = [control.bank_seconds] * seats
        self.graces = [control.grace_seconds] * seats

    def allowance(self, seat: int) -> float:
        """Seconds ``seat`` may spend on its next move (on the control's clock)."""
        return self.control.move_seconds + self.banks[seat] + self.graces[seat]

    def deadline(self, seat: int) -> float:
        """Wall seconds the referee waits for ``seat``'s reply before calling it a timeout:
        the allowance itself on the wall clock; a multiple of it on the CPU clock."""
        factor = CPU_CLOCK_WALL_FACTOR if self.control.clock == "cpu" else 1
        return self.allowance(seat) * factor

    def charge(self, seat: int, elapsed: float, cpu: float | None = None) -> bool:
        """Charge a move to ``seat``: ``elapsed`` wall seconds, or its ``cpu`` seconds under
        the CPU clock (the wall time when the sandbox could not measure it). False when the
        move was too late. Time over the move limit comes out of the bank, then the grace.
        """
        spent = cpu if self.control.clock == "cpu" and cpu is not None else elapsed
        over = spent - self.control.move_seconds
        if over <= 0:
            return True
        if over > self.banks[seat] + self.graces[seat]:
            return False
        from_bank = min(over, self.banks[seat])
        self.banks[seat] -= from_bank
        self.graces[seat] = max(0.0, self.graces[seat] - (over - from_bank))
        return True
