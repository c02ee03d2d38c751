"""The one record of a game, from the referee to the database and back.

A :class:`GameRecord` is complete enough to replay and verify the game: the deal, every move
with the time the bot took, how it ended (one :class:`GameEndReason`), the forfeit (offender,
what it sent, why) or the void reason as separate fields, and the automatic final cover of a
drawn game as a field of its own (it is not a move: no bot played it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from referee.protocol.messages import GameEndReason

REFEREE_VERSION: Final = "kryt-arena-referee 0.2.0"

MAX_TEXT: Final = 4000
"""Longest offending input or detail kept (in characters): a bot cannot fill the database
by replying with megabytes of garbage. Longer text is cut by :func:`clip` saying so."""


def clip(text: str) -> str:
    """``text`` bounded to :data:`MAX_TEXT` characters, saying how much was cut."""
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"…[{len(text) - MAX_TEXT} more characters]"


@dataclass(frozen=True, slots=True)
class Move:
    """One action as played: by whom, its canonical text, and how long the bot took."""

    seat: int
    action: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Forfeit:
    """A forfeit: the offending seat, the reason, what it sent (if anything), and why."""

    seat: int
    reason: GameEndReason
    offending_input: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        if not self.reason.is_forfeit:
            raise ValueError(f"{self.reason.value!r} is not a forfeit reason")


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A finished (or voided) game, complete enough to replay and verify."""

    deck: tuple[str, ...]
    dealer: int
    turn_limit: int
    moves: tuple[Move, ...]
    ending: GameEndReason
    winner: int | None
    """The winning seat; ``None`` for a draw, a double forfeit or a voided game."""
    forfeit: Forfeit | None = None
    final_cover: str | None = None
    """The card the referee covered with for the player with a single card left, in a game
    drawn by the final answer (rules.md); not a move."""
    void_reason: str = ""
    referee_version: str = REFEREE_VERSION
    players: tuple[str, str] = field(default=("", ""))
    """Names (or submission ids) at seats 0 and 1."""
    started: float = 0.0
    """Wall-clock start (seconds since the epoch)."""
    finished: float = 0.0
    """Wall-clock end (seconds since the epoch)."""

    def __post_init__(self) -> None:
        if (self.forfeit is not None) != self.ending.is_forfeit:
            raise ValueError(f"ending {self.ending.value!r} with forfeit {self.forfeit!r}")
        if self.forfeit is not None and self.forfeit.reason is not self.ending:
            raise ValueError(f"forfeit {self.forfeit.reason.value!r} but {self.ending.value!r}")
        if (self.ending is GameEndReason.VOID) != bool(self.void_reason):
            raise ValueError(f"ending {self.ending.value!r} with void reason {self.void_reason!r}")
        if self.forfeit is not None and self.winner != 1 - self.forfeit.seat:
            raise ValueError(
                f"seat {self.forfeit.seat} forfeited, so seat {1 - self.forfeit.seat} wins,"
                f" not {self.winner!r}"
            )
        if self.ending is GameEndReason.OUT and self.winner is None:
            raise ValueError(f"a game won by going out needs a winner, got {self.winner!r}")
        if self.ending in _NO_WINNER and self.winner is not None:
            raise ValueError(f"a {self.ending.value!r} game has no winner, got {self.winner!r}")
        if (self.final_cover is not None) != (self.ending is GameEndReason.DRAW_BY_FINAL_ANSWER):
            raise ValueError(
                f"an automatic final cover ({self.final_cover!r}) belongs to a draw by the final"
                f" answer, and only to it; this game ended by {self.ending.value!r}"
            )

    @property
    def voided(self) -> bool:
        """An infrastructure failure: the game does not count and is replayed with this deal."""
        return self.ending is GameEndReason.VOID

    def score(self, seat: int) -> float:
        """1 for a win, ½ for a draw, 0 for a loss (from ``seat``'s side)."""
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == seat else 0.0


_NO_WINNER: Final = frozenset(
    {
        GameEndReason.DRAW_BY_FINAL_ANSWER,
        GameEndReason.TURN_LIMIT,
        GameEndReason.DOUBLE_FORFEIT,
        GameEndReason.VOID,
    }
)
