"""Bots and their immutable submissions (versions)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from arena.db._util import get_or_raise
from arena.db.enums import SubmissionStatus
from arena.db.errors import ConflictError, InvalidRecordError, NotFoundError, VersionReusedError
from arena.db.models import Bot, Submission, SubmissionArchive
from arena.db.records import BOT_NAME_RE, NewSubmission
from arena.db.types import utcnow


@dataclass(frozen=True)
class SubmitResult:
    """The stored submission and whether this call created it (False: it was already there)."""

    submission: Submission
    created: bool


def get_or_create_bot(name: str, *, session: Session) -> Bot:
    """The bot called ``name``, created if new."""
    if not isinstance(name, str) or BOT_NAME_RE.fullmatch(name) is None:
        raise InvalidRecordError(f"bot name must match [a-z0-9][a-z0-9_-]{{0,39}}, got {name!r}")
    existing = find_bot(name, session=session)
    if existing is not None:
        return existing
    try:
        # A savepoint, so losing a race with another writer does not abort the transaction.
        with session.begin_nested():
            bot = Bot(name=name)
            session.add(bot)
    except IntegrityError:
        return get_bot(name, session=session)
    return bot


def find_bot(name: str, *, session: Session) -> Bot | None:
    """The bot called ``name``, or None."""
    return session.exec(select(Bot).where(Bot.name == name)).first()


def get_bot(name: str, *, session: Session) -> Bot:
    """The bot called ``name``, or :class:`NotFoundError`."""
    bot = find_bot(name, session=session)
    if bot is None:
        raise NotFoundError(f"no bot named {name!r}")
    return bot


def list_bots(*, session: Session) -> list[Bot]:
    """Every bot, by name."""
    return list(session.exec(select(Bot).order_by(col(Bot.name))).all())


def submit(new: NewSubmission, *, session: Session) -> SubmitResult:
    """Store a bot version; idempotent on ``sha256``.

    Submitting content already stored under the same bot and version returns the stored
    row (``created=False``). The same content under another name or version, or another
    content under an existing name and version, raises :class:`ConflictError` (the latter
    :class:`VersionReusedError`, whose caller says how to mend it): versions are immutable.
    """
    existing = _matching_submission(new, session=session)
    if existing is not None:
        return SubmitResult(existing, created=False)
    bot = get_or_create_bot(new.bot_name, session=session)
    assert bot.id is not None
    submission = Submission(
        bot_id=bot.id,
        version=new.version,
        sha256=new.sha256,
        submitted_by=new.submitted_by,
        submitted_at=new.submitted_at or utcnow(),
        status=new.status.value,
        storage_path=new.storage_path,
        manifest=dict(new.manifest),
    )
    try:
        with session.begin_nested():
            session.add(submission)
            session.flush()
            if new.archive is not None:
                assert submission.id is not None
                session.add(SubmissionArchive(submission_id=submission.id, data=new.archive))
    except IntegrityError:
        # Another writer stored it meanwhile: same checks as above against its row.
        existing = _matching_submission(new, session=session)
        if existing is None:
            raise
        return SubmitResult(existing, created=False)
    return SubmitResult(submission, created=True)


def _matching_submission(new: NewSubmission, *, session: Session) -> Submission | None:
    by_sha = find_submission_by_sha256(new.sha256, session=session)
    if by_sha is not None:
        bot = session.get(Bot, by_sha.bot_id)
        assert bot is not None
        if bot.name != new.bot_name or by_sha.version != new.version:
            raise ConflictError(
                f"content sha256 {new.sha256} is already stored as {bot.name} "
                f"{by_sha.version} (submission {by_sha.id}); it cannot also be "
                f"{new.bot_name} {new.version}"
            )
        return by_sha
    bot_row = find_bot(new.bot_name, session=session)
    if bot_row is not None:
        same_version = session.exec(
            select(Submission).where(
                Submission.bot_id == bot_row.id, Submission.version == new.version
            )
        ).first()
        if same_version is not None and same_version.sha256 == new.sha256:
            # Stored by another writer between the two reads (each statement of a
            # READ COMMITTED transaction sees what was committed before it began).
            return same_version
        if same_version is not None:
            raise VersionReusedError(
                f"{new.bot_name} {new.version} already exists with different content "
                f"(sha256 {same_version.sha256}, submission {same_version.id}); versions are "
                "immutable"
            )
    return None


def get_submission(submission_id: int, *, session: Session) -> Submission:
    """The submission with this id, or :class:`NotFoundError`."""
    return get_or_raise(session, Submission, submission_id, "submission")


def find_submission_by_sha256(sha256: str, *, session: Session) -> Submission | None:
    """The submission with this content hash, or None."""
    return session.exec(select(Submission).where(Submission.sha256 == sha256)).first()


def list_submissions(
    *,
    session: Session,
    bot_name: str | None = None,
    status: SubmissionStatus | None = None,
) -> list[Submission]:
    """Submissions, oldest first, optionally of one bot and/or in one status."""
    query = select(Submission)
    if bot_name is not None:
        query = query.join(Bot, col(Bot.id) == col(Submission.bot_id)).where(Bot.name == bot_name)
    if status is not None:
        query = query.where(Submission.status == status.value)
    query = query.order_by(col(Submission.submitted_at), col(Submission.id))
    return list(session.exec(query).all())


def latest_submission(
    bot_name: str, *, session: Session, status: SubmissionStatus = SubmissionStatus.ACTIVE
) -> Submission:
    """The bot's most recent submission in ``status``, or :class:`NotFoundError`."""
    found = list_submissions(session=session, bot_name=bot_name, status=status)
    if not found:
        raise NotFoundError(f"bot {bot_name!r} has no submission with status {status.value!r}")
    return found[-1]


def set_submission_status(
    submission_id: int, status: SubmissionStatus, *, session: Session
) -> Submission:
    """Change a submission's status (its content and games are never touched)."""
    submission = get_submission(submission_id, session=session)
    submission.status = SubmissionStatus(status).value
    session.add(submission)
    session.flush()
    return submission


def load_archive(submission_id: int, *, session: Session) -> bytes | None:
    """The stored archive of a submission, or None when it was stored by path only."""
    get_submission(submission_id, session=session)
    archive = session.get(SubmissionArchive, submission_id)
    return None if archive is None else archive.data


def submission_labels(*, session: Session) -> dict[int, tuple[str, str]]:
    """``{submission_id: (bot name, version)}`` for every submission, in one query."""
    query = select(Submission.id, Bot.name, Submission.version).join(
        Bot, col(Bot.id) == col(Submission.bot_id)
    )
    return {
        sid: (name, version)
        for sid, name, version in session.exec(query)
        if sid is not None  # ids of stored rows are never None; this narrows the type
    }


def bot_of(submission: Submission, *, session: Session) -> Bot:
    """The bot a submission belongs to."""
    return get_or_raise(session, Bot, submission.bot_id, "bot")
