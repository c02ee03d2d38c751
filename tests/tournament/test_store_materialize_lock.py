"""A run unpacking a bot's files (``materialize``) and an upload of the same content that is
being refused: the upload removes the folder it made, so the run must not take that folder
meanwhile. Both hold the content's lock."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from arena.db import open_database
from arena.tournament.store import _content_lock, materialize, register
from sandbox.submission import Submission, load_submission, store_submission

RANDOM = Path(__file__).resolve().parents[2] / "sdk" / "examples" / "random"


def test_a_run_does_not_take_the_folder_a_refused_upload_is_removing(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    store = tmp_path / "store"
    registered = register(RANDOM, db=db, submitted_by="t", store=store)
    submission = load_submission(RANDOM)
    folder = store / submission.sha256
    shutil.rmtree(folder)  # this machine's store does not have it (another host stored it)
    result: list[Submission | BaseException] = []

    def run_needs_the_bot() -> None:
        try:
            result.append(materialize(registered.submission_id, db=db, store=store))
        except BaseException as exc:  # surfaced below
            result.append(exc)

    runner = threading.Thread(target=run_needs_the_bot)
    with _content_lock(store, submission.sha256):  # an upload of the same content...
        store_submission(submission, store)  # ...stores it,
        runner.start()
        runner.join(0.5)
        assert not result, "the run read the folder an upload was still deciding about"
        shutil.rmtree(folder)  # ...and is refused: the folder it made goes
    runner.join(60)
    assert not runner.is_alive()
    [got] = result
    assert isinstance(got, Submission), got
    assert got.sha256 == submission.sha256
    assert load_submission(folder).sha256 == submission.sha256  # unpacked from the database
    db.close()


def test_a_store_this_user_cannot_write_still_serves_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is a file in the store: a store that is only readable (shared by an
    organiser, say) still gives a run the bots it holds."""
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    store = tmp_path / "store"
    registered = register(RANDOM, db=db, submitted_by="t", store=store)
    real_open = os.open

    def no_lock_files(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        if Path(path).name.endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", no_lock_files)
    got = materialize(registered.submission_id, db=db, store=store)
    assert got.sha256 == registered.sha256
    assert not list(store.glob(".*.lock"))
    db.close()
