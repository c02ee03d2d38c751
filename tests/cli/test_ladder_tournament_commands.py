"""``kryt tournament`` on the arena's ladder tournament: ``resume``, ``extend``, ``set`` and
``cancel`` refuse it in one ``error:`` line naming ``kryt arena serve`` (exit 2), nothing
changed; ``status`` says it is the arena's ladder instead of ``stopped``."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.db import Submission, SubmissionStatus, Tournament, get_series, open_database
from arena.service.ladder import Ladder
from arena.service.settings import ServiceSettings
from arena.tournament.ladder import is_ladder
from kryt.errors import ExitCode
from tests.cli.helpers import kryt
from tests.db.helpers import build_world


@pytest.fixture
def ladder_db(tmp_path: Path) -> tuple[Path, int]:
    """A database whose ladder has scheduled one series; the ladder tournament's id."""
    path = tmp_path / "arena.db"
    db = open_database(f"sqlite:///{path}")
    world = build_world(db)
    with db.session() as session:
        for sid in (world.sub_a, world.sub_b):
            row = session.get(Submission, sid)
            assert row is not None
            row.status = SubmissionStatus.ACTIVE.value
            session.add(row)
    series_id = Ladder(db, ServiceSettings(), label_prefix="test-ladder-cli-")._next_series()
    assert series_id is not None
    with db.read_session() as session:
        tournament_id = get_series(series_id, session=session).tournament_id
        tournament = session.get(Tournament, tournament_id)
        assert tournament is not None and is_ladder(tournament.config)
    db.close()
    return path, tournament_id


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["resume"], "resumed"),
        (["extend", "--games", "2"], "extended"),
        (["set", "concurrency=2"], "changed"),
        (["cancel"], "cancelled"),
    ],
)
def test_commands_that_would_run_or_change_it_refuse_the_ladder(
    capsys: pytest.CaptureFixture[str], ladder_db: tuple[Path, int], args: list[str], what: str
) -> None:
    path, tid = ladder_db
    command, *rest = args
    code, out, err = kryt(capsys, "tournament", command, str(tid), *rest, "-d", str(path))
    assert code == ExitCode.BAD_INPUT, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:"), err
    assert "arena's ladder" in err and "kryt arena serve" in err and what in err
    assert "invalid stored setting" not in out + err
    assert "cancelled (" not in out
    db = open_database(f"sqlite:///{path}")
    with db.read_session() as session:
        row = session.get(Tournament, tid)
        assert row is not None and row.status == "running"
        assert "extensions" not in row.config
    db.close()


def test_status_says_it_is_the_arenas_ladder(
    capsys: pytest.CaptureFixture[str], ladder_db: tuple[Path, int]
) -> None:
    path, tid = ladder_db
    code, out, err = kryt(capsys, "tournament", "status", str(tid), "-d", str(path))
    assert code == 0, err
    assert "arena's ladder" in out and "kryt arena serve" in out and "stopped" not in out
    code, out, err = kryt(capsys, "tournament", "status", "-d", str(path))
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.strip().startswith(f"│ {tid} "))
    assert "ladder" in row and "kryt arena serve" in row and "stopped" not in row
