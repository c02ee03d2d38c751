"""Classical incremental Elo: the live, provisional number shown while games come in.

Expected score ``E = 1 / (1 + 10^((R_opp - R) / 400))`` with a draw worth 1/2; after each game
``R += K (S - E)`` where K is 32 during a bot's first 30 games and 16 afterwards. Updates are
applied in game order, so unlike the BayesElo rating of record this number depends on the
order of play; that is why it is only ever reported as provisional.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The arithmetic is defined once, in arena.elo (the records layer keeps live Elo with it).
from arena.elo import INITIAL_RATING, K_ESTABLISHED, K_NEW, NEW_BOT_GAMES, expected_score
from leaderboard.ratings.games import Game

__all__ = [
    "INITIAL_RATING",
    "K_ESTABLISHED",
    "K_NEW",
    "NEW_BOT_GAMES",
    "EloRating",
    "EloTracker",
    "elo_ratings",
    "expected_score",
]


@dataclass(frozen=True, slots=True)
class EloRating:
    """A bot's live Elo after ``games`` games.

    ``provisional`` is true while the bot is inside its first games (K still 32), as with
    provisional ratings in chess federations. Live Elo as a whole is never the rating of
    record; that is the BayesElo fit.
    """

    name: str
    rating: float
    games: int
    provisional: bool


class EloTracker:
    """Applies games one at a time, in the order they were played."""

    def __init__(
        self,
        *,
        initial: float = INITIAL_RATING,
        k_new: float = K_NEW,
        k_established: float = K_ESTABLISHED,
        new_bot_games: int = NEW_BOT_GAMES,
    ) -> None:
        self.initial = initial
        self.k_new = k_new
        self.k_established = k_established
        self.new_bot_games = new_bot_games
        self._rating: dict[str, float] = {}
        self._games: dict[str, int] = {}

    def k_factor(self, name: str) -> float:
        """K for ``name``'s next game: ``k_new`` while fewer than ``new_bot_games`` played."""
        return self.k_new if self._games.get(name, 0) < self.new_bot_games else self.k_established

    def update(self, game: Game) -> tuple[EloRating, EloRating]:
        """Apply one game; returns the new ratings of (first, second)."""
        a, b = game.first, game.second
        ra = self._rating.get(a, self.initial)
        rb = self._rating.get(b, self.initial)
        expected = expected_score(ra, rb)
        # Both deltas use the pre-game ratings; each side has its own K.
        self._rating[a] = ra + self.k_factor(a) * (game.score - expected)
        self._rating[b] = rb + self.k_factor(b) * ((1.0 - game.score) - (1.0 - expected))
        self._games[a] = self._games.get(a, 0) + 1
        self._games[b] = self._games.get(b, 0) + 1
        return self.rating(a), self.rating(b)

    def rating(self, name: str) -> EloRating:
        """Current rating of ``name`` (the initial rating if it has not played)."""
        games = self._games.get(name, 0)
        return EloRating(
            name=name,
            rating=self._rating.get(name, self.initial),
            games=games,
            provisional=games < self.new_bot_games,
        )

    def ratings(self) -> list[EloRating]:
        """All rated bots, best first (ties by name)."""
        return sorted(
            (self.rating(name) for name in self._rating), key=lambda r: (-r.rating, r.name)
        )


def elo_ratings(
    games: Iterable[Game],
    *,
    initial: float = INITIAL_RATING,
    k_new: float = K_NEW,
    k_established: float = K_ESTABLISHED,
    new_bot_games: int = NEW_BOT_GAMES,
) -> list[EloRating]:
    """Live Elo after applying ``games`` in the given order, best first."""
    tracker = EloTracker(
        initial=initial, k_new=k_new, k_established=k_established, new_bot_games=new_bot_games
    )
    for game in games:
        tracker.update(game)
    return tracker.ratings()
