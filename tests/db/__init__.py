"""Tests of arena.db, run against SQLite and PostgreSQL."""
