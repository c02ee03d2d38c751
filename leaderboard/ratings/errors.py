"""Typed errors of the ratings package; each message quotes the input it rejects."""

from __future__ import annotations


class RatingsError(ValueError):
    """Base class of every error raised by :mod:`leaderboard.ratings`.

    The message is ``reason`` followed by ``advice`` (what a caller could change, e.g.
    "fix drawelo instead") when there is any. A caller that acts on the error itself (the
    leaderboard fixes the parameters and says why) shows ``reason`` alone."""

    def __init__(self, reason: str = "", *, advice: str = "") -> None:
        self.reason = reason
        self.advice = advice
        super().__init__(f"{reason}; {advice}" if advice else reason)


class InvalidGameError(RatingsError):
    """A game record is malformed (empty name, a bot playing itself, unknown result)."""


class InvalidCountsError(RatingsError):
    """Aggregated per-pair counts are inconsistent (shapes, indices, negative counts)."""


LINE_SHOWN = 200
"""At most this many characters of a bad line's quoted form are shown (a binary file has
lines of any length)."""


class CsvFormatError(RatingsError):
    """A results CSV file cannot be read; carries the source, line number and line text."""

    def __init__(self, source: str, line_number: int, line: str, reason: str) -> None:
        self.source = source
        self.line_number = line_number
        self.line = line
        self.reason = reason
        shown = repr(line)
        if len(shown) > LINE_SHOWN:  # the quoted form: a binary line is mostly escapes
            shown = f"{shown[:LINE_SHOWN]}... ({len(line)} characters)"
        super().__init__(f"{source}:{line_number}: {reason}: {shown}")


class NotAResultsFileError(RatingsError):
    """The results path names a directory, a socket or a device other than ``/dev/null``
    (``/dev/zero`` would be read without end); a pipe is read."""


class EmptyResultsError(RatingsError):
    """There are no games to rate."""


class DisconnectedResultsError(RatingsError):
    """Players fall into groups that never met, so their relative ratings are undefined."""


class UnboundedRatingError(RatingsError):
    """Without a prior, a perfect (or zero) score makes a rating run off to infinity."""


class FitError(RatingsError):
    """The optimiser did not converge to the maximum of the posterior."""


class InvalidDealPairError(RatingsError):
    """Two games offered as a deal pair are not the same two bots with seats swapped."""
