"""Bot submissions: validate, content-address, store in the database, and unpack for running.

A submission's files are kept twice: as a deterministic ``.tar.gz`` in the database (so any
machine with database access can run it) and unpacked under a local store directory keyed by
its sha256 (so the sandbox can mount it read-only).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from arena.db import (
    Bot,
    ConflictError,
    Database,
    NewSubmission,
    VersionReusedError,
    get_submission,
    load_archive,
    submit,
)
from sandbox import Submission, SubmissionError, load_submission, store_submission

DEFAULT_STORE = Path(".kryt") / "submissions"
"""Where unpacked submissions live, relative to the working directory (next to kryt.db)."""

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"
"""The bundled example bots (trusted: they may run without isolation)."""


@dataclass(frozen=True, slots=True)
class Registered:
    """A stored submission: its id, identity, and whether this call created it."""

    submission_id: int
    name: str
    version: str
    sha256: str
    created: bool
    trusted: bool


def pack(submission: Submission) -> bytes:
    """A deterministic gzip'd tar of the submission's files (same content → same bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(submission.files):
            info = tar.gettarinfo(str(submission.root / rel), arcname=rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            info.mode = 0o755 if info.isdir() else 0o644
            if info.isfile():
                with (submission.root / rel).open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return buffer.getvalue()


@cache
def bundled_names() -> frozenset[str]:
    """Names of the bundled example bots (``builtin:NAME``): reserved for their content."""
    if not EXAMPLES.is_dir():
        return frozenset()
    return frozenset(
        load_submission(folder).manifest.name
        for folder in sorted(EXAMPLES.iterdir())
        if (folder / "bot.toml").is_file()
    )


def refuse_reserved_name(submission: Submission) -> None:
    """A bot named like a bundled example but with other content is refused (ConflictError):
    it would pass for the reference bot on the leaderboard, and once stored it would make
    ``builtin:NAME`` unusable in that database (the same name and version, other content)."""
    name = submission.manifest.name
    if name in bundled_names() and submission.sha256 not in bundled_hashes():
        raise ConflictError(
            f"the name {name!r} is reserved for the bundled example bot (builtin:{name});"
            " choose another name in bot.toml"
        )


@cache
def bundled_hashes() -> frozenset[str]:
    """Content hashes of the bundled example bots: submissions with these are trusted."""
    if not EXAMPLES.is_dir():
        return frozenset()
    hashes = set()
    for folder in sorted(EXAMPLES.iterdir()):
        if (folder / "bot.toml").is_file():
            hashes.add(load_submission(folder).sha256)
    return frozenset(hashes)


def register(
    path: str | Path, *, db: Database, submitted_by: str, store: Path = DEFAULT_STORE
) -> Registered:
    """Validate the bot folder or archive at ``path`` and store it as an immutable version.

    Submitting identical content again is a no-op; other content under an existing name and
    version is refused (:class:`VersionReusedError`, whose message says to bump the version
    in ``bot.toml``).
    """
    if Path(path).is_dir():
        submission = load_submission(path)
        with stored_for_recording(submission, store) as stored:
            return _record(submission, stored, pack(submission), db=db, submitted_by=submitted_by)
    # An archive: unpacked into a temporary folder that is removed afterwards.
    with tempfile.TemporaryDirectory(prefix="kryt-submit-") as tmp:
        unpacked = load_submission(path, unpack_dir=Path(tmp) / "unpacked")
        with stored_for_recording(unpacked, store) as stored:
            archive = pack(unpacked)
            return _record(
                load_submission(stored), stored, archive, db=db, submitted_by=submitted_by
            )


@contextmanager
def stored_for_recording(submission: Submission, store: Path) -> Iterator[Path]:
    """The submission copied into ``store`` (its folder there) for the block to record in
    the database. If the block raises (the version refused, the database away), the folder
    is removed again when this call made it: its files would belong to no submission. The
    store is a cache of the database's archives, so a concurrent run that needs the same
    files unpacks them again. A bundled example's name with other content is refused first
    (:func:`refuse_reserved_name`): nothing is stored then."""
    refuse_reserved_name(submission)
    # Two uploads of one content at once (one server or two): each would take the folder
    # for its own, and the one refused would remove it from under the other, which then
    # recorded a version whose files were gone. One at a time per content: the second finds
    # the folder the first kept, or makes it again after the first was refused.
    with _content_lock(Path(store), submission.sha256):
        new_folder = not (Path(store) / submission.sha256).is_dir()
        stored = store_submission(submission, store)
        try:
            yield stored
        except BaseException:
            if new_folder:
                shutil.rmtree(stored, ignore_errors=True)
            raise


@contextmanager
def _content_lock(store: Path, sha256: str) -> Iterator[None]:
    """Hold the store's lock of one content while the block runs: an exclusive ``flock`` on
    ``.<sha256>.lock`` in the store (the processes of one host and the threads of one process
    alike), removed again by its holder, so that nothing is left in the store."""
    try:
        store.mkdir(parents=True, exist_ok=True)
        made = True
    except OSError:
        made = False
    if not made:  # storing says what is wrong with the store, in its own words
        yield
        return
    path = store / f".{sha256}.lock"
    while True:
        try:
            lock = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:  # a store this user may read but not write: nothing to serialise
            lock = -1
        if lock < 0:
            yield
            return
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:  # the holder before may have removed it meanwhile: then lock the new one
                same = os.stat(path).st_ino == os.fstat(lock).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(lock)
            raise
        if same:
            break
        os.close(lock)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # while it is held: a waiter finds it gone and takes a new one
        os.close(lock)


def conflict_message(exc: ConflictError) -> str:
    """What to tell the author of a bot folder whose version the database refused: a version
    reused with other content is mended in ``bot.toml`` (the database's own message does not
    say so: a game file's import meets the same refusal, with no bot.toml involved)."""
    if isinstance(exc, VersionReusedError):
        return f"{exc}: bump the version in bot.toml"
    return str(exc)


def _record(
    submission: Submission, stored: Path, archive: bytes, *, db: Database, submitted_by: str
) -> Registered:
    """Store the version of ``submission`` (its files at ``stored``) in the database."""
    manifest = {k: v for k, v in asdict(submission.manifest).items() if v is not None}
    with db.session() as session:
        try:
            result = submit(
                NewSubmission(
                    bot_name=submission.manifest.name,
                    version=submission.manifest.version,
                    sha256=submission.sha256,
                    submitted_by=submitted_by,
                    manifest=manifest,
                    storage_path=str(stored.resolve()),
                    archive=archive,
                ),
                session=session,
            )
        except VersionReusedError as exc:
            raise VersionReusedError(conflict_message(exc)) from None
        row = result.submission
        assert row.id is not None
        return Registered(
            submission_id=row.id,
            name=submission.manifest.name,
            version=row.version,
            sha256=row.sha256,
            created=result.created,
            trusted=row.sha256 in bundled_hashes(),
        )


def materialize(submission_id: int, *, db: Database, store: Path = DEFAULT_STORE) -> Submission:
    """The submission's files as a validated folder under ``store``, unpacked from the database
    when this machine does not have them yet. The content hash is checked either way.

    Under the content's lock (as uploads store and record): an upload of the same content
    that is being refused removes the folder it made, and this must not read it meanwhile."""
    with db.read_session() as session:
        row = get_submission(submission_id, session=session)
        sha256 = row.sha256
        bot = session.get(Bot, row.bot_id)
        # A bot name is [a-z0-9_-]; a version is as stored (an import may hold any text):
        # every surface that shows these errors escapes them (kryt's printable).
        label = f"{submission_id} ({bot.name if bot else '?'}@{row.version})"
    with _content_lock(store, sha256):
        return _materialize(label, submission_id, sha256, db=db, store=store)


def _materialize(
    label: str, submission_id: int, sha256: str, *, db: Database, store: Path
) -> Submission:
    local = store / sha256

    def tampered(why: str) -> SubmissionError:
        return SubmissionError(
            f"stored files of submission {label} at {local} {why}; remove that "
            f"{'folder' if local.is_dir() and not local.is_symlink() else 'path'} to re-fetch it",
            str(local),
        )

    if local.is_symlink() or (local.exists() and not local.is_dir()):
        raise tampered("are not a folder")
    if local.is_dir():
        try:
            submission = load_submission(local)
        except SubmissionError as exc:
            raise tampered(f"are no longer a valid bot ({exc})") from None
        if submission.sha256 == sha256:
            return submission
        raise tampered(f"do not match its hash {sha256} (got {submission.sha256})")
    with db.read_session() as session:
        archive = load_archive(submission_id, session=session)
    if archive is None:
        raise SubmissionError(
            f"submission {label} has no stored archive and is not in {store}", str(local)
        )
    with tempfile.TemporaryDirectory(prefix="kryt-fetch-") as tmp:
        tar_path = Path(tmp) / "submission.tar.gz"
        tar_path.write_bytes(archive)
        unpacked = load_submission(tar_path, unpack_dir=Path(tmp) / "unpacked")
        if unpacked.sha256 != sha256:
            raise SubmissionError(
                f"archive of submission {label} does not match its hash", str(tar_path)
            )
        final = store_submission(unpacked, store)
    return load_submission(final)
