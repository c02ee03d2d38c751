"""The clock of one game: a per-move limit, a per-game bank, and a per-game transport grace.

Over a game a seat can never use more than its move allowances plus its bank plus one grace:
the grace absorbs transport jitter once the bank is empty, it is not granted again per move.
"""

from __future__ import annotations

from referee.protocol.messages import TimeControl, TimeControlError

__all__ = ["GameClock", "TimeControl", "TimeControlError"]


class GameClock:
    """Every seat's bank and remaining grace during one game (seconds)."""

    def __init__(self, control: TimeControl, seats: int = 2) -> None:
        self.control = control
        self.banks = [control.bank_seconds] * seats
        self.graces = [control.grace_seconds] * seats

    def deadline(self, seat: int) -> float:
        """Seconds the referee waits for ``seat``'s reply before calling it a timeout."""
        return self.control.move_seconds + self.banks[seat] + self.graces[seat]

    def charge(self, seat: int, elapsed: float) -> bool:
        """Charge ``elapsed`` seconds to ``seat``; False when the move was too late.

        Time over the move limit comes out of the bank first, then out of the grace.
        """
        over = elapsed - self.control.move_seconds
        if over <= 0:
            return True
        if over > self.banks[seat] + self.graces[seat]:
            return False
        from_bank = min(over, self.banks[seat])
        self.banks[seat] -= from_bank
        self.graces[seat] = max(0.0, self.graces[seat] - (over - from_bank))
        return True
