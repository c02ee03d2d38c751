"""Small helpers shared by the CRUD modules."""

from __future__ import annotations

from typing import TypeVar

from sqlmodel import Session, SQLModel

from arena.db.errors import NotFoundError

RowT = TypeVar("RowT", bound=SQLModel)


def get_or_raise(session: Session, model: type[RowT], key: int, what: str) -> RowT:
    """The row of ``model`` with primary key ``key``, or :class:`NotFoundError`."""
    row = session.get(model, key)
    if row is None:
        raise NotFoundError(f"no {what} with id {key!r}")
    return row
