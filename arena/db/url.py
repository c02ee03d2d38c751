"""Which database to open: an explicit URL, else ``KRYT_DATABASE_URL``, else ``./kryt.db``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote_plus

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
    _refuse_undecodable(text)
    if "://" not in text:
        # A bare path: the SQLite file it names (resolved so the URL survives a chdir).
        _refuse_nul(text, text.replace("\x00", "%00"))
        path = _file_path(text, text)
        return URL.create("sqlite", database=str(path)).render_as_string(hide_password=False)
    _refuse_nul(text, mask_url(text))
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise DatabaseURLError(
            f"malformed database URL {mask_url(text)!r}: {exc}; {_HELP}"
        ) from exc
    except ValueError:
        # SQLAlchemy reads the port with int(): "5432x", or the host "[::1" cut short. Its
        # message is not shown: it quotes a piece of the URL, which could be the password.
        raise DatabaseURLError(
            f"malformed database URL {mask_url(text)!r}: its host or port cannot be read (the"
            " port is a number from 1 to 65535; an IPv6 host goes in brackets, as [::1]);"
            f" {_HELP}"
        ) from None
    parts = (url.username, url.password, url.host, url.database, *url.query.values())
    _refuse_nul(" ".join(str(p) for p in parts if p is not None), mask_url(text))
    if url.port is not None and not 1 <= url.port <= 65535:
        raise DatabaseURLError(
            f"malformed database URL {mask_url(text)!r}: port {url.port} is not in 1-65535; {_HELP}"
        )
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
        path = _file_path(url.database, mask_url(text))
        url = url.set(drivername="sqlite", database=str(path))
    elif not url.database:
        raise DatabaseURLError(f"no database name in {mask_url(text)!r}; {_HELP}")
    return url.render_as_string(hide_password=False)


def _file_path(name: str, shown: str) -> Path:
    """The absolute path of a SQLite file name (``~`` and ``~user`` expanded)."""
    try:
        return Path(name).expanduser().resolve()
    except RuntimeError:  # ~user of a user that does not exist
        raise DatabaseURLError(
            f"database path in {shown!r} starts with a home folder that does not exist; {_HELP}"
        ) from None


def _refuse_undecodable(text: str) -> None:
    """DatabaseURLError when ``text`` is not UTF-8 text: a path of bytes that are not
    (``\\xff`` reaches Python as a lone surrogate), which no URL and no database's record of
    its own file can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        try:  # the path's own bytes, as the file system has them (\xff)
            safe = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
        shown = mask_url(safe) if "://" in safe else safe
        raise DatabaseURLError(
            f"database URL or path '{shown}' is not UTF-8 text (character {exc.start + 1} is"
            f" not); rename the file or choose another path; {_HELP}"
        ) from None


def _refuse_nul(value: str, shown: str) -> None:
    """DatabaseURLError when ``value`` (the URL, or a part of it once decoded) holds a NUL
    byte: no file name, host or password can (``%00`` in a URL decodes to one). ``shown``
    is the URL as the message may show it (password masked)."""
    if "\x00" in value:
        raise DatabaseURLError(
            f"database URL {shown!r} contains a NUL byte (%00), which no file name,"
            f" host or password can hold; {_HELP}"
        )


def backend_of(url: str | URL) -> str:
    """``"sqlite"`` or ``"postgresql"`` for a normalised URL."""
    parsed = make_url(url) if isinstance(url, str) else url
    try:
        return _SUPPORTED[parsed.drivername]
    except KeyError:
        raise DatabaseURLError(
            f"unsupported database URL scheme {parsed.drivername!r}; {_HELP}"
        ) from None


_USER_AND_PASSWORD = re.compile(r"^(?P<head>[^:/@]*://[^:/@]*:).*@", re.DOTALL)
"""``scheme://user:`` then everything up to the last ``@``: where a password would be."""


_SECRET_WORDS = ("password", "passwd", "secret", "token")
"""A query parameter whose name holds one of these is a credential: libpq's ``password`` and
``sslpassword``, and anything else that reads like one."""

_SECRET_QUERY_VALUE = re.compile(
    r"(?P<key>[?&][^=&#]*(?:" + "|".join(_SECRET_WORDS) + r")[^=&#]*=)[^&#]*", re.IGNORECASE
)
"""A credential's ``?name=value`` (or ``&name=value``) in a URL's text: its value."""

_MASK = "***"


def _secret_key(key: str) -> bool:
    return any(word in key.lower() for word in _SECRET_WORDS)


def mask_url(url: str | URL) -> str:
    """The URL with its password replaced by ``***``, fit for messages and logs.

    The password is masked wherever it is given: after ``user:``, and as the value of a
    query parameter such as ``?password=`` or ``?sslpassword=`` (which libpq accepts too).
    A URL that cannot be parsed is shown as given but with everything between ``user:`` and
    the last ``@`` replaced (more than the password, when in doubt) and the values of such
    query parameters masked, NUL bytes as ``%00``.
    """
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<unparseable URL>"
    except ValueError:
        assert isinstance(url, str)
        masked = _USER_AND_PASSWORD.sub(rf"\g<head>{_MASK}@", url)
        masked = _SECRET_QUERY_VALUE.sub(rf"\g<key>{_MASK}", masked)
        return masked.replace("\x00", "%00")
    if any(_secret_key(key) for key in parsed.query):
        parsed = parsed.set(
            query={
                key: (_MASK if _secret_key(key) else value) for key, value in parsed.query.items()
            }
        )
    rendered = parsed.render_as_string(hide_password=True)
    # The query is rendered %-encoded: show the mask as the password's is shown.
    return rendered.replace(f"={quote_plus(_MASK)}", f"={_MASK}").replace("\x00", "%00")
