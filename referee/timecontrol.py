"""The clock of one game: per seat, a per-move limit, a bank with an increment, and a grace.

Each seat has its own :class:`TimeControl` (bots may play under different controls). Over a
game a seat can never use more than its move allowances plus its bank plus its increments
plus one grace: the grace absorbs transport jitter once the bank is empty, it is not granted
again per move.

The text form of a control, shared by ``kryt play --time`` and the tournament configuration,
is ``MOVE+BANK[+INCREMENT]`` in seconds (``1+10+0.1``: 1 s a move, a 10 s bank, 0.1 s added
to the bank after each move); see :func:`parse_time_spec`. Wherever a user sets a control
(``kryt play``, a tournament's settings), each part is bounded by :data:`MOVE_SECONDS`,
:data:`BANK_SECONDS`, :data:`GRACE_SECONDS` and :data:`INCREMENT_SECONDS` (docs/configuration.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Final

from referee.protocol.messages import (
    CPU_CLOCK_WALL_FACTOR,
    MAX_TIME_MS,
    Clock,
    TimeControl,
    TimeControlError,
)

__all__ = [
    "BANK_SECONDS",
    "GRACE_SECONDS",
    "INCREMENT_SECONDS",
    "MOVE_SECONDS",
    "GameClock",
    "TimeControl",
    "TimeControlError",
    "check_seconds",
    "format_time_spec",
    "parse_time_assignment",
    "parse_time_spec",
]


MOVE_SECONDS: Final = (0.001, 3600.0)
"""Time per move a user may set, in seconds (at least a millisecond: the wire counts ms)."""
BANK_SECONDS: Final = (0.0, 86_400.0)
"""A bank a user may set, in seconds."""
GRACE_SECONDS: Final = (0.0, 600.0)
"""A per-game grace a user may set, in seconds."""
INCREMENT_SECONDS: Final = (0.0, 3600.0)
"""An increment a user may set, in seconds."""

_WIRE_SECONDS: Final = MAX_TIME_MS / 1000
"""What the wire can carry at most (any part): the bound of a control read back from a
record, which need not be one a user could set today."""


def check_seconds(what: str, value: object, bounds: tuple[float, float]) -> float:
    """``value`` as a number of seconds within ``bounds``, or TimeControlError naming it as
    ``what`` (``--move-seconds``, ``the move``...)."""
    low, high = bounds
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise TimeControlError(f"{what} must be from {low:g} to {high:g} seconds, got {value!r}")
    return float(value)


class GameClock:
    """Every seat's control, bank and remaining grace during one game (seconds)."""

    def __init__(self, control: TimeControl | Sequence[TimeControl], seats: int = 2) -> None:
        """``control``: one control for every seat, or one per seat (``seats`` of them)."""
        controls = (control,) * seats if isinstance(control, TimeControl) else tuple(control)
        if len(controls) != seats or not all(isinstance(c, TimeControl) for c in controls):
            raise TimeControlError(
                f"a clock for {seats} seats needs one time control per seat, got {controls!r}"
            )
        self.controls: tuple[TimeControl, ...] = controls
        self.banks = [c.bank_seconds for c in controls]
        self.graces = [c.grace_seconds for c in controls]
        self._told: list[Clock | None] = [None] * seats
        """Each seat's last :meth:`wire_clock`, given again while its bank is unchanged."""

    def allowance(self, seat: int) -> float:
        """Seconds ``seat`` may spend on its next move (on its control's clock)."""
        return self.controls[seat].move_seconds + self.banks[seat] + self.graces[seat]

    def uses_cpu(self, seat: int) -> bool:
        """Whether ``seat``'s moves are charged on the CPU clock."""
        return self.controls[seat].clock == "cpu"

    def deadline(self, seat: int) -> float:
        """Wall seconds the referee waits for ``seat``'s reply before calling it a timeout:
        the allowance itself on the wall clock; a multiple of it on the CPU clock."""
        factor = CPU_CLOCK_WALL_FACTOR if self.uses_cpu(seat) else 1
        return self.allowance(seat) * factor

    def wire_clock(self, seat: int) -> Clock:
        """What ``seat`` is told with its next decision request: its move limit and bank."""
        bank_ms = min(MAX_TIME_MS, round(self.banks[seat] * 1000))
        told = self._told[seat]
        if told is None or told.bank_ms != bank_ms:  # a Clock is immutable: one may be reused
            told = self._told[seat] = Clock(move_ms=self.controls[seat].move_ms, bank_ms=bank_ms)
        return told

    def charge(self, seat: int, elapsed: float, cpu: float | None = None) -> bool:
        """Charge a move to ``seat``: ``elapsed`` wall seconds, or its ``cpu`` seconds under
        the CPU clock (the wall time when the sandbox could not measure it). False when the
        move was too late. Time over the move limit comes out of the bank, then the grace;
        a move in time then earns the seat its increment, up to a bank of 24 h.
        """
        control = self.controls[seat]
        spent = cpu if control.clock == "cpu" and cpu is not None else elapsed
        over = spent - control.move_seconds
        if over > 0:
            if over > self.banks[seat] + self.graces[seat]:
                return False
            from_bank = min(over, self.banks[seat])
            self.banks[seat] -= from_bank
            self.graces[seat] = max(0.0, self.graces[seat] - (over - from_bank))
        # The bank stops growing at what a request can tell (24 h): the bot is told its
        # whole bank, never less than the referee waits for.
        self.banks[seat] = min(_WIRE_SECONDS, self.banks[seat] + control.increment_seconds)
        return True


def parse_time_spec(
    text: str, base: TimeControl | None = None, *, setting: bool = False
) -> TimeControl:
    """``MOVE+BANK[+INCREMENT]`` (seconds, e.g. ``1+10+0.1``) as a time control; the grace
    and the clock come from ``base`` (default: the arena's). Raises TimeControlError naming
    the text and the bad part.

    ``setting``: the text is a user's setting (``--time``, ``[bot_time]``), held to the
    bounds of :data:`MOVE_SECONDS`, :data:`BANK_SECONDS` and :data:`INCREMENT_SECONDS`;
    otherwise (a control read back from a record) to what the wire can carry."""
    base = base or TimeControl()
    if not isinstance(text, str):
        raise TimeControlError(f"a time control is text like '1+10+0.1', got {text!r}")
    parts = [p.strip() for p in text.strip().split("+")]
    if len(parts) not in (2, 3) or not all(parts):
        raise TimeControlError(
            f"time control {text!r} is not MOVE+BANK or MOVE+BANK+INCREMENT in seconds"
            " (e.g. 1+10+0.1: 1 s a move, a 10 s bank, 0.1 s added after each move)"
        )
    names = ("move", "bank", "increment")
    seconds: list[float] = []
    for name, part in zip(names, parts, strict=False):
        try:
            value = float(part)
        except ValueError:
            raise TimeControlError(
                f"time control {text!r}: the {name} {part!r} is not a number of seconds"
            ) from None
        if not math.isfinite(value):
            raise TimeControlError(f"time control {text!r}: the {name} {part!r} is not finite")
        low, high = _spec_bounds(name, setting=setting)
        if not low <= value <= high:
            raise TimeControlError(
                f"time control {text!r}: the {name} {part!r} must be from {low:g} to"
                f" {high:g} seconds"
            )
        seconds.append(value)
    increment = seconds[2] if len(seconds) == 3 else 0.0
    try:
        parsed = TimeControl.from_seconds(
            seconds[0], seconds[1], base.grace_seconds, base.clock, increment
        )
    except TimeControlError as exc:
        raise TimeControlError(f"time control {text!r}: {exc}") from None
    return dataclasses.replace(parsed, grace_ms=base.grace_ms)


def _spec_bounds(name: str, *, setting: bool) -> tuple[float, float]:
    """The bounds of the part ``name`` (move, bank, increment) of a time control's text."""
    if setting:
        return {"move": MOVE_SECONDS, "bank": BANK_SECONDS}.get(name, INCREMENT_SECONDS)
    return (MOVE_SECONDS[0] if name == "move" else 0.0), _WIRE_SECONDS


def format_time_spec(control: TimeControl) -> str:
    """The ``MOVE+BANK+INCREMENT`` text of ``control`` (inverse of :func:`parse_time_spec`)."""

    move, bank, increment = control.move_ms, control.bank_ms, control.increment_ms
    return f"{seconds_text(move)}+{seconds_text(bank)}+{seconds_text(increment)}"


def seconds_text(ms: int) -> str:
    """``ms`` milliseconds as seconds, exactly (``1234.567``, ``10``, ``0.05``): every
    millisecond kept, so the text reads back as the same control."""
    whole, rest = divmod(ms, 1000)
    return f"{whole}.{rest:03d}".rstrip("0").rstrip(".") if rest else str(whole)


def parse_time_assignment(
    text: str, base: TimeControl | None = None, *, setting: bool = False
) -> tuple[str, TimeControl]:
    """``BOT=MOVE+BANK[+INCREMENT]`` (a per-bot control, e.g. ``a=1+10+0.1``) as the bot's key
    and its control. Raises TimeControlError when there is no ``=`` or the control is bad
    (``setting``: as :func:`parse_time_spec`)."""
    key, sep, spec = text.rpartition("=")
    key = key.strip()
    if not sep or not key:
        raise TimeControlError(
            f"expected BOT=MOVE+BANK[+INCREMENT] (e.g. mybot=1+10+0.1), got {text!r}"
        )
    try:
        return key, parse_time_spec(spec, base, setting=setting)
    except TimeControlError as exc:  # the whole assignment: which bot's control is bad
        raise TimeControlError(f"{text!r} (the control of bot {key!r}): {exc}") from None
