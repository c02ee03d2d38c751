"""Tests from a mutation review of the bot store (``arena/tournament/store.py``) against a
tampered store, of the content lock that uploads and runs take, and of ``Registered.trusted``.

The store keeps each submission unpacked under ``store/<sha256>/``, a cache of the archive
the database holds (arena.md, "Backup"; configuration.md, "Files"). A run reads a series'
bots through :func:`~arena.tournament.store.materialize`, which checks the folder against
the submission's hash (scaling.md: "checked against their sha256"). What is pinned here:

- a stored folder changed after the tournament was created (a file's bytes, a file added or
  removed, a file swapped for a symlink inside the folder, ``bot.toml`` edited, an empty
  folder added) is refused with a ``SubmissionError`` naming the submission, its folder and
  the remedy ("remove that folder to re-fetch it"); the remedy works (the folder is unpacked
  again from the database's archive, hash checked) — ``test_a_tampered_folder_*``,
  ``test_removing_the_tampered_folder_*``;
- a store folder replaced by a file, a file made unreadable: refused, never returned —
  ``test_a_store_folder_*``, ``test_an_unreadable_file_*``;
- the archive the folder is unpacked from is checked too (another content under the
  submission: refused), and a submission with neither a folder nor an archive is refused
  naming both — ``test_an_archive_*``, ``test_a_submission_with_no_archive_*``;
- a resumed tournament does not play a tampered bot: its series records no game and is left
  to resume with the store's message; once the folder is removed, resume plays it —
  ``test_a_resume_does_not_play_a_tampered_bot_*``;
- the content lock: one holder per content, other contents do not wait, no ``.lock`` file
  is left, and a waiter that locked a lock file its holder removed takes the new one
  (else two holders at once), and the file is removed while still held —
  ``test_the_content_lock_*``; an upload's folder is removed
  when recording fails only if that upload made it — ``test_a_failed_recording_*``;
- what is recorded: the absolute folder (``storage_path``), a deterministic archive —
  ``test_the_recorded_storage_path_*``, ``test_pack_*``;
- ``Registered.trusted`` (bundled content) — ``test_registered_trusted_*``. No code reads it
  (the runner and the play service derive trust from ``bundled_hashes()`` when they start a
  bot, and docs/ never mention the field), so it is pinned here as the API value it is.

Faults it found, fixed: a validation error met in a stored folder (a symlink leaving it,
``bot.toml`` replaced by a symlink, a FIFO) was raised as the plain submission error, naming
neither the submission nor its folder nor the remedy the hash mismatch gives; a store folder
replaced by a file was refused as a store that cannot be written ("free some space or choose
another --store"). Both now say what a hash mismatch says
(``test_a_tampered_folder_that_no_longer_validates_is_named_like_a_hash_mismatch``,
``test_a_store_folder_replaced_by_a_file_is_named_like_a_hash_mismatch``).
"""

from __future__ import annotations

import builtins
import fcntl
import io
import os
import shutil
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.db import (
    ConflictError,
    Database,
    SubmissionArchive,
    get_submission,
    open_database,
    series_of_tournament,
)
from arena.db import games_of_series as stored_games
from arena.tournament import store as store_module
from arena.tournament.config import SandboxSettings, TournamentConfig
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create
from arena.tournament.service import ExecutorName, PreparedExecutor, run_tournament
from arena.tournament.store import (
    Registered,
    _content_lock,
    materialize,
    pack,
    register,
    stored_for_recording,
)
from sandbox import submission as submission_module
from sandbox.submission import Submission, SubmissionError, load_submission

pytestmark = pytest.mark.timeout(120)

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
WAIT_S = 30.0
"""The longest a test waits for another thread on a busy machine."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Registered]:
    """A database and store holding a renamed copy of the random example (untrusted): its
    folder (``kryt.db``, ``store``), made once and copied for each test."""
    folder = tmp_path_factory.mktemp("template")
    db = open_database(f"sqlite:///{folder / 'kryt.db'}")
    mine = copy_of(EXAMPLES / "random", folder / "mine", "mine")
    registered = register(mine, db=db, submitted_by="t", store=folder / "store")
    db.close()  # the last connection closed: everything is in the file (WAL checkpointed)
    return folder, registered


@pytest.fixture
def stored(
    template: tuple[Path, Registered], tmp_path: Path
) -> Iterator[tuple[Database, Path, Registered]]:
    """A fresh copy of the template: the database, the store, the stored bot."""
    source, registered = template
    shutil.copyfile(source / "kryt.db", tmp_path / "kryt.db")
    shutil.copytree(source / "store", tmp_path / "store", symlinks=True)
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}", create=False)
    yield db, tmp_path / "store", registered
    db.close()


def copy_of(source: Path, dest: Path, name: str) -> Path:
    """A copy of the bot at ``source`` named ``name`` (other content: another hash)."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = dest / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', f'name = "{name}"'))
    return dest


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def swap_for_symlink(folder: Path, rel: str, target: str) -> None:
    """``folder/rel`` becomes a symlink to ``target`` (its bytes moved there if relative)."""
    if not target.startswith("/"):
        (folder / rel).rename(folder / target)
    else:
        (folder / rel).unlink()
    os.symlink(target, folder / rel)


# Tamperings the hash sees, the folder still being a valid submission.
HASHED: dict[str, Callable[[Path], object]] = {
    "bytes changed": lambda f: append(f / "bot.py", "\n# changed\n"),
    "file added": lambda f: (f / "extra.py").write_text("x = 1\n"),
    "file removed": lambda f: (f / "__init__.py").unlink(),
    "swapped for a symlink inside": lambda f: swap_for_symlink(f, "bot.py", "real.py"),
    "bot.toml edited": lambda f: append(f / "bot.toml", "\n# edited\n"),
    "empty folder added": lambda f: (f / "empty").mkdir(),
    "file emptied": lambda f: (f / "__init__.py").write_bytes(b""),
}

# Tamperings that make the folder fail validation before its hash is compared.
INVALID: dict[str, Callable[[Path], object]] = {
    "symlink leaving the folder": lambda f: swap_for_symlink(f, "bot.py", "/etc/hostname"),
    "bot.toml a symlink": lambda f: swap_for_symlink(f, "bot.toml", "manifest.toml"),
    "a FIFO added": lambda f: os.mkfifo(f / "pipe"),
}


# ---------------------------------------------------------------------------- tampered store


@pytest.mark.parametrize("how", sorted(HASHED))
def test_a_tampered_folder_is_refused_naming_the_submission_its_folder_and_the_remedy(
    stored: tuple[Database, Path, Registered], how: str
) -> None:
    db, store, registered = stored
    folder = store / registered.sha256
    HASHED[how](folder)
    with pytest.raises(SubmissionError) as refused:
        materialize(registered.submission_id, db=db, store=store)
    message = str(refused.value)
    named = f"submission {registered.submission_id} ({registered.name}@{registered.version}) "
    assert named in message, message
    assert f"at {folder} " in message, message
    assert f"do not match its hash {registered.sha256}" in message, message
    assert "remove that folder to re-fetch it" in message, message
    assert refused.value.path == str(folder)
    # Refused again on the next read: nothing was repaired or taken on the way.
    with pytest.raises(SubmissionError, match="do not match its hash"):
        materialize(registered.submission_id, db=db, store=store)


@pytest.mark.parametrize("how", sorted(INVALID))
def test_a_tampered_folder_that_no_longer_validates_is_refused(
    stored: tuple[Database, Path, Registered], how: str
) -> None:
    """Never returned to be played."""
    db, store, registered = stored
    INVALID[how](store / registered.sha256)
    with pytest.raises(SubmissionError):
        materialize(registered.submission_id, db=db, store=store)


@pytest.mark.parametrize("how", sorted(INVALID))
def test_a_tampered_folder_that_no_longer_validates_is_named_like_a_hash_mismatch(
    stored: tuple[Database, Path, Registered], how: str
) -> None:
    db, store, registered = stored
    folder = store / registered.sha256
    INVALID[how](folder)
    with pytest.raises(SubmissionError) as refused:
        materialize(registered.submission_id, db=db, store=store)
    message = str(refused.value)
    named = f"submission {registered.submission_id} ({registered.name}@{registered.version}) "
    assert named in message, message
    assert str(folder) in message, message
    assert "remove that folder to re-fetch it" in message, message


def test_removing_the_tampered_folder_as_told_unpacks_the_bot_again_from_the_database(
    stored: tuple[Database, Path, Registered],
) -> None:
    db, store, registered = stored
    folder = store / registered.sha256
    append(folder / "bot.py", "\n# changed\n")
    with pytest.raises(SubmissionError, match="remove that folder"):
        materialize(registered.submission_id, db=db, store=store)
    shutil.rmtree(folder)
    got = materialize(registered.submission_id, db=db, store=store)
    assert got.sha256 == registered.sha256
    assert got.root == folder.resolve()
    assert "# changed" not in (folder / "bot.py").read_text()
    assert load_submission(folder).sha256 == registered.sha256
    assert not list(store.glob(".*"))  # no lock file, no temporary folder left


def test_a_store_folder_replaced_by_a_file_is_named_like_a_hash_mismatch(
    stored: tuple[Database, Path, Registered],
) -> None:
    db, store, registered = stored
    folder = store / registered.sha256
    shutil.rmtree(folder)
    folder.write_text("not a bot")
    with pytest.raises(SubmissionError) as refused:
        materialize(registered.submission_id, db=db, store=store)
    message = str(refused.value)
    named = f"submission {registered.submission_id} ({registered.name}@{registered.version}) "
    assert named in message, message
    assert str(folder) in message, message
    assert "free some space" not in message, message


def test_a_store_folder_replaced_by_a_file_is_refused(
    stored: tuple[Database, Path, Registered],
) -> None:
    db, store, registered = stored
    folder = store / registered.sha256
    shutil.rmtree(folder)
    folder.write_text("not a bot")
    with pytest.raises(SubmissionError):
        materialize(registered.submission_id, db=db, store=store)
    assert folder.read_text() == "not a bot"


def test_an_unreadable_file_in_the_store_is_refused_not_returned(
    stored: tuple[Database, Path, Registered], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root every file is readable: the hash walk's ``open`` of one file fails instead."""
    db, store, registered = stored
    unreadable = store / registered.sha256 / "bot.py"
    real_open = builtins.open

    def refusing(file: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(file) == unreadable:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(submission_module, "open", refusing, raising=False)
    with pytest.raises(PermissionError) as refused:
        materialize(registered.submission_id, db=db, store=store)
    assert str(unreadable) in str(refused.value)


def replace_archive(db: Database, submission_id: int, data: bytes | None) -> None:
    with db.session() as session:
        row = session.get(SubmissionArchive, submission_id)
        assert row is not None
        if data is None:
            session.delete(row)
        else:
            row.data = data
            session.add(row)


def test_an_archive_with_other_content_is_refused_and_nothing_is_stored(
    stored: tuple[Database, Path, Registered], tmp_path: Path
) -> None:
    db, store, registered = stored
    other = load_submission(copy_of(EXAMPLES / "random", tmp_path / "other", "other"))
    replace_archive(db, registered.submission_id, pack(other))
    shutil.rmtree(store / registered.sha256)
    refused = r"archive of submission \d+ \(mine@1\.0\.0\) does not match its hash"
    with pytest.raises(SubmissionError, match=refused):
        materialize(registered.submission_id, db=db, store=store)
    assert sorted(p.name for p in store.iterdir()) == []


def test_a_submission_with_no_archive_and_no_folder_is_refused_naming_the_store(
    stored: tuple[Database, Path, Registered],
) -> None:
    db, store, registered = stored
    replace_archive(db, registered.submission_id, None)
    shutil.rmtree(store / registered.sha256)
    with pytest.raises(SubmissionError) as refused:
        materialize(registered.submission_id, db=db, store=store)
    message = str(refused.value)
    named = f"submission {registered.submission_id} ({registered.name}@{registered.version})"
    assert f"{named} has no stored archive" in message, message
    assert str(store) in message, message


def test_a_resume_does_not_play_a_tampered_bot_and_plays_it_once_the_folder_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run through the service (process backend, two bundled bots, one game)."""
    monkeypatch.chdir(tmp_path)
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    store = tmp_path / "store"
    config = TournamentConfig(
        bots=(str(EXAMPLES / "greedy"), str(EXAMPLES / "random")),
        games_per_pair=1,
        sandbox=SandboxSettings(backend="process"),
    )
    tid = create(config, db=db, store=store)
    folder = store / load_submission(EXAMPLES / "random").sha256
    append(folder / "bot.py", "\nraise SystemExit('tampered')\n")

    def executor() -> PreparedExecutor:
        return PreparedExecutor(ExecutorName.local, LocalExecutor(1, processes=False), None, "")

    def recorded() -> int:
        with db.read_session() as session:
            return sum(
                len(stored_games(s.id or 0, session=session, include_voided=True))
                for s in series_of_tournament(tid, session=session)
            )

    result = run_tournament(tid, db, store=store, prepared=executor())
    assert not result.finished and result.unfinished == 1
    [outcome] = result.outcomes
    assert (outcome.status, outcome.games_played) == ("interrupted", 0)
    assert f"at {folder} do not match its hash" in outcome.message, outcome.message
    # A resume fails the same way until the folder is removed: the message says so.
    assert outcome.message.endswith("resume plays the rest once that is done"), outcome.message
    assert recorded() == 0
    shutil.rmtree(folder)
    resumed = run_tournament(tid, db, store=store, prepared=executor())
    assert resumed.finished, resumed
    assert recorded() == 1
    assert "tampered" not in (folder / "bot.py").read_text()
    db.close()


# ---------------------------------------------------------------------------- content lock


TAKERS: list[threading.Thread] = []
"""Threads :func:`holds` started (joined by the tests before they look at the store)."""


def holds(store: Path, sha256: str, within: float) -> bool:
    """Whether another thread takes the content's lock within ``within`` seconds (it then
    releases it at once; if it did not, it still does once the lock is free)."""
    taken = threading.Event()

    def take() -> None:
        with _content_lock(store, sha256):
            taken.set()

    thread = threading.Thread(target=take, daemon=True)
    TAKERS.append(thread)
    thread.start()
    return taken.wait(within)


def join_takers() -> None:
    while TAKERS:
        thread = TAKERS.pop()
        thread.join(WAIT_S)
        assert not thread.is_alive()


def test_the_content_lock_is_one_holder_per_content_and_leaves_no_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a, b = "a" * 64, "b" * 64
    with _content_lock(store, a):
        assert (store / f".{a}.lock").stat().st_mode & 0o777 == 0o600  # no other user's
        assert holds(store, b, WAIT_S), "another content waited for this one's lock"
        assert not holds(store, a, 0.5), "a second holder of the same content"
    assert holds(store, a, WAIT_S)
    join_takers()
    assert sorted(p.name for p in store.iterdir()) == []


def test_the_content_lock_waiter_of_a_removed_lock_file_takes_the_new_one(
    tmp_path: Path,
) -> None:
    """The holder removes the lock file while it holds it; a waiter blocked on that file
    must not count it as held (a third caller makes a new file and would hold it too)."""
    store = tmp_path / "store"
    sha = "c" * 64
    inside = threading.Event()
    leave = threading.Event()

    def waiter() -> None:
        with _content_lock(store, sha):
            inside.set()
            leave.wait(WAIT_S)

    thread = threading.Thread(target=waiter, daemon=True)
    with _content_lock(store, sha):
        thread.start()
        time.sleep(0.5)  # the waiter is blocked on this lock file (a busy machine: or not yet)
    assert inside.wait(WAIT_S)
    try:
        assert not holds(store, sha, 0.5), "two holders of one content at once"
    finally:
        leave.set()
        thread.join(WAIT_S)
        join_takers()
    assert sorted(p.name for p in store.iterdir()) == []


def test_the_content_lock_file_is_removed_while_it_is_still_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removed before it is closed: closed first, a waiter could lock it and find it still
    there (so take it as held) just before it goes, and a third caller make a new one."""
    store = tmp_path / "store"
    sha = "d" * 64
    real_unlink = os.unlink
    held: list[bool] = []

    def unlinking(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).endswith(".lock"):
            probe = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except BlockingIOError:
                held.append(True)
            finally:
                os.close(probe)
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlinking)
    with _content_lock(store, sha):
        pass
    assert held == [True]
    assert sorted(p.name for p in store.iterdir()) == []


def test_the_content_lock_is_held_while_a_bot_is_recorded_and_materialized(
    stored: tuple[Database, Path, Registered], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, store, registered = stored
    seen: list[bool] = []
    submission = load_submission(store / registered.sha256)
    with stored_for_recording(submission, store):
        seen.append(holds(store, registered.sha256, 0.3))
    real = submission_module.load_submission

    def loading(*args: Any, **kwargs: Any) -> Submission:
        seen.append(holds(store, registered.sha256, 0.3))
        return real(*args, **kwargs)

    monkeypatch.setattr(store_module, "load_submission", loading)
    materialize(registered.submission_id, db=db, store=store)
    join_takers()
    assert seen == [False, False]
    assert sorted(p.name for p in store.iterdir()) == [registered.sha256]


def test_a_failed_recording_removes_the_folder_only_when_this_upload_made_it(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    submission = load_submission(copy_of(EXAMPLES / "random", tmp_path / "mine", "mine"))
    folder = store / submission.sha256
    with pytest.raises(RuntimeError), stored_for_recording(submission, store) as made:
        assert made == folder and folder.is_dir()
        raise RuntimeError("the database went away")
    assert not folder.exists()
    with pytest.raises(KeyboardInterrupt), stored_for_recording(submission, store):
        raise KeyboardInterrupt  # Ctrl-C while recording: the folder goes too
    assert not folder.exists()
    with stored_for_recording(submission, store):
        pass
    assert folder.is_dir()
    with pytest.raises(RuntimeError), stored_for_recording(submission, store):
        raise RuntimeError("the database went away")
    assert load_submission(folder).sha256 == submission.sha256  # another's folder is kept
    assert sorted(p.name for p in store.iterdir()) == [submission.sha256]


# ---------------------------------------------------------------------------- trusted


def test_registered_trusted_is_true_for_bundled_content_only(
    stored: tuple[Database, Path, Registered], tmp_path: Path
) -> None:
    db, store, mine = stored
    assert mine.trusted is False
    bundled = register(EXAMPLES / "random", db=db, submitted_by="t", store=store)
    assert bundled.trusted is True
    again = register(EXAMPLES / "random", db=db, submitted_by="t", store=store)
    assert (again.created, again.trusted) == (False, True)


# ---------------------------------------------------------------------------- recorded


def test_the_recorded_storage_path_is_the_stored_folder_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default store is relative (``.kryt/submissions``); the database records where the
    files are, which a relative path would not say once read from another directory."""
    monkeypatch.chdir(tmp_path)
    db = open_database(f"sqlite:///{tmp_path / 'kryt.db'}")
    registered = register(EXAMPLES / "random", db=db, submitted_by="t", store=Path("rel"))
    with db.read_session() as session:
        recorded = get_submission(registered.submission_id, session=session).storage_path
    assert recorded == str((tmp_path / "rel" / registered.sha256).resolve())
    db.close()


def test_pack_gives_the_same_bytes_whatever_the_files_times_and_modes(tmp_path: Path) -> None:
    """The archive kept in the database is deterministic (same content, same bytes)."""
    one = copy_of(EXAMPLES / "random", tmp_path / "one", "mine")
    two = copy_of(EXAMPLES / "random", tmp_path / "two", "mine")
    os.utime(two / "bot.py", (1_000_000, 1_000_000))
    (two / "bot.py").chmod(0o600)
    (two / "__init__.py").chmod(0o755)
    first, second = load_submission(one), load_submission(two)
    assert first.sha256 == second.sha256
    archive = pack(first)
    assert archive == pack(second)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(first.files)
    for member in members:
        owner = (member.uid, member.gid, member.uname, member.gname, member.mtime)
        assert owner == (0, 0, "", "", 0), member.name
        assert member.mode == (0o755 if member.isdir() else 0o644), member.name


def test_a_bundled_bots_name_with_other_content_is_a_conflict_and_stores_nothing(
    tmp_path: Path,
) -> None:
    """A conflict (the server's 409, like a version reused), not an invalid submission."""
    store = tmp_path / "store"
    impostor = tmp_path / "impostor"
    shutil.copytree(EXAMPLES / "greedy", impostor, ignore=shutil.ignore_patterns("__pycache__"))
    append(impostor / "bot.py", "\n# not the real one\n")
    reserved = r"reserved for the bundled example bot \(builtin:greedy\)"
    with (
        pytest.raises(ConflictError, match=reserved),
        stored_for_recording(load_submission(impostor), store),
    ):
        pytest.fail("the impostor was stored")
    assert not store.exists() or sorted(store.iterdir()) == []
