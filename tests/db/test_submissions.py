"""Bots and submissions: idempotent on sha256, immutable versions, archives."""

from __future__ import annotations

import pytest

from arena.db import (
    ConflictError,
    Database,
    InvalidRecordError,
    NewSubmission,
    NotFoundError,
    Submission,
    SubmissionStatus,
    VersionReusedError,
    find_submission_by_sha256,
    get_bot,
    get_or_create_bot,
    get_submission,
    latest_submission,
    list_bots,
    list_submissions,
    load_archive,
    set_submission_status,
    submission_labels,
    submit,
)
from tests.db.helpers import new_submission, sha


def test_submit_is_idempotent_on_sha256(db: Database) -> None:
    with db.session() as s:
        first = submit(new_submission("greedy", archive=b"zipbytes"), session=s)
    with db.session() as s:
        again = submit(new_submission("greedy", archive=b"zipbytes"), session=s)
    assert first.created and not again.created
    assert again.submission.id == first.submission.id
    with db.read_session() as s:
        assert len(list_submissions(session=s)) == 1
        assert [b.name for b in list_bots(session=s)] == ["greedy"]


def test_round_trip_of_every_field(db: Database) -> None:
    new = new_submission("greedy", storage_path="/srv/bots/greedy/1.0.0", archive=b"\x00\x01")
    with db.session() as s:
        sub_id = submit(new, session=s).submission.id
    assert sub_id is not None
    with db.read_session() as s:
        stored = get_submission(sub_id, session=s)
        assert stored.sha256 == new.sha256
        assert stored.version == "1.0.0"
        assert stored.submitted_by == "tester"
        assert stored.status == "active"
        assert stored.storage_path == "/srv/bots/greedy/1.0.0"
        assert stored.manifest == dict(new.manifest)
        assert stored.submitted_at.tzinfo is not None
        assert load_archive(sub_id, session=s) == b"\x00\x01"
        assert get_bot("greedy", session=s).id == stored.bot_id


def test_same_content_under_another_version_is_a_conflict(db: Database) -> None:
    with db.session() as s:
        submit(new_submission("greedy"), session=s)
    clash = NewSubmission("greedy", "2.0.0", sha("greedy@1.0.0"), "tester")
    with pytest.raises(ConflictError, match=r"already stored as greedy 1\.0\.0"), db.session() as s:
        submit(clash, session=s)


def test_versions_are_immutable(db: Database) -> None:
    with db.session() as s:
        submit(new_submission("greedy"), session=s)
    changed = NewSubmission("greedy", "1.0.0", sha("other content"), "tester")
    with pytest.raises(VersionReusedError, match=r"immutable$") as refused, db.session() as s:
        submit(changed, session=s)
    # The database says what clashes; the caller says how to mend it (a bot.toml or a file).
    assert "bot.toml" not in str(refused.value)
    assert isinstance(refused.value, ConflictError)
    with db.read_session() as s:
        (only,) = list_submissions(session=s)
        assert only.sha256 == sha("greedy@1.0.0")


def test_database_enforces_unique_sha256(db: Database) -> None:
    # Bypass submit()'s checks: the constraint itself must hold.
    with db.session() as s:
        a = get_or_create_bot("a", session=s)
        b = get_or_create_bot("b", session=s)
        assert a.id is not None and b.id is not None
        bot_ids = (a.id, b.id)
    with pytest.raises(ConflictError, match="constraint"), db.session() as s:
        for bot_id in bot_ids:
            s.add(
                Submission(
                    bot_id=bot_id,
                    version="1",
                    sha256="f" * 64,
                    submitted_by="x",
                    status="active",
                )
            )
    with db.read_session() as s:
        assert find_submission_by_sha256("f" * 64, session=s) is None


def test_latest_submission_and_status(db: Database) -> None:
    with db.session() as s:
        old = submit(new_submission("greedy", "1.0.0"), session=s).submission
        new = submit(new_submission("greedy", "1.1.0"), session=s).submission
        assert new.id is not None and old.id is not None
        assert latest_submission("greedy", session=s).id == new.id
        set_submission_status(new.id, SubmissionStatus.RETIRED, session=s)
        assert latest_submission("greedy", session=s).id == old.id
        assert [x.id for x in list_submissions(session=s, status=SubmissionStatus.RETIRED)] == [
            new.id
        ]
        assert load_archive(new.id, session=s) is None
        assert submission_labels(session=s) == {
            old.id: ("greedy", "1.0.0"),
            new.id: ("greedy", "1.1.0"),
        }
    with db.read_session() as s:
        with pytest.raises(NotFoundError, match="no submission with id 999"):
            get_submission(999, session=s)
        with pytest.raises(NotFoundError, match="no bot named 'nobody'"):
            get_bot("nobody", session=s)
        with pytest.raises(NotFoundError, match="'pending'"):
            latest_submission("greedy", session=s, status=SubmissionStatus.PENDING)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"bot_name": "Bad Name"}, "bot name must match"),
        ({"sha256": "abc"}, "64 lowercase hex"),
        ({"sha256": "A" * 64}, "64 lowercase hex"),
        ({"version": ""}, "version must be"),
        ({"submitted_by": " "}, "submitted_by must be"),
        ({"manifest": {"x": object()}}, "JSON-serialisable"),
        ({"status": "active"}, "SubmissionStatus"),
    ],
)
def test_invalid_submissions_are_rejected(kwargs: dict[str, object], fragment: str) -> None:
    base: dict[str, object] = {
        "bot_name": "ok",
        "version": "1",
        "sha256": "0" * 64,
        "submitted_by": "me",
    }
    with pytest.raises(InvalidRecordError, match=fragment):
        NewSubmission(**(base | kwargs))  # type: ignore[arg-type]
