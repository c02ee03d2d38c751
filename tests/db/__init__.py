"""Tests of leaderboard.db, run against SQLite and PostgreSQL."""
