"""A damaged ``alembic_version`` (an empty revision, two rows) is one typed error naming
the table, and the database is left as it was; no Alembic assertion or traceback."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from arena.db import DamagedSchemaError, open_database
from kryt.cli import main
from kryt.errors import ExitCode


def _damage(url: str, statement: str) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(statement))
            return [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE alembic_version SET version_num = ''",
        "INSERT INTO alembic_version VALUES ('0001')",
    ],
    ids=["empty-row", "two-rows"],
)
def test_a_damaged_revision_table_is_one_error_and_untouched(
    database_url: str, statement: str, capsys: pytest.CaptureFixture[str]
) -> None:
    open_database(database_url).close()
    rows = _damage(database_url, statement)
    with pytest.raises(DamagedSchemaError, match="alembic_version") as caught:
        open_database(database_url)
    assert "will not be touched" in str(caught.value)
    code = main(["tournament", "status", "-d", database_url])
    err = capsys.readouterr().err
    assert code == ExitCode.UNAVAILABLE, err  # as a file that is not a database
    assert err.startswith("error: ") and "alembic_version" in err and "Traceback" not in err
    assert _damage(database_url, "SELECT 1") == rows  # nothing was changed
