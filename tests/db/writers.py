"""A game-recording worker, importable by spawned processes (see test_concurrency.py)."""

from __future__ import annotations

from arena.db import Database, open_database, record_game
from tests.db.helpers import World, game


def record_games(url: str, worlds: list[World], numbers: list[int]) -> int:
    """Open the database afresh and record each game of each world, one transaction each.

    Returns how many of the writes created a row (the rest found the game already there).
    """
    db = open_database(url)
    try:
        return record_with(db, worlds, numbers)
    finally:
        db.close()


def record_with(db: Database, worlds: list[World], numbers: list[int]) -> int:
    """Record games through an already open database; returns the number created."""
    created = 0
    for number in numbers:
        for world in worlds:
            with db.session() as session:
                created += record_game(*game(world, number), session=session).created
    return created
