"""Uploaded versions: validated exactly like a local submission, stored as *pending*, then
played against the reference bots in the sandbox and made *active* or *rejected*."""

from __future__ import annotations

import logging
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from arena.db import (
    ConflictError,
    Database,
    NewSubmission,
    SubmissionStatus,
    find_bot,
    get_or_create_bot,
    get_submission,
    set_submission_status,
    submit,
)
from arena.db.accounts import Principal, audit, claim_bot, owner_of
from arena.db.ladder import CheckStatus, finish_check, pending_checks, start_check
from arena.service.play import validate_submission
from arena.service.settings import ServiceSettings
from arena.tournament.seeds import draw_seed
from arena.tournament.store import materialize, pack, stored_for_recording
from sandbox import SubmissionError, load_submission
from sandbox.source_check import check_python_sources

log = logging.getLogger(__name__)

ARCHIVE_MAGIC = {b"PK\x03\x04": ".zip", b"\x1f\x8b": ".tar.gz"}


class UploadError(ValueError):
    """The upload is not a valid submission (status 422 unless ``status`` says otherwise)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


class ForbiddenError(PermissionError):
    """The caller may not act on this bot or submission (it belongs to another author)."""


@dataclass(frozen=True, slots=True)
class Accepted:
    """A stored upload: its submission id, identity and whether it is new."""

    submission_id: int
    bot: str
    version: str
    sha256: str
    created: bool
    status: str


def archive_suffix(data: bytes, filename: str) -> str:
    """The archive kind from the content's magic bytes (the name is only a hint)."""
    for magic, suffix in ARCHIVE_MAGIC.items():
        if data.startswith(magic):
            return suffix
    if len(data) > 262 and data[257:262] == b"ustar":
        return ".tar"
    raise UploadError(
        f"upload {filename[:80]!r} is not a .zip, .tar or .tar.gz archive "
        f"(first bytes {data[:4].hex()})"
    )


def accept_upload(
    data: bytes,
    filename: str,
    principal: Principal,
    *,
    db: Database,
    settings: ServiceSettings,
    remote: str = "",
) -> Accepted:
    """Validate the archive like ``kryt submit`` does locally and store it as pending.

    The checks are a local ``kryt submit``'s: the archive (at most
    ``settings.max_upload_bytes``, checked by the caller) unpacks within the submission
    limits (:class:`sandbox.SubmissionLimits`: 20 MiB unpacked...), the manifest and paths
    are valid and the Python sources compile. The bot must be new or already the caller's
    (:class:`ForbiddenError` otherwise); the same content again returns the stored version
    (``created=False``).
    """
    suffix = archive_suffix(data, filename)
    with tempfile.TemporaryDirectory(prefix="kryt-upload-") as tmp:
        path = Path(tmp) / f"upload{suffix}"
        path.write_bytes(data)
        try:
            unpacked = load_submission(path, unpack_dir=Path(tmp) / "unpacked")
            check_python_sources(unpacked)
        except SubmissionError as exc:
            raise UploadError(str(exc)) from None
        # Refused (another author's bot, a reused version, a bundled bot's name...): nothing
        # is left in the store.
        try:
            with stored_for_recording(unpacked, settings.store) as stored:
                return _record_upload(stored, pack(unpacked), principal, db=db, remote=remote)
        except ConflictError as exc:  # a bundled bot's name (refused before storing)
            raise UploadError(str(exc), status=409) from None
        except SubmissionError as exc:  # the files changed while stored (not ours to race)
            raise UploadError(str(exc)) from None


def _record_upload(
    stored: Path, archive: bytes, principal: Principal, *, db: Database, remote: str
) -> Accepted:
    """Store the version held in the store folder ``stored`` as the principal's."""
    try:
        submission = load_submission(stored)
    except SubmissionError as exc:
        raise UploadError(str(exc)) from None
    manifest = {k: v for k, v in asdict(submission.manifest).items() if v is not None}
    name = submission.manifest.name
    try:
        with db.session() as session:
            existing_bot = find_bot(name, session=session)
            if (
                existing_bot is not None
                and existing_bot.id is not None
                and owner_of(existing_bot.id, session=session) != principal.author_id
            ):
                raise ForbiddenError(f"bot {name!r} belongs to another author")
            bot = get_or_create_bot(name, session=session)
            try:
                claim_bot(bot, principal.author_id, session=session)
            except ConflictError:  # another author claimed the new name since the check
                raise ForbiddenError(f"bot {name!r} belongs to another author") from None
            result = submit(
                NewSubmission(
                    bot_name=name,
                    version=submission.manifest.version,
                    sha256=submission.sha256,
                    submitted_by=principal.author_name,
                    manifest=manifest,
                    storage_path=str(stored.resolve()),
                    archive=archive,
                    status=SubmissionStatus.PENDING,
                ),
                session=session,
            )
            row = result.submission
            assert row.id is not None
            if result.created:
                start_check(row.id, principal.author_id, session=session)
            audit(
                "submit",
                "stored" if result.created else "unchanged",
                session=session,
                author_id=principal.author_id,
                token_id=principal.token_id,
                target=f"{name} {row.version} (submission {row.id})",
                detail=f"sha256 {row.sha256}",
                remote=remote,
            )
            return Accepted(row.id, name, row.version, row.sha256, result.created, row.status)
    except ForbiddenError:
        # Audited in a transaction of its own: the refused one above is rolled back.
        with db.session() as session:
            audit(
                "submit",
                "forbidden",
                session=session,
                author_id=principal.author_id,
                token_id=principal.token_id,
                target=name,
                detail="bot belongs to another author",
                remote=remote,
            )
        raise
    except ConflictError as exc:  # a version reused with other content, or a lost race
        raise UploadError(str(exc), status=409) from None


class Validator:
    """Runs validations one at a time in the background; pending ones resume at start."""

    def __init__(self, db: Database, settings: ServiceSettings, *, label_prefix: str) -> None:
        self._db = db
        self._settings = settings
        self._label = label_prefix
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kryt-validate")
        self._lock = threading.Lock()
        self._queued: set[int] = set()

    def resume(self) -> int:
        """Queue every check a previous server left pending; returns how many."""
        with self._db.read_session() as session:
            ids = [c.submission_id for c in pending_checks(session=session)]
        for sid in ids:
            self.enqueue(sid)
        return len(ids)

    def enqueue(self, submission_id: int) -> Future[None] | None:
        """Validate the submission in the background (once, however often it is queued)."""
        with self._lock:
            if submission_id in self._queued:
                return None
            self._queued.add(submission_id)
        return self._pool.submit(self._run, submission_id)

    def _run(self, submission_id: int) -> None:
        try:
            self.validate(submission_id)
        except Exception:
            log.exception("validation of submission %s failed", submission_id)
        finally:
            with self._lock:
                self._queued.discard(submission_id)

    def validate(self, submission_id: int) -> CheckStatus:
        """Play the validation games and record the verdict (active or rejected)."""
        try:
            submission = materialize(submission_id, db=self._db, store=self._settings.store)
            verdict = validate_submission(
                submission,
                settings=self._settings,
                label=f"{self._label}v{submission_id}",
                seed=draw_seed(),  # secret: a bot must not know its validation deals
            )
            passed, message, games = verdict.passed, verdict.message, verdict.games
        except (SubmissionError, ValueError) as exc:
            passed, message, games = False, f"could not be validated: {exc}", []
        status = CheckStatus.PASSED if passed else CheckStatus.FAILED
        with self._db.session() as session:
            row = get_submission(submission_id, session=session)
            set_submission_status(
                submission_id,
                SubmissionStatus.ACTIVE if passed else SubmissionStatus.REJECTED,
                session=session,
            )
            check = finish_check(submission_id, status, message, games, session=session)
            audit(
                "validate",
                status.value,
                session=session,
                author_id=check.author_id,
                target=f"{row.manifest.get('name', '?')} {row.version} "
                f"(submission {submission_id})",
                detail=message,
            )
        return status

    def close(self) -> None:
        """Stop taking work; a validation in progress is finished or redone at next start."""
        self._pool.shutdown(wait=False, cancel_futures=True)
