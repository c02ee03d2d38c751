"""Ratings: pure functions over game results, no database access.

* :mod:`~leaderboard.ratings.elo` - live incremental Elo (provisional);
* :mod:`~leaderboard.ratings.bayeselo` - the rating of record, a BayesElo fit that matches
  Rémi Coulom's ``bayeselo`` 0057;
* :mod:`~leaderboard.ratings.duplicate` - deal pairs, pentanomial counts, paired intervals;
* :mod:`~leaderboard.ratings.games` / :mod:`~leaderboard.ratings.csvio` - inputs.
"""

from leaderboard.ratings.bayeselo import BayesEloFit, PlayerRating, display_scale, fit_bayeselo
from leaderboard.ratings.csvio import parse_games_csv, read_games_csv
from leaderboard.ratings.duplicate import (
    DealPair,
    PairedIntervals,
    Pentanomial,
    pair_consecutive,
    paired_intervals,
    pentanomial_counts,
)
from leaderboard.ratings.elo import EloRating, EloTracker, elo_ratings, expected_score
from leaderboard.ratings.errors import (
    CsvFormatError,
    DisconnectedResultsError,
    EmptyResultsError,
    FitError,
    InvalidCountsError,
    InvalidDealPairError,
    InvalidGameError,
    NotAResultsFileError,
    RatingsError,
    UnboundedRatingError,
)
from leaderboard.ratings.games import Game, Outcome, PairCounts

__all__ = [
    "BayesEloFit",
    "CsvFormatError",
    "DealPair",
    "DisconnectedResultsError",
    "EloRating",
    "EloTracker",
    "EmptyResultsError",
    "FitError",
    "Game",
    "InvalidCountsError",
    "InvalidDealPairError",
    "InvalidGameError",
    "NotAResultsFileError",
    "Outcome",
    "PairCounts",
    "PairedIntervals",
    "Pentanomial",
    "PlayerRating",
    "RatingsError",
    "UnboundedRatingError",
    "display_scale",
    "elo_ratings",
    "expected_score",
    "fit_bayeselo",
    "pair_consecutive",
    "paired_intervals",
    "parse_games_csv",
    "pentanomial_counts",
    "read_games_csv",
]
