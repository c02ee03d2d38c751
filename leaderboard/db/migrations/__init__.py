"""Alembic migrations of the results database (run by :func:`leaderboard.db.open_database`)."""
