"""Authors, their API tokens, who owns which bot, and the audit log (arena service).

Tokens are random secrets shown once; only their sha256 is stored, so a stolen database does
not give away working tokens. A token is valid while it is neither revoked nor expired and
its author is not disabled; every check of a token is a lookup by hash.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import Session, col, select

from arena.db.errors import ConflictError, InvalidRecordError, NotFoundError
from arena.db.models import ApiToken, AuditEntry, Author, Bot, BotOwner, Invite
from arena.db.types import utcnow
from sandbox.death import printable

AUTHOR_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}\Z")
TOKEN_PREFIX = "kryt_"
INVITE_PREFIX = "kryt-invite_"
TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 200
"""Longer presented tokens are refused before hashing (they cannot be ours)."""
MAX_LIFETIME_DAYS = 36500
"""The longest lifetime of a token or an invite: 100 years (longer overflows dates)."""
MAX_LIFETIME = timedelta(days=MAX_LIFETIME_DAYS)


@dataclass(frozen=True, slots=True)
class NewToken:
    """A freshly created token: the secret (show it once, never stored) and its row id."""

    token_id: int
    secret: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the author and the token (None for a password login session)."""

    author_id: int
    author_name: str
    token_id: int | None


def hash_token(secret: str) -> str:
    """The stored form of an API token (sha256 hex): tokens are random, so no salt or slow
    hash is needed, unlike passwords."""
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def check_author_name(name: object) -> str:
    """``name`` if an author may have it, else :class:`InvalidRecordError` (checked before
    anything is asked or written)."""
    if not isinstance(name, str) or AUTHOR_NAME_RE.fullmatch(name) is None:
        raise InvalidRecordError(f"author name must match [a-z0-9][a-z0-9_-]{{0,39}}: {name!r}")
    return name


def create_author(name: str, *, session: Session, password_hash: str | None = None) -> Author:
    """A new author; :class:`ConflictError` if the name is taken."""
    check_author_name(name)
    if find_author(name, session=session) is not None:
        raise ConflictError(f"an author named {name!r} already exists")
    author = Author(name=name, password_hash=password_hash)
    session.add(author)
    session.flush()
    return author


def find_author(name: str, *, session: Session) -> Author | None:
    """The author called ``name``, or None (at once for a name no author can have: one with
    a NUL, which PostgreSQL cannot even compare, names nobody)."""
    if not isinstance(name, str) or AUTHOR_NAME_RE.fullmatch(name) is None:
        return None
    return session.exec(select(Author).where(Author.name == name)).first()


def get_author(name: str, *, session: Session) -> Author:
    """The author called ``name``, or :class:`NotFoundError`."""
    author = find_author(name, session=session)
    if author is None:
        raise NotFoundError(f"no author named {name!r}")
    return author


def list_authors(*, session: Session) -> list[Author]:
    """Every author, by name."""
    return list(session.exec(select(Author).order_by(col(Author.name))).all())


def set_password_hash(name: str, password_hash: str | None, *, session: Session) -> Author:
    """Store (or clear) an author's password hash, computed by the caller."""
    author = get_author(name, session=session)
    author.password_hash = password_hash
    session.add(author)
    session.flush()
    return author


def _check_lifetime(lifetime: timedelta, what: str) -> None:
    """:class:`InvalidRecordError` unless ``lifetime`` is positive and at most
    :data:`MAX_LIFETIME` (the expiry date must stay a date)."""
    if not timedelta(0) < lifetime <= MAX_LIFETIME:
        raise InvalidRecordError(
            f"{what} lifetime must be positive and at most {MAX_LIFETIME_DAYS} days, got {lifetime}"
        )


def create_token(
    author_name: str, *, session: Session, lifetime: timedelta, label: str = ""
) -> NewToken:
    """A new API token for the author, valid for ``lifetime``; the secret is returned once."""
    _check_lifetime(lifetime, "a token's")
    author = get_author(author_name, session=session)
    assert author.id is not None
    secret = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    expires = utcnow() + lifetime
    row = ApiToken(
        author_id=author.id, token_hash=hash_token(secret), label=label[:100], expires_at=expires
    )
    session.add(row)
    session.flush()
    assert row.id is not None
    return NewToken(row.id, secret, expires)


def list_tokens(author_name: str, *, session: Session) -> list[ApiToken]:
    """The author's tokens (revoked and expired ones too), oldest first."""
    author = get_author(author_name, session=session)
    query = select(ApiToken).where(ApiToken.author_id == author.id).order_by(col(ApiToken.id))
    return list(session.exec(query).all())


def revoke_token(token_id: int, *, session: Session) -> ApiToken:
    """Revoke a token now (idempotent); :class:`NotFoundError` for an unknown id."""
    row = session.get(ApiToken, token_id)
    if row is None:
        raise NotFoundError(f"no API token with id {token_id!r}")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        session.add(row)
        session.flush()
    return row


def authenticate_token(secret: str, *, session: Session) -> Principal | None:
    """The principal of a valid token (and its last use noted), or None for anything else:
    unknown, revoked, expired, or of a disabled author. Callers say only "invalid token"."""
    if not secret or len(secret) > MAX_TOKEN_CHARS or not secret.isascii():
        return None  # ours are short ASCII
    row = session.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(secret))).first()
    now = utcnow()
    if row is None or row.revoked_at is not None or row.expires_at <= now:
        return None
    author = session.get(Author, row.author_id)
    if author is None or author.disabled or author.id is None:
        return None
    row.last_used_at = now
    session.add(row)
    return Principal(author.id, author.name, row.id)


def set_author_disabled(name: str, disabled: bool, *, session: Session) -> Author:
    """Disable (or enable again) an author. A disabled author's tokens and logins are
    refused at once and their bots leave the ladder; nothing of theirs is deleted."""
    author = get_author(name, session=session)
    author.disabled = disabled
    session.add(author)
    session.flush()
    return author


# ---------------------------------------------------------------------------- invites


class InviteError(ValueError):
    """An invite code that cannot be used: unknown, already used or expired (callers tell
    the person only that the code is not valid)."""


@dataclass(frozen=True, slots=True)
class NewInvite:
    """A freshly created invite: the code (show it once, never stored) and its row id."""

    invite_id: int
    code: str
    expires_at: datetime


def create_invite(*, session: Session, lifetime: timedelta, label: str = "") -> NewInvite:
    """A one-use invite code valid for ``lifetime``; the code is returned once."""
    _check_lifetime(lifetime, "an invite's")
    code = INVITE_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    expires = utcnow() + lifetime
    row = Invite(code_hash=hash_token(code), label=label[:100], expires_at=expires)
    session.add(row)
    session.flush()
    assert row.id is not None
    return NewInvite(row.id, code, expires)


def list_invites(*, session: Session) -> list[Invite]:
    """Every invite (used and expired ones too), oldest first."""
    return list(session.exec(select(Invite).order_by(col(Invite.id))).all())


def redeem_invite(
    code: str,
    name: str,
    *,
    session: Session,
    password_hash: str | None,
    token_lifetime: timedelta,
) -> tuple[Author, NewToken]:
    """Use an invite: create the author ``name`` and their first token, in the caller's
    transaction.

    The code is spent by a conditional update (unused and unexpired), so two people racing
    with one code cannot both register. :class:`InviteError` for a code that is unknown,
    used or expired; :class:`ConflictError` / :class:`InvalidRecordError` for a taken or
    malformed name (the caller rolls back, so the code stays unused).
    """
    if not code or len(code) > MAX_TOKEN_CHARS or not code.isascii():
        raise InviteError("invalid invite code")
    now = utcnow()
    row = session.exec(select(Invite).where(Invite.code_hash == hash_token(code))).first()
    if row is None or row.used_at is not None or row.expires_at <= now:
        raise InviteError("invalid invite code (unknown, already used or expired)")
    author = create_author(name, session=session, password_hash=password_hash)
    spent = session.execute(
        update(Invite)
        .where(col(Invite.id) == row.id, col(Invite.used_at).is_(None))
        .values(used_at=now, author_id=author.id)
    )
    if spent.rowcount != 1:  # type: ignore[attr-defined]
        raise InviteError("invalid invite code (already used)")
    token = create_token(name, session=session, lifetime=token_lifetime, label="invite")
    return author, token


def owner_of(bot_id: int, *, session: Session) -> int | None:
    """The id of the author who owns the bot, or None (bots stored locally have no owner)."""
    row = session.get(BotOwner, bot_id)
    return None if row is None else row.author_id


def claim_bot(bot: Bot, author_id: int, *, session: Session) -> None:
    """Make ``author_id`` the bot's owner if it has none; :class:`ConflictError` if another
    author (or the organiser, for a bot stored without an owner) has it."""
    assert bot.id is not None
    owner = owner_of(bot.id, session=session)
    if owner == author_id:
        return
    if owner is not None:
        raise ConflictError(f"bot {bot.name!r} belongs to another author")
    session.add(BotOwner(bot_id=bot.id, author_id=author_id))
    session.flush()


def bots_of_author(author_id: int, *, session: Session) -> list[Bot]:
    """The bots an author owns, by name."""
    query = (
        select(Bot)
        .join(BotOwner, col(BotOwner.bot_id) == col(Bot.id))
        .where(BotOwner.author_id == author_id)
        .order_by(col(Bot.name))
    )
    return list(session.exec(query).all())


def storable_text(text: str, limit: int) -> str:
    """``text`` with control, format and surrogate characters escaped as
    :func:`sandbox.death.printable` escapes them (``\\x00``, ``\\u202e``), cut to ``limit``
    characters without cutting an escape."""
    out: list[str] = []
    size = 0
    for char in text:
        shown = printable(char)
        if size + len(shown) > limit:
            break
        out.append(shown)
        size += len(shown)
    return "".join(out)


def audit(
    action: str,
    outcome: str,
    *,
    session: Session,
    author_id: int | None = None,
    token_id: int | None = None,
    target: str = "",
    detail: str = "",
    remote: str = "",
) -> AuditEntry:
    """Append one entry to the audit log (in the caller's transaction).

    The texts may come from anyone (a bot name in a URL, a file name header): control,
    format and surrogate characters are stored as escapes (``\\x00``), so every text can
    be stored (PostgreSQL refuses NUL) and none can disturb whoever reads the log.
    """
    entry = AuditEntry(
        author_id=author_id,
        token_id=token_id,
        action=storable_text(action, 40),
        outcome=storable_text(outcome, 16),
        target=storable_text(target, 200),
        detail=storable_text(detail, 2000),
        remote=storable_text(remote, 64),
    )
    session.add(entry)
    session.flush()
    return entry


def audit_entries(
    *, session: Session, author_id: int | None = None, limit: int = 200
) -> list[AuditEntry]:
    """The newest audit entries first, optionally of one author."""
    query = select(AuditEntry)
    if author_id is not None:
        query = query.where(AuditEntry.author_id == author_id)
    query = query.order_by(col(AuditEntry.id).desc()).limit(limit)
    return list(session.exec(query).all())
