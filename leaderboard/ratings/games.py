"""Game records and their aggregation into per-pair win/draw/loss counts.

Every rating fit works from :class:`PairCounts`: for each ordered pair (first mover, second
mover) the number of wins, draws and losses of the first mover. Aggregating is a sum, so the
counts (and therefore every fit made from them) cannot depend on the order games were played in.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from leaderboard.ratings.errors import EmptyResultsError, InvalidCountsError, InvalidGameError

IntArray = NDArray[np.int64]

MAX_COUNT = 2**53
"""The most games one count may hold: every count up to it is exact as the float the fit
computes with, and a count beyond it is no tournament's (nor fits NumPy's int64 at all)."""


def _natural(value: object) -> bool:
    """Whether ``value`` is a count of games: a whole number (``3`` or ``3.0``) from 0 to
    :data:`MAX_COUNT`; NaN, infinity, ``None`` or ``2**70`` is not (and raises nothing)."""
    try:
        whole = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return False
    return bool(whole == value) and 0 <= whole <= MAX_COUNT


class Outcome(enum.Enum):
    """Result of one game, seen from the first mover; values are the usual PGN tokens."""

    FIRST_WINS = "1-0"
    DRAW = "1/2-1/2"
    SECOND_WINS = "0-1"

    @property
    def score(self) -> float:
        """Points scored by the first mover: 1, 1/2 or 0."""
        return {"1-0": 1.0, "1/2-1/2": 0.5, "0-1": 0.0}[self.value]

    @classmethod
    def from_score(cls, first_score: float) -> Outcome:
        """The outcome in which the first mover scored ``first_score`` (1, 1/2, else 0)."""
        if first_score == 1:
            return cls.FIRST_WINS
        return cls.DRAW if first_score == 0.5 else cls.SECOND_WINS

    @classmethod
    def parse(cls, token: str) -> Outcome:
        """Parse ``1-0``, ``0-1`` or ``1/2-1/2`` (surrounding blanks allowed)."""
        text = token.strip()
        for outcome in cls:
            if outcome.value == text:
                return outcome
        raise InvalidGameError(f"unknown result {token!r}; expected one of 1-0, 0-1, 1/2-1/2")


@dataclass(frozen=True, slots=True)
class Game:
    """One finished game: who moved first, who moved second and the outcome."""

    first: str
    second: str
    outcome: Outcome

    def __post_init__(self) -> None:
        if not self.first.strip() or not self.second.strip():
            raise InvalidGameError(f"empty player name in game {self.first!r} v {self.second!r}")
        if self.first == self.second:
            raise InvalidGameError(f"bot {self.first!r} cannot play against itself")

    @property
    def score(self) -> float:
        """Points scored by the first mover."""
        return self.outcome.score


@dataclass(frozen=True)
class PairCounts:
    """Cached per-ordered-pair counts: the only input a rating fit needs.

    ``first[k]`` moved first against ``second[k]`` (indices into ``names``) and won
    ``wins[k]``, drew ``draws[k]`` and lost ``losses[k]`` of those games. Names are kept
    sorted so two equal result sets always give identical arrays.
    """

    names: tuple[str, ...]
    first: IntArray
    second: IntArray
    wins: IntArray
    draws: IntArray
    losses: IntArray

    def __post_init__(self) -> None:
        n = len(self.names)
        if len(set(self.names)) != n:
            raise InvalidCountsError(f"player names are not unique: {list(self.names)!r}")
        arrays = (self.first, self.second, self.wins, self.draws, self.losses)
        if len({a.shape for a in arrays}) != 1 or self.first.ndim != 1:
            shapes = [a.shape for a in arrays]
            raise InvalidCountsError(f"count arrays must be 1-D of equal length, got {shapes}")
        if self.first.size and (
            min(self.first.min(), self.second.min()) < 0
            or max(self.first.max(), self.second.max()) >= n
        ):
            raise InvalidCountsError(f"player index out of range 0..{n - 1}")
        if np.any(self.first == self.second):
            k = int(np.flatnonzero(self.first == self.second)[0])
            raise InvalidCountsError(f"pair {k} has {self.names[self.first[k]]!r} on both sides")
        if any(np.any(a < 0) for a in arrays[2:]):
            raise InvalidCountsError("win/draw/loss counts must be non-negative")
        key = self.first * max(n, 1) + self.second
        if np.unique(key).size != key.size:
            raise InvalidCountsError("an ordered pair appears more than once; merge its counts")

    @classmethod
    def from_games(cls, games: Iterable[Game]) -> PairCounts:
        """Aggregate games into counts (order-independent: it is a sum)."""
        tally: dict[tuple[str, str], list[int]] = {}
        column = {Outcome.FIRST_WINS: 0, Outcome.DRAW: 1, Outcome.SECOND_WINS: 2}
        for game in games:
            tally.setdefault((game.first, game.second), [0, 0, 0])[column[game.outcome]] += 1
        return cls.from_mapping({pair: (w, d, lo) for pair, (w, d, lo) in tally.items()})

    @classmethod
    def from_mapping(cls, counts: Mapping[tuple[str, str], tuple[int, int, int]]) -> PairCounts:
        """Build from ``{(first, second): (wins, draws, losses)}`` as kept in a database cache."""
        for (a, b), wdl in counts.items():
            if a == b:
                raise InvalidCountsError(f"pair ({a!r}, {b!r}) has the same bot on both sides")
            if len(wdl) != 3 or not all(_natural(x) for x in wdl):
                raise InvalidCountsError(
                    f"counts for ({a!r}, {b!r}) must be 3 naturals up to {MAX_COUNT}: {wdl!r}"
                )
        names = tuple(sorted({name for pair in counts for name in pair}))
        index = {name: i for i, name in enumerate(names)}
        pairs = sorted(counts)  # sorted so the arrays never depend on insertion order
        table = np.array([counts[p] for p in pairs], dtype=np.int64).reshape(-1, 3)
        return cls(
            names=names,
            first=np.array([index[a] for a, _ in pairs], dtype=np.int64),
            second=np.array([index[b] for _, b in pairs], dtype=np.int64),
            wins=table[:, 0].copy(),
            draws=table[:, 1].copy(),
            losses=table[:, 2].copy(),
        )

    def to_mapping(self) -> dict[tuple[str, str], tuple[int, int, int]]:
        """Inverse of :meth:`from_mapping`."""
        return {
            (self.names[i], self.names[j]): (int(w), int(d), int(lo))
            for i, j, w, d, lo in zip(
                self.first, self.second, self.wins, self.draws, self.losses, strict=True
            )
        }

    def __add__(self, other: PairCounts) -> PairCounts:
        """Merge two count tables (e.g. the cache plus one new series)."""
        merged = self.to_mapping()
        for pair, (w, d, lo) in other.to_mapping().items():
            w0, d0, l0 = merged.get(pair, (0, 0, 0))
            merged[pair] = (w0 + w, d0 + d, l0 + lo)
        return PairCounts.from_mapping(merged)

    @property
    def total_games(self) -> int:
        """Number of real games counted."""
        return int(self.wins.sum() + self.draws.sum() + self.losses.sum())

    def require_games(self) -> None:
        """Raise :class:`EmptyResultsError` when there is nothing to rate."""
        if self.total_games == 0:
            raise EmptyResultsError("no games to rate")

    def player_totals(self) -> tuple[IntArray, IntArray, IntArray]:
        """Per player (index order): wins, draws and losses over both colours."""
        n = len(self.names)
        wins = np.bincount(self.first, self.wins, n) + np.bincount(self.second, self.losses, n)
        draws = np.bincount(self.first, self.draws, n) + np.bincount(self.second, self.draws, n)
        losses = np.bincount(self.first, self.losses, n) + np.bincount(self.second, self.wins, n)
        return wins.astype(np.int64), draws.astype(np.int64), losses.astype(np.int64)


def games_from_tuples(rows: Sequence[tuple[str, str, str]]) -> list[Game]:
    """Convenience for tests and scripts: ``[(first, second, "1-0"), ...]`` to games."""
    return [Game(a, b, Outcome.parse(r)) for a, b, r in rows]
