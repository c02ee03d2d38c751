"""Results database, ratings and leaderboard views of Kryt Arena."""
