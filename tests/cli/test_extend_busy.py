"""``kryt tournament extend`` of a tournament another live run holds is refused in one line
that says what to do about extending (it said "resume after it ends"), and adds nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from arena.db import open_database
from arena.db.leases import LeaseHolder, acquire_lease
from kryt.errors import ExitCode
from tests.cli.helpers import flat, kryt, table_counts


def test_extend_while_another_run_holds_the_tournament_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "kryt.db"
    where = ["--database", str(path)]
    run = ["tournament", "run", "builtin:random", "builtin:greedy", "--games", "2", "-j", "1"]
    code, _, err = kryt(capsys, *run, "--backend", "process", *where)
    assert code == ExitCode.OK, err
    db = open_database(f"sqlite:///{path}")
    try:
        with db.session() as session:  # a live run elsewhere (nothing here can judge it dead)
            holder = LeaseHolder("busyrun1", "another-host", 4242, None)
            acquire_lease(1, holder, ttl=timedelta(days=1), session=session)
    finally:
        db.close()
    before = table_counts(path)["series"]
    code, out, err = kryt(capsys, "tournament", "extend", "1", "--games", "2", *where)
    said = flat(err)
    assert code == ExitCode.UNAVAILABLE, (out, err)
    assert "tournament 1 is being run by" in said and "another-host" in said, said
    assert "extend it after that run ends" in said and "resume" not in said, said
    assert table_counts(path)["series"] == before
