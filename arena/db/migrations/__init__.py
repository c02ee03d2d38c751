"""Alembic migrations of the results database (run by :func:`arena.db.open_database`)."""
