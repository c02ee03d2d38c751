"""Apply the packaged Alembic migrations, programmatically and under a lock.

Run as a module for maintenance::

    python -m arena.db.migrate current [URL]     # revision of a database vs. the code
    python -m arena.db.migrate upgrade [URL]     # migrate a database to the code's head
    python -m arena.db.migrate revision -m "add x"   # new revision from the models
    python -m arena.db.migrate rebuild-boards [URL]  # replay live Elo and the boards' tallies

``URL`` defaults as everywhere (``KRYT_DATABASE_URL``, else ``./kryt.db``).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, Engine

from arena.db.errors import (
    DamagedSchemaError,
    ForeignDatabaseError,
    SchemaOutdatedError,
    SchemaTooNewError,
)
from arena.db.models import metadata

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
VERSIONS_DIR = MIGRATIONS_DIR / "versions"
# Any fixed 64-bit key: PostgreSQL advisory lock serialising concurrent migrators.
_PG_LOCK_KEY = 0x4B5259545F4442  # "KRYT_DB"


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic configuration pointing at the packaged migrations (no ``alembic.ini``)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", str(VERSIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision this code knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships revisions
        raise RuntimeError(f"no migrations found in {VERSIONS_DIR}")
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at, or ``None`` for a database never migrated."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def upgrade_connection(connection: Connection, *, where: str, allow: bool = True) -> str:
    """Bring the database on ``connection`` (inside its transaction) to the head revision.

    ``where`` names the database in error messages. The database is checked first
    (:func:`check_database`): one that is not ours, damaged or newer than the code is
    refused before anything is written. With ``allow=False`` nothing is changed and a
    database that is behind raises :class:`SchemaOutdatedError`. Returns the revision.
    """
    if connection.dialect.name == "postgresql":
        # Two runners opening a fresh database at once must not both create the tables.
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})")
    current = check_database(connection, where=where)
    head = newest_revision_file()
    if current == head:
        return head  # up to date: no need to load Alembic (~0.2 s a command)
    if not allow:
        raise SchemaOutdatedError(
            f"database {where} is at schema revision {current!r}, older than {head!r}; run "
            "`python -m arena.db.migrate upgrade` (migrations only add, never delete)"
        )
    from alembic import command

    command.upgrade(alembic_config(connection), "head")
    return head_revision()


def known_revisions() -> frozenset[str]:
    """Every revision this code ships, read from the file names (``NNNN_*.py``), without
    loading Alembic (``tests/db`` checks the names against Alembic's revisions)."""
    return frozenset(path.name[:4] for path in VERSIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.py"))


def _shown(names: list[str]) -> str:
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


_POINT_ELSEWHERE = (
    "it will not be touched. Point --database / KRYT_DATABASE_URL at a Kryt database, an"
    " empty one or a new SQLite file instead"
)


def check_database(connection: Connection, *, where: str) -> str | None:
    """The schema revision of a Kryt Arena database, None for an empty one; reads only.

    Everything that makes the database unusable is refused here, before anything is written
    to it (not even SQLite's journal mode): a damaged revision table
    (:class:`DamagedSchemaError`); another application's database
    (:class:`ForeignDatabaseError`): tables without a Kryt revision, a revision (Alembic's
    table is common) beside none of Kryt's tables (other tables beside Kryt's are
    allowed); a revision this code does not know on a Kryt database (:class:`SchemaTooNewError`,
    naming both revisions). A revision of ours whose tables are partly missing is not
    refused here: it is damage, named when a statement meets it.
    """
    _check_version_table(connection, where)
    stored = _stored_revision(connection)
    tables = set(inspect(connection).get_table_names())
    ours = sorted(tables & set(metadata.tables))
    others = sorted(tables - set(metadata.tables) - {"alembic_version"})
    if stored is None:
        if ours or others:
            # Another application's database (ours always has a revision): adding our
            # tables to it would be as wrong as clashing with its own.
            what = "tables named" if ours else "tables of its own:"
            raise ForeignDatabaseError(
                f"database {where} already has {what} {_shown(ours or others)} but no Kryt"
                f" Arena schema revision; {_POINT_ELSEWHERE}"
            )
        return None
    if not ours:
        # Alembic's version table is not ours alone: another application's revision, even
        # one spelled like ours ("0011"), beside none of our tables.
        theirs = f"; its tables: {_shown(others)}" if others else ""
        raise ForeignDatabaseError(
            f"database {where} has the schema revision {stored!r} of another application"
            f" (none of Kryt Arena's tables{theirs}); {_POINT_ELSEWHERE}"
        )
    if stored not in known_revisions():
        raise SchemaTooNewError(
            f"database {where} is at schema revision {stored!r}, newer than this Kryt Arena"
            f" knows (its newest is {newest_revision_file()!r}): it was migrated by a newer"
            " kryt-arena; upgrade kryt-arena (pip install -U kryt-arena) to use it"
        )
    # Tables of someone else's beside ours are left alone, as they always were: a shared
    # PostgreSQL database, or an analyst's own table in the SQLite file.
    return stored


def newest_revision_file() -> str:
    """The head revision by file name: revisions are numbered ``NNNN`` in ``NNNN_*.py`` files
    and chained in order (``tests/db`` checks this against Alembic's own head)."""
    return max(path.name[:4] for path in VERSIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.py"))


def _stored_revision(connection: Connection) -> str | None:
    """The ``alembic_version`` row, read with plain SQL (None without the table)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    return str(rows[0][0]) if len(rows) == 1 else None


def _check_version_table(connection: Connection, where: str) -> None:
    """DamagedSchemaError when ``alembic_version`` exists but does not hold one revision (two rows,
    or an empty one): Alembic would fail on it with an assertion or a "more than one head"
    error. Nothing is changed; no rows at all is a database never migrated."""
    if not inspect(connection).has_table("alembic_version"):
        return
    rows = [row[0] for row in connection.exec_driver_sql("SELECT version_num FROM alembic_version")]
    if len(rows) <= 1 and all(isinstance(r, str) and r.strip() for r in rows):
        return
    shown = ", ".join(repr(r) for r in rows[:3]) + (", ..." if len(rows) > 3 else "")
    raise DamagedSchemaError(
        f"database {where} has a damaged schema revision table alembic_version ({len(rows)}"
        f" rows: {shown}); it must hold one row, the schema revision. It will not be touched:"
        " restore it from a backup, or point --database / KRYT_DATABASE_URL at another database"
    )


def upgrade_engine(
    engine: Engine, *, where: str, allow: bool = True, read_only: str | None = None
) -> str:
    """:func:`upgrade_connection` in a transaction of its own.

    The database is checked in a read transaction first (:func:`check_database`): an
    up-to-date one needs no write lock (it may be a read-only file), and one that is
    refused is refused before anything is written. ``read_only`` says why the database
    cannot be written here (None: it can); one that is behind is then refused with
    :class:`SchemaOutdatedError` instead of being migrated.
    """
    from arena.db.engine import READ_ONLY_OPTION

    with engine.execution_options(**{READ_ONLY_OPTION: True}).connect() as connection:
        current = check_database(connection, where=where)
    if current == newest_revision_file():
        return current
    if read_only is not None:
        raise SchemaOutdatedError(
            f"database {where} is at schema revision {current!r}, older than"
            f" {newest_revision_file()!r}, and it is read-only here ({read_only}): it cannot"
            " be migrated; open it once with write access (any kryt command migrates it), or"
            " copy it somewhere writable and use --database on the copy"
        )
    with engine.connect() as connection, _foreign_keys_checked_once(connection):
        with connection.begin():
            revision = upgrade_connection(connection, where=where, allow=allow)
            _check_foreign_keys(connection, where=where)
        return revision


@contextlib.contextmanager
def _foreign_keys_checked_once(connection: Connection) -> Iterator[None]:
    """SQLite enforces foreign keys row by row, and a migration that rebuilds a table
    (Alembic's batch mode: copy, drop, rename) drops rows other tables still point to
    (a ``game_logs`` row to its game): with enforcement on, every upgrade of such a
    database failed. It is off for the migrating connection (the pragma is ignored inside
    a transaction, so it is set before ``BEGIN``), the whole database is checked before
    the commit instead (:func:`_check_foreign_keys`), and it is on again after."""
    if connection.dialect.name != "sqlite":
        yield
        return
    driver = connection.connection.driver_connection
    assert driver is not None  # a live connection of the pool
    driver.execute("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        try:
            driver.execute("PRAGMA foreign_keys=ON")
        except Exception:  # a broken connection: never back in the pool without them
            connection.invalidate()


def _check_foreign_keys(connection: Connection, *, where: str) -> None:
    """DamagedSchemaError (the transaction rolls back) when a migrated SQLite database has
    a row that points to none."""
    if connection.dialect.name != "sqlite":
        return
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        shown = ", ".join(
            f"{table} row {rowid} -> {parent}" for table, rowid, parent, _ in broken[:5]
        )
        raise DamagedSchemaError(
            f"database {where}: migrating it would leave {len(broken)} row(s) pointing to"
            f" nothing ({shown}); nothing was changed"
        )


def _next_rev_id() -> str:
    numbers = [
        int(m.group(1)) for p in VERSIONS_DIR.glob("*.py") if (m := re.match(r"^(\d{4})_", p.name))
    ]
    return f"{max(numbers, default=0) + 1:04d}"


def make_revision(message: str) -> Path:
    """Autogenerate a revision from the difference between the models and the head schema.

    The comparison runs against a scratch SQLite database migrated to head; review the
    generated file (PostgreSQL-only details are not detected) before committing it.
    """
    from alembic import command

    from arena.db.engine import open_database

    slug = re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")[:40] or "revision"
    rev_id = _next_rev_id()
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(Path(tmp) / "scratch.db")
        try:
            with db.engine.begin() as connection:
                config = alembic_config(connection)
                config.set_main_option("file_template", f"{rev_id}_{slug}")
                script = command.revision(config, message=message, autogenerate=True, rev_id=rev_id)
        finally:
            db.close()
    if script is None or isinstance(script, list):  # pragma: no cover - single head only
        raise RuntimeError("alembic produced no single revision")
    path = Path(script.path)
    # Generated code follows the house style like the rest of the repository.
    subprocess.call([sys.executable, "-m", "ruff", "format", "--quiet", str(path)])
    return path


def _rebuild_boards(url: str | None) -> int:
    """Replay every counted game into live Elo and the boards' tallies, in one transaction:
    the repair after games were written around ``record_game`` (until then the standings
    count those boards' games themselves, slower but right)."""
    from arena.db.elo import SCOPES, rebuild_elo
    from arena.db.engine import open_database

    db = open_database(url, create=False)
    try:
        with db.session() as session:
            connection = session.connection()
            rebuild_elo(connection)
            boards = connection.execute(sa.select(sa.func.count()).select_from(SCOPES)).scalar_one()
        print(f"{db.display_url}: rebuilt {boards} board(s) from the stored games")
    finally:
        db.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    from arena.db.engine import open_database
    from arena.db.errors import DatabaseError

    parser = argparse.ArgumentParser(prog="python -m arena.db.migrate")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("current", "upgrade", "rebuild-boards"):
        p = sub.add_parser(name)
        p.add_argument("url", nargs="?", default=None)
    rev = sub.add_parser("revision")
    rev.add_argument("-m", "--message", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "revision":
            print(f"created {make_revision(args.message)}; review it before committing")
            return 0
        if args.command == "rebuild-boards":
            return _rebuild_boards(args.url)
        if args.command == "upgrade":
            db = open_database(args.url, upgrade=True)
            print(f"{db.display_url} is at revision {head_revision()}")
            db.close()
            return 0
        db = open_database(args.url, create=False, upgrade=False, check_schema=False)
        try:
            with db.engine.connect() as connection:
                _check_version_table(connection, db.display_url)
                stored = _stored_revision(connection)
                tables = sorted(inspect(connection).get_table_names())
                if stored is not None or not tables:
                    check_database(connection, where=db.display_url)
                current = current_revision(connection)
        finally:
            db.close()
        if current is None and tables:
            # Not "(empty)": another application's database (open_database refuses it).
            print(
                f"database: not a Kryt Arena database (no schema revision; tables of its own:"
                f" {_shown(tables)}); code head: {head_revision()}"
            )
            return 1
        print(f"database: {current or '(empty)'}; code head: {head_revision()}")
        return 0
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
