"""``kryt tournament status`` after a run that stopped early says so: ``stopped`` with the
resume command, whether the database failed under it (a full disk) or it was interrupted
(Ctrl-C); it showed ``pending``, as for a tournament never started. Nothing recorded is lost
and ``resume`` finishes it."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

import arena.tournament.runner as runner
from arena.db import LeaseInfo, TournamentStatus
from arena.db.types import utcnow
from arena.tournament.service import TournamentState, series_shown
from kryt.errors import ExitCode
from tests.cli.helpers import counted_games, flat, kryt

RUN = [
    "tournament", "run", "builtin:random", "builtin:greedy", "--games", "4", "-j", "1",
    "--backend", "process",
]  # fmt: skip


def _fail_from_the_third_game(monkeypatch: pytest.MonkeyPatch, failure: BaseException) -> None:
    """Recording the third game (and any after it) raises ``failure`` inside the game's
    write transaction, as the driver would."""
    real = runner.record_game  # type: ignore[attr-defined]  # imported there, patched here
    calls = [0]

    def record_game(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] >= 3:
            raise failure
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "record_game", record_game)


DISK_FULL = OperationalError(
    "INSERT INTO games ...", {}, sqlite3.OperationalError("database or disk is full")
)


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        pytest.param(DISK_FULL, ExitCode.FAILED, id="disk-full"),
        pytest.param(KeyboardInterrupt(), ExitCode.INTERRUPTED, id="ctrl-c"),
    ],
)
def test_status_shows_a_run_that_stopped_early_as_stopped_with_the_resume_command(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    failure: BaseException,
    code: ExitCode,
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "kryt.db"
    where = ["--database", str(path)]
    _fail_from_the_third_game(monkeypatch, failure)
    ran, _out, err = kryt(capsys, *RUN, *where)
    assert ran == code, err
    assert "resume" in err, err
    assert counted_games(path) == 2  # what was recorded before the failure is kept

    listed, out, err = kryt(capsys, "tournament", "status", *where)
    assert listed == ExitCode.OK, err
    row = next(line for line in out.splitlines() if line.startswith("│ 1 "))
    assert "stopped" in row and "pending" not in row, out
    one, out, err = kryt(capsys, "tournament", "status", "1", *where)
    assert one == ExitCode.OK, err
    assert "status: stopped; runner: -; resume with: kryt tournament resume 1" in flat(out), out
    # Its series, stored as running when the run stopped, shows stopped as its tournament.
    (series_row,) = [line for line in out.splitlines() if "random" in line and "greedy" in line]
    assert "stopped" in series_row and "running" not in series_row, out

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    resumed, _out, err = kryt(capsys, "tournament", "resume", "1", *where)
    assert resumed == ExitCode.OK, err
    assert counted_games(path) == 4
    _, out, _ = kryt(capsys, "tournament", "status", "1", *where)
    assert "status: finished" in flat(out) and "resume with" not in out, out
    assert "finished" in next(line for line in out.splitlines() if "random" in line), out


def _lease(*, expired: bool) -> LeaseInfo:
    now = utcnow()
    expires = now - timedelta(seconds=1) if expired else now + timedelta(seconds=30)
    return LeaseInfo(1, "r", "elsewhere", 1, None, now, now, expires)


@pytest.mark.parametrize(
    ("status", "started", "lease", "imported", "shown"),
    [
        (TournamentStatus.PENDING, False, None, False, "pending"),  # never run
        (TournamentStatus.PENDING, True, None, False, "stopped"),  # a run ended early
        (TournamentStatus.PENDING, True, "expired", False, "stopped"),
        (TournamentStatus.RUNNING, True, None, False, "stopped"),  # could not store more
        (TournamentStatus.RUNNING, True, "live", False, "running"),
        (TournamentStatus.RUNNING, True, "expired", False, "stopped"),
        (TournamentStatus.FINISHED, True, None, False, "finished"),
        (TournamentStatus.CANCELLED, True, None, False, "cancelled"),
        (TournamentStatus.PENDING, True, None, True, "pending"),  # an import's own status
    ],
)
def test_the_status_shown(
    status: TournamentStatus,
    started: bool,
    lease: str | None,
    imported: bool,
    shown: str,
) -> None:
    held = None if lease is None else _lease(expired=lease == "expired")
    state = TournamentState(1, status.value, held, imported=imported, started=started)
    assert state.shown == shown


@pytest.mark.parametrize(
    ("stored", "stopped", "shown"),
    [
        ("running", True, "stopped"),
        ("running", False, "running"),  # a live run plays it
        ("pending", True, "pending"),
        ("finished", True, "finished"),
        ("aborted", True, "aborted"),
    ],
)
def test_the_series_status_shown(stored: str, stopped: bool, shown: str) -> None:
    assert series_shown(stored, stopped=stopped) == shown
