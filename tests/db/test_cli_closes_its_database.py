"""``kryt.cli.main`` closes every database its command opened, whatever the outcome.

A program that drives ``kryt`` in process (a test suite, a notebook, an organiser's script
calling ``main()`` in a loop) must not gather pooled connections: a PostgreSQL server
counts them against ``max_connections``, and on SQLite each holds the file (and its WAL)
open. Checked on both backends after commands that succeed, commands refused for bad input
and a command that fails inside, by what the server and the process themselves report.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

from arena.db import open_database, record_game
from kryt.cli import main
from tests.db.helpers import build_world, game

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("games", "list"),
    ("leaderboard",),
    ("leaderboard", "--json"),
    ("replay", "1"),
    ("replay", "999"),  # no such game: refused
    ("games", "list", "--tournament", "999"),  # no such tournament: refused
    ("tournament", "status"),
    ("games", "export", "-"),
)


def _run_all(url: str, capsys: pytest.CaptureFixture[str], rounds: int) -> list[int]:
    codes = []
    for _ in range(rounds):
        for command in COMMANDS:
            codes.append(main([*command, "--database", url]))
            capsys.readouterr()
    return codes


def _fill(url: str) -> None:
    db = open_database(url)
    try:
        world = build_world(db, games=2)
        with db.session() as s:
            for number in (1, 2):
                record_game(*game(world, number), session=s)
    finally:
        db.close()


def _open_files_under(path: Path) -> list[str]:
    """This process's open file descriptors on ``path`` or its -wal/-shm files."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since listed
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def test_sqlite_files_are_closed_after_each_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kryt.db"
    url = f"sqlite:///{path}"
    _fill(url)
    assert _open_files_under(path) == []
    codes = _run_all(url, capsys, rounds=2)
    assert 0 in codes and any(code != 0 for code in codes), codes  # both outcomes were tried
    assert _open_files_under(path) == []


@pytest.mark.postgres
def test_postgres_connections_are_closed_after_each_command(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(postgres_url)
    name = make_url(postgres_url).database
    watcher = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:

        def others() -> int:
            with watcher.connect() as conn:
                count = conn.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = :name AND pid <> pg_backend_pid()"
                    ),
                    {"name": name},
                ).scalar_one()
            return int(count)

        assert others() == 0
        codes = _run_all(postgres_url, capsys, rounds=3)
        assert 0 in codes and any(code != 0 for code in codes), codes
        # A closed connection leaves pg_stat_activity once its backend has exited, which the
        # server does just after the client's goodbye: a generous wait, never a pass by sleep.
        deadline = 30.0
        waited = 0.0
        count = others()
        while count and waited < deadline:
            time.sleep(0.2)
            waited += 0.2
            count = others()
        assert count == 0, f"{count} connections of kryt commands left open on {name}"
    finally:
        watcher.dispose()
