"""Classical incremental Elo arithmetic, the one definition of the live, provisional number.

Expected score ``E = 1 / (1 + 10^((R_opp - R) / 400))`` with a draw worth 1/2; after each game
``R += K (S - E)`` where K is 32 during a bot's first 30 games and 16 afterwards. Pure (no
database): the records layer keeps live Elo up to date with it as games are recorded
(:mod:`arena.db.elo`), and the leaderboard's :class:`~leaderboard.ratings.elo.EloTracker`
replays games with it.
"""

from __future__ import annotations

import math

INITIAL_RATING = 1500.0
K_NEW = 32.0
K_ESTABLISHED = 16.0
NEW_BOT_GAMES = 30


def expected_score(rating: float, opponent: float) -> float:
    """Expected points (win 1, draw 1/2) of a player rated ``rating`` against ``opponent``."""
    return 1.0 / (1.0 + math.pow(10.0, (opponent - rating) / 400.0))


def k_factor(games: int) -> float:
    """K for a bot's next game after ``games`` games."""
    return K_NEW if games < NEW_BOT_GAMES else K_ESTABLISHED
