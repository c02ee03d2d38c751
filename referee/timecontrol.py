"""Time control: a per-move limit plus a per-game bank that absorbs overruns (Kaggle's model)."""

from __future__ import annotations

import math
from dataclasses import dataclass


class TimeControlError(ValueError):
    """A time control setting is out of range."""


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Limits for one game, the same for both seats.

    A move may take ``move_seconds``; time beyond that is taken from the seat's bank, which starts
    each game at ``bank_seconds``. A reply later than move + bank + ``grace_seconds`` (transport
    tolerance) is a timeout. The hard gRPC deadline is the same sum.
    """

    move_seconds: float = 1.0
    bank_seconds: float = 10.0
    grace_seconds: float = 0.25

    def __post_init__(self) -> None:
        for name in ("move_seconds", "bank_seconds", "grace_seconds"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise TimeControlError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.move_seconds <= 0:
            raise TimeControlError(f"move_seconds must be > 0, got {self.move_seconds!r}")


class GameClock:
    """Both seats' banks during one game."""

    def __init__(self, control: TimeControl) -> None:
        self.control = control
        self.banks = [control.bank_seconds, control.bank_seconds]

    def deadline(self, seat: int) -> float:
        """Seconds the referee waits for ``seat``'s reply before calling it a timeout."""
        return self.control.move_seconds + self.banks[seat] + self.control.grace_seconds

    def charge(self, seat: int, elapsed: float) -> bool:
        """Charge ``elapsed`` seconds to ``seat``; False when the move was too late."""
        over = elapsed - self.control.move_seconds
        if over <= 0:
            return True
        if over > self.banks[seat] + self.control.grace_seconds:
            return False
        self.banks[seat] = max(0.0, self.banks[seat] - over)
        return True
