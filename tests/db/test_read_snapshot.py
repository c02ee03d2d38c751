"""A read session sees one state of the database on both backends (docs/database.md): what
one answer shows (a board and its progress, an export's pages) counts the same games while
a tournament records. On PostgreSQL a read was READ COMMITTED, so each statement of one
answer saw the writes committed meanwhile (an outside review saw `kryt leaderboard --json`
give a board of 307 games beside a progress of 436 during a run)."""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import Session

from arena.db import Database, submit
from tests.db.helpers import new_submission


def _submissions(session: Session) -> int:
    count = session.connection().execute(text("select count(*) from submissions")).scalar()
    assert isinstance(count, int)
    return count


def test_a_read_session_does_not_see_what_is_committed_after_its_first_read(db: Database) -> None:
    with db.session() as session:
        submit(new_submission("before"), session=session)
    with db.read_session() as reader:
        assert _submissions(reader) == 1
        with db.session() as writer:  # committed while the read is under way
            submit(new_submission("during"), session=writer)
        assert _submissions(reader) == 1  # the same state to the end of the read
    with db.read_session() as later:
        assert _submissions(later) == 2


def test_writes_after_a_read_are_not_read_only(db: Database) -> None:
    """The reads' isolation is theirs alone: write sessions on the same pooled connections
    still write (a connection a read used is set back when it returns to the pool)."""
    for name in ("one", "two", "three"):
        with db.read_session() as reader:
            _submissions(reader)
        with db.session() as session:
            submit(new_submission(name), session=session)
    with db.read_session() as reader:
        assert _submissions(reader) == 3
