"""A lost database connection, injected: what the outage tests of a run's reads and of its
coordinator share (SQLite never loses a connection; ``tests/db/test_postgres_*`` lose
real ones).

A wrapped function raises what psycopg raises for a connection ended by
``pg_terminate_backend`` (inside a session, which translates it into a
``DatabaseUnavailableError``), a given number of times, then passes through again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from arena.db import Database, DatabaseUnavailableError, open_database
from arena.tournament.config import SandboxSettings, TournamentConfig
from arena.tournament.runner import create
from referee.timecontrol import TimeControl
from tests.db.test_disconnect_retry import TERMINATED

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


class Lost:
    """``call`` that passes its first ``skip`` calls through, then fails ``times`` times as
    a terminated connection does (``error``: TERMINATED for a function called inside a
    session, which translates it), then passes through again. ``then(failures)`` is called
    after each failure; while ``armed`` is False every call passes through, uncounted."""

    def __init__(
        self,
        call: Callable[..., Any],
        times: int,
        *,
        skip: int = 0,
        error: Exception = TERMINATED,
        then: Callable[[int], None] = lambda _failures: None,
        armed: bool = True,
    ) -> None:
        self.call = call
        self.times = times
        self.skip = skip
        self.error = error
        self.then = then
        self.armed = armed
        self.calls = 0
        self.failed = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.armed:
            return self.call(*args, **kwargs)
        self.calls += 1
        if self.calls > self.skip and self.failed < self.times:
            self.failed += 1
            self.then(self.failed)
            raise self.error
        return self.call(*args, **kwargs)


class LostOpen(Lost):
    """open_database failing ``times`` times as it does when the server is unreachable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except OperationalError as exc:  # as open_database's connection check raises it
            raise DatabaseUnavailableError(f"cannot connect: {exc.orig}") from exc


def greedy_vs_random(
    tmp_path: Path, games: int, *, ruleset: str = "default", clock: str = "wall"
) -> tuple[Database, int]:
    """A new SQLite database in ``tmp_path`` with a tournament of the greedy and random
    example bots (``games`` a pair, process sandbox); the database and the tournament."""
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    config = TournamentConfig(
        bots=(str(EXAMPLES / "greedy"), str(EXAMPLES / "random")),
        games_per_pair=games,
        ruleset=ruleset,
        table_size=2,
        time_control=TimeControl(clock=clock),
        sandbox=SandboxSettings(backend="process"),
    )
    return db, create(config, db=db, store=tmp_path / "store")


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The database's outage notes the test captured."""
    return [r.getMessage() for r in caplog.records if r.name == "arena.db.engine"]
