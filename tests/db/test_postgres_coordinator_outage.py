"""A real PostgreSQL outage while ``kryt tournament run`` itself uses the database: every
connection is terminated and new ones are refused (``ALTER DATABASE … ALLOW_CONNECTIONS
false``) just as the run reads the series it will play, or just as it reads the score of a
series that ended to print its line. The run waits for the database as its series do, says
so once each way, and exits 0 with every game recorded exactly once.

The outage lasts until the run has said it lost the database, so it does not depend on how
fast a busy machine gets there (see ``test_postgres_reconnect_reads.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine, make_url

import kryt.commands.tournament as tournament_command
from arena.tournament import runner, service
from kryt.cli import main
from tests.db.postgres_admin import allow_connections as _allow
from tests.db.postgres_admin import terminate_connections as _terminate
from tests.db.test_postgres_reconnect_reads import (
    DEADLINE_S,
    EXAMPLES,
    LostNotes,
    _assert_every_game_once,
    _reopen_when,
    lost_notes,  # noqa: F401 (a fixture)
)

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(900)]

MOMENTS = {
    # moment: (module, function whose first call starts the outage, what the note says)
    "series": (service, "tasks_for", "reading the series of tournament 1"),
    "score": (tournament_command, "tallies", "reading the score of series 1"),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_the_run_waits_for_the_database_it_reads(
    moment: str,
    postgres_url: str,
    admin: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    lost_notes: LostNotes,  # noqa: F811
    capfd: pytest.CaptureFixture[str],
) -> None:
    name = make_url(postgres_url).database
    assert name is not None
    games = 4
    module, function, what = MOMENTS[moment]
    original: Callable[..., Any] = getattr(module, function)
    failures: list[str] = []
    threads: list[threading.Thread] = []
    ended = threading.Event()
    calls = [0]

    def in_an_outage(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if not threads:  # the first call: the database goes away, and comes back later
            _allow(admin, name, False)
            _terminate(admin, name)
            threads.append(_reopen_when(admin, name, lost_notes.seen.is_set, failures, ended))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, function, in_an_outage)
    monkeypatch.setattr(runner, "_databases", {})  # the series' own, closed below
    monkeypatch.chdir(tmp_path)
    try:
        code = main(
            [
                "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
                "--games", str(games), "-j", "1", "--backend", "process", "--unsafe",
                "--database", postgres_url, "--store", str(tmp_path / "store"),
            ]
        )  # fmt: skip
    finally:
        ended.set()
        for thread in threads:
            thread.join(DEADLINE_S)
        _allow(admin, name, True)
        for db in runner._databases.values():
            db.close()
    _terminate(admin, name)  # what the command left pooled in this process: dropped sooner
    err = capfd.readouterr().err
    assert threads, f"{function} was not called"
    assert not failures, (failures, err)
    assert code == 0, err
    assert calls[0] >= 2, "not retried"
    assert lost_notes.lost and lost_notes.back, (lost_notes.lost, lost_notes.back, err)
    # One note per outage: the lease's heartbeat (same database) may have met it first.
    assert any(
        f"lost while {what} (" in note or "lost while renewing the lease" in note
        for note in lost_notes.lost
    ), lost_notes.lost
    assert "Traceback" not in err, err
    _assert_every_game_once(postgres_url, 1, games)
