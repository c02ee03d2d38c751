"""Which database to open: an explicit URL, else ``KRYT_DATABASE_URL``, else ``./kryt.db``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from arena.db.errors import DatabaseURLError

ENV_VAR = "KRYT_DATABASE_URL"
DEFAULT_FILENAME = "kryt.db"

# Driver names we ship; anything else would need a driver that is not installed.
_SUPPORTED = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite", "postgresql+psycopg": "postgresql"}
# Spellings that mean PostgreSQL without naming our driver: accepted and pointed at psycopg 3.
_POSTGRES_ALIASES = {"postgresql", "postgres"}

_HELP = (
    "use sqlite:///path/to/kryt.db (or a plain file path) or "
    "postgresql+psycopg://user:password@host:5432/dbname"
)


def resolve_database_url(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> str:
    """Return the database URL to use, normalised.

    Precedence: ``explicit`` (a URL or a file path, e.g. from a ``--db`` flag), then the
    ``KRYT_DATABASE_URL`` environment variable, then the SQLite file ``kryt.db`` in ``cwd``
    (default: the working directory). An empty value counts as absent.
    """
    env = os.environ if environ is None else environ
    if explicit is not None and str(explicit).strip():
        return normalize_url(explicit)
    from_env = env.get(ENV_VAR, "").strip()
    if from_env:
        return normalize_url(from_env)
    base = Path.cwd() if cwd is None else Path(cwd)
    return normalize_url(base / DEFAULT_FILENAME)


def normalize_url(raw: str | os.PathLike[str]) -> str:
    """Validate a URL (or a plain path to a SQLite file) and return it in canonical form.

    ``postgresql://`` and ``postgres://`` are rewritten to ``postgresql+psycopg://``, the
    driver Kryt Arena ships. Raises :class:`DatabaseURLError` for anything else.
    """
    text = os.fspath(raw).strip()
    if not text:
        raise DatabaseURLError(f"empty database URL; {_HELP}")
    if "://" not in text:
        # A bare path: the SQLite file it names (resolved so the URL survives a chdir).
        path = Path(text).expanduser().resolve()
        return URL.create("sqlite", database=str(path)).render_as_string(hide_password=False)
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise DatabaseURLError(
            f"malformed database URL {mask_url(text)!r}: {exc}; {_HELP}"
        ) from exc
    driver = url.drivername
    if driver in _POSTGRES_ALIASES:
        url = url.set(drivername="postgresql+psycopg")
    elif driver not in _SUPPORTED:
        raise DatabaseURLError(
            f"unsupported database URL scheme {driver!r} in {mask_url(text)!r}; {_HELP}"
        )
    if backend_of(url) == "sqlite":
        if not url.database or url.database == ":memory:":
            raise DatabaseURLError(
                f"in-memory SQLite ({mask_url(text)!r}) would lose every result when the "
                f"process exits; name a file instead: {_HELP}"
            )
        path = Path(url.database).expanduser()
        url = url.set(drivername="sqlite", database=str(path.resolve()))
    elif not url.database:
        raise DatabaseURLError(f"no database name in {mask_url(text)!r}; {_HELP}")
    return url.render_as_string(hide_password=False)


def backend_of(url: str | URL) -> str:
    """``"sqlite"`` or ``"postgresql"`` for a normalised URL."""
    parsed = make_url(url) if isinstance(url, str) else url
    try:
        return _SUPPORTED[parsed.drivername]
    except KeyError:
        raise DatabaseURLError(
            f"unsupported database URL scheme {parsed.drivername!r}; {_HELP}"
        ) from None


def mask_url(url: str | URL) -> str:
    """The URL with its password replaced by ``***``, fit for messages and logs."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<unparseable URL>"
    return parsed.render_as_string(hide_password=True)
