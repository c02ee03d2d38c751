"""Status and outcome vocabularies, stored as their lowercase string values."""

from __future__ import annotations

from enum import StrEnum


class SubmissionStatus(StrEnum):
    """Lifecycle of one immutable bot version."""

    PENDING = "pending"  # stored, not yet checked
    ACTIVE = "active"  # may be entered into tournaments
    REJECTED = "rejected"  # failed validation; kept for the record
    RETIRED = "retired"  # superseded or withdrawn; its games still count


class TournamentStatus(StrEnum):
    """Lifecycle of a tournament."""

    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"


class SeriesStatus(StrEnum):
    """Lifecycle of a series between two submissions."""

    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    ABORTED = "aborted"  # stopped early, e.g. a bot could not be started at all


class SeriesFormat(StrEnum):
    """``standard``: N games, the loser deals; ``duplicate``: each deal twice, seats swapped."""

    STANDARD = "standard"
    DUPLICATE = "duplicate"


class GameResult(StrEnum):
    """Outcome of a game in seat terms (seat 0 / seat 1), whoever dealt."""

    SEAT0 = "seat0"  # seat 0 won
    SEAT1 = "seat1"  # seat 1 won
    DRAW = "draw"

    @classmethod
    def win_for(cls, seat: int) -> GameResult:
        """The result in which ``seat`` (0 or 1) won."""
        if seat not in (0, 1):
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        return cls.SEAT0 if seat == 0 else cls.SEAT1
