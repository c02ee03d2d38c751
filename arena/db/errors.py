"""Typed errors of the results database; each message says what went wrong and what to do."""

from __future__ import annotations


class DatabaseError(Exception):
    """Base class of every error raised by ``arena.db``."""


class DatabaseURLError(DatabaseError, ValueError):
    """The database URL is malformed or names a backend Kryt Arena does not support."""


class DatabaseUnavailableError(DatabaseError, ConnectionError):
    """The database server cannot be reached, or the database file cannot be opened."""


class DatabaseMissingError(DatabaseUnavailableError):
    """The database does not exist and was not to be created."""


class SchemaError(DatabaseError):
    """The database schema does not fit this version of Kryt Arena."""


class SchemaTooNewError(SchemaError):
    """The database was migrated by a newer Kryt Arena than this one."""


class SchemaOutdatedError(SchemaError):
    """The database needs migrations that were not allowed to run."""


class ForeignDatabaseError(SchemaError):
    """The database holds tables that Kryt Arena did not create; it will not touch them."""


class DamagedSchemaError(SchemaError):
    """The database's schema revision table does not hold one revision; it is not touched."""


class NotFoundError(DatabaseError, LookupError):
    """A row looked up by id or key does not exist."""


class ConflictError(DatabaseError, ValueError):
    """A write would contradict what is stored (no silent overwrite of recorded data)."""


class VersionReusedError(ConflictError):
    """A bot's name and version are stored with other content: versions are immutable. How
    to mend it depends on where the version came from (a ``bot.toml``, a game file), so the
    message says what clashes and the caller says what to do."""


class InvalidRecordError(DatabaseError, ValueError):
    """A record handed to the database layer is malformed (bad card, seat, status...)."""
