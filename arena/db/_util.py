"""Small helpers shared by the CRUD modules."""

from __future__ import annotations

from typing import TypeVar

from sqlmodel import Session, SQLModel

from arena.db.errors import NotFoundError

RowT = TypeVar("RowT", bound=SQLModel)


MAX_ID = 2**31 - 1
"""The largest id a row can have: ids are ``INTEGER`` columns, a signed 32-bit integer on
PostgreSQL (SQLite would take 64 bits); a larger key is no row on either database."""


def storable(text: str) -> str:
    """``text`` as both databases store it: PostgreSQL's text cannot hold NUL, so a NUL a
    bot wrote (in its output, an error message, a reply) is kept as U+FFFD on either."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: a lone surrogate (JSON's ``"\\ud800"`` decodes to
    one) does not, and no database, hash or file can take it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def get_or_raise(session: Session, model: type[RowT], key: int, what: str) -> RowT:
    """The row of ``model`` with primary key ``key``, or :class:`NotFoundError` (also for a
    key no row can have, which the database driver would refuse with an OverflowError)."""
    if isinstance(key, int) and not -MAX_ID - 1 <= key <= MAX_ID:
        raise NotFoundError(f"no {what} with id {key!r}")
    row = session.get(model, key)
    if row is None:
        raise NotFoundError(f"no {what} with id {key!r}")
    return row
