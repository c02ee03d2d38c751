"""Uploaded versions: validated exactly like a local submission, stored as *pending*, then
played against the reference bots in the sandbox and made *active* or *rejected*."""

from __future__ import annotations

import logging
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import update
from sqlmodel import Session, col

from arena.db import (
    ConflictError,
    Database,
    NewSubmission,
    Submission,
    SubmissionStatus,
    find_bot,
    get_or_create_bot,
    get_submission,
    submit,
)
from arena.db.accounts import Principal, audit, claim_bot, owner_of
from arena.db.ladder import CheckStatus, finish_check, get_check, pending_checks, start_check
from arena.db.models import SubmissionCheck
from arena.service.play import ValidationUnavailable, validate_submission
from arena.service.settings import ServiceSettings
from arena.tournament.seeds import draw_seed
from arena.tournament.store import conflict_message, materialize, pack, stored_for_recording
from sandbox import SubmissionError, SubmissionStoreError, load_submission
from sandbox.death import printable
from sandbox.source_check import check_python_sources

log = logging.getLogger(__name__)

ARCHIVE_MAGIC = {b"PK\x03\x04": ".zip", b"\x1f\x8b": ".tar.gz"}
SERVER_SIDE = "not validated yet: "
"""How the check message of a validation that failed on the server's side begins (the
version stays pending and is validated again)."""
LEGACY_SERVER_SIDE = "could not be validated: "
"""How older releases began the message of a server-side failure they stored as a
rejection: uploading the same content again validates it again."""


class UploadError(ValueError):
    """The upload is not a valid submission (status 422 unless ``status`` says otherwise)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


class StoreUnavailableError(RuntimeError):
    """The arena cannot store an upload now (its store's disk is full or not writable): not
    the author's fault, and the store's path is not theirs to see (a 503; logged)."""


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
    revalidate: bool = False
    """The same content again, whose validation is still to be done (it failed on the
    server's side): queue it again."""


EMPTY_ZIP = b"PK\x05\x06"
"""How a zip archive without a single entry begins (its end-of-directory record)."""
RAW_BODY_HINT = "send the archive itself as the request body, e.g. curl --data-binary @bot.zip"


def archive_suffix(data: bytes, filename: str, content_type: str = "") -> str:
    """The archive kind from the content's magic bytes (the name is only a hint); an
    :class:`UploadError` saying what is wrong otherwise: an archive without files, a
    multipart form (``curl -F``, ``content_type`` or the body's ``--boundary``) instead of
    the archive as the request body, or something else."""
    for magic, suffix in ARCHIVE_MAGIC.items():
        if data.startswith(magic):
            return suffix
    if len(data) > 262 and data[257:262] == b"ustar":
        return ".tar"
    shown = repr(filename[:80])
    if not data:
        raise UploadError(f"upload {shown} is empty: {RAW_BODY_HINT}")
    if data.startswith(EMPTY_ZIP) or (len(data) >= 1024 and not data[:1024].strip(b"\0")):
        kind = ".zip" if data.startswith(EMPTY_ZIP) else ".tar"
        raise UploadError(f"upload {shown} is a {kind} archive with no files in it")
    if content_type.lower().startswith("multipart/") or data.startswith(b"--"):
        raise UploadError(
            f"upload {shown} is a multipart form (curl -F), not an archive: {RAW_BODY_HINT}"
        )
    raise UploadError(
        f"upload {shown} is not a .zip, .tar or .tar.gz archive "
        f"(first bytes {data[:4].hex()}); {RAW_BODY_HINT}"
    )


def accept_upload(
    data: bytes,
    filename: str,
    principal: Principal,
    *,
    db: Database,
    settings: ServiceSettings,
    remote: str = "",
    content_type: str = "",
) -> Accepted:
    """Validate the archive like ``kryt submit`` does locally and store it as pending.

    The checks are a local ``kryt submit``'s: the archive (at most
    ``settings.max_upload_bytes``, checked by the caller) unpacks within the submission
    limits (:class:`sandbox.SubmissionLimits`: 20 MiB unpacked...), the manifest and paths
    are valid and the Python sources compile. The bot must be new or already the caller's
    (:class:`ForbiddenError` otherwise); the same content again returns the stored version
    (``created=False``). ``content_type`` (the request's) only improves messages.
    """
    suffix = archive_suffix(data, filename, content_type)
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
        except SubmissionStoreError as exc:
            log.error("cannot store an upload: %s", exc)
            raise StoreUnavailableError("the arena cannot store submissions right now") from None
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
            revalidate = False
            if result.created:
                start_check(row.id, principal.author_id, session=session)
            else:
                revalidate = _needs_validation(row, session=session)
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
            return Accepted(
                row.id, name, row.version, row.sha256, result.created, row.status, revalidate
            )
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
        raise UploadError(conflict_message(exc), status=409) from None


def _move_status(
    session: Session,
    table: type[Submission] | type[SubmissionCheck],
    key: int,
    old: SubmissionStatus | CheckStatus,
    new: SubmissionStatus | CheckStatus,
) -> bool:
    """Set the status of row ``key`` of ``table`` from ``old`` to ``new`` in one conditional
    update (on PostgreSQL a concurrent one waits for this transaction, then finds the status
    changed); True when it was ``old``."""
    column = SubmissionCheck.submission_id if table is SubmissionCheck else Submission.id
    moved = session.execute(
        update(table)
        .where(col(column) == key, col(table.status) == old.value)
        .values(status=new.value)
        .execution_options(synchronize_session=False)
    )
    return bool(moved.rowcount == 1)  # type: ignore[attr-defined]


def _needs_validation(row: Submission, *, session: Session) -> bool:
    """Whether a version uploaded again still waits for its validation: its check is
    pending (the server failed to run it), or an older release stored such a failure as a
    rejection (reopened here: the version is pending again)."""
    assert row.id is not None
    check = get_check(row.id, session=session)
    if check is None:
        return False
    if check.status == CheckStatus.PENDING.value:
        return row.status == SubmissionStatus.PENDING.value
    if check.status != CheckStatus.FAILED.value or not check.message.startswith(LEGACY_SERVER_SIDE):
        return False
    if not _move_status(
        session, Submission, row.id, SubmissionStatus.REJECTED, SubmissionStatus.PENDING
    ):
        return False
    check.status = CheckStatus.PENDING.value
    check.message = ""
    check.games = []
    check.finished_at = None
    session.add(check)
    session.refresh(row)
    return True


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
        """Play the validation games and record the verdict: the version becomes active or
        rejected, but only while it is still pending (one conditional update: a version
        retired meanwhile stays retired, on PostgreSQL under concurrency too).

        A failure on the server's side (a setting, the sandbox, an aborted series, the
        database) is no verdict: the version and its check stay pending, the check's message
        says why, and the validation runs again when the server restarts or the same content
        is uploaded again. Returns the check's status (PENDING after such a failure).

        A check already decided is not played again, and of two runs of one check (the same
        content uploaded twice at once, to one server or two) only the first verdict is
        recorded: the later run's would replace the games and message the version's status
        was decided on."""
        with self._db.read_session() as session:
            decided = get_check(submission_id, session=session)
            if decided is not None and decided.status != CheckStatus.PENDING.value:
                return CheckStatus(decided.status)
        try:
            submission = materialize(submission_id, db=self._db, store=self._settings.store)
            verdict = validate_submission(
                submission,
                settings=self._settings,
                label=f"{self._label}v{submission_id}",
                seed=draw_seed(),  # secret: a bot must not know its validation deals
            )
        except ValidationUnavailable as exc:
            log.error("validation of submission %s could not run: %s", submission_id, exc)
            self._postpone(submission_id, str(exc))
            return CheckStatus.PENDING
        except Exception as exc:
            log.exception("validation of submission %s failed on our side", submission_id)
            self._postpone(submission_id, printable(f"{type(exc).__name__}: {exc}"))
            return CheckStatus.PENDING
        passed, message, games = verdict.passed, verdict.message, verdict.games
        status = CheckStatus.PASSED if passed else CheckStatus.FAILED
        target = SubmissionStatus.ACTIVE if passed else SubmissionStatus.REJECTED
        with self._db.session() as session:
            # Claims the check (on PostgreSQL a concurrent claim waits for this transaction,
            # then finds the check decided): only the first verdict is recorded.
            claimed = _move_status(
                session, SubmissionCheck, submission_id, CheckStatus.PENDING, status
            )
            if not claimed:
                log.info("validation of submission %s: decided by another run", submission_id)
                first = get_check(submission_id, session=session)
                return CheckStatus(first.status) if first is not None else status
            changed = _move_status(
                session, Submission, submission_id, SubmissionStatus.PENDING, target
            )
            row = get_submission(submission_id, session=session)
            check = finish_check(submission_id, status, message, games, session=session)
            detail = message
            if not changed:
                detail = f"{message}; the version stays {row.status}"
            audit(
                "validate",
                status.value,
                session=session,
                author_id=check.author_id,
                target=f"{row.manifest.get('name', '?')} {row.version} "
                f"(submission {submission_id})",
                detail=detail,
            )
        return status

    def _postpone(self, submission_id: int, why: str) -> None:
        """Note on the (still pending) check why the validation could not run."""
        message = (
            f"{SERVER_SIDE}the server could not run the validation ({why[:2000]}); it runs "
            "again when the server restarts or when the same content is uploaded again"
        )
        try:
            with self._db.session() as session:
                check = session.get(SubmissionCheck, submission_id)
                if check is None or check.status != CheckStatus.PENDING.value:
                    return
                check.message = message.replace("\x00", "\ufffd")
                session.add(check)
                row = get_submission(submission_id, session=session)
                audit(
                    "validate",
                    "postponed",
                    session=session,
                    author_id=check.author_id,
                    target=f"{row.manifest.get('name', '?')} {row.version} "
                    f"(submission {submission_id})",
                    detail=message,
                )
        except Exception:  # the database itself may be what failed
            log.exception("could not note the failed validation of submission %s", submission_id)

    def close(self) -> None:
        """Stop taking work; a validation in progress is finished or redone at next start."""
        self._pool.shutdown(wait=False, cancel_futures=True)
