"""The arena's system of record and its services.

- :mod:`arena.db`: the database (bots, submissions, tournaments, series, games, ratings),
  sqlmodel tables, CRUD functions with a keyword-only ``session``, Alembic migrations.
- :mod:`arena.tournament`: the tournament service: stores bots, runs series of the referee
  in sandboxes through an executor, records each game as it ends, resumes.

It sits above the referee and the sandbox, and below the leaderboard (which reads it) and
the command line.
"""
