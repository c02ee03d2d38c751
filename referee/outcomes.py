"""What the referee records about a game: moves with times, the ending, forfeits, voids."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

REFEREE_VERSION = "kryt-arena-referee 0.1.0"

DOUBLE_FORFEIT = "double forfeit"
"""End of a game neither bot could start (scored as a draw: nobody can win it)."""


class ForfeitReason(Enum):
    """Why a bot lost a game without it being played out. The offender loses."""

    TIMEOUT = "timeout"
    """No reply within move limit + bank + grace."""
    ILLEGAL_ACTION = "illegal action"
    """A well-formed action that is not in the referee's legal list."""
    MALFORMED_REPLY = "malformed reply"
    """A reply that is not an action at all, or breaks the protocol (unasked, twice, wrong id)."""
    CRASH = "crash"
    """The bot crashed, hung up, reported an error, or the connection was lost."""
    STARTUP_FAILURE = "startup failure"
    """The bot could not be started (or restarted), or its handshake was refused."""
    MEMORY_LIMIT = "memory limit"
    """The sandbox killed the bot for using too much memory."""
    PROCESS_LIMIT = "process limit"
    """The sandbox's process limit stopped the bot."""
    DISK_LIMIT = "disk limit"
    """The bot exceeded the sandbox's file-size or disk limit."""


@dataclass(frozen=True, slots=True)
class Move:
    """One action as played: by whom, its canonical text, and how long the bot took."""

    seat: int
    action: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Forfeit:
    """A forfeit: the offending seat, the reason, what it sent (if anything), and details."""

    seat: int
    reason: ForfeitReason
    offending_input: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A finished (or voided) game, complete enough to replay and verify."""

    deck: tuple[str, ...]
    dealer: int
    turn_limit: int
    moves: tuple[Move, ...]
    winner: int | None
    """The winning seat; ``None`` for a draw or a voided game."""
    end: str
    """The rules' end reason (``out``, ``draw by final answer``, ``turn limit``), ``forfeit``, or
    ``void``."""
    forfeit: Forfeit | None = None
    final_cover: str | None = None
    void_reason: str = ""
    referee_version: str = REFEREE_VERSION
    players: tuple[str, str] = field(default=("", ""))
    """Names (or submission ids) at seats 0 and 1."""
    started: float = 0.0
    """Wall-clock start (seconds since the epoch)."""
    finished: float = 0.0
    """Wall-clock end (seconds since the epoch)."""

    @property
    def voided(self) -> bool:
        """An infrastructure failure: the game does not count and is replayed with this deal."""
        return self.end == "void"

    def score(self, seat: int) -> float:
        """1 for a win, ½ for a draw, 0 for a loss (from ``seat``'s side)."""
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == seat else 0.0
