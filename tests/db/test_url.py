"""Which database is opened: precedence, normalisation, and rejected URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.db import DatabaseURLError, mask_url, normalize_url, resolve_database_url


def test_explicit_beats_environment_beats_default(tmp_path: Path) -> None:
    env = {"KRYT_DATABASE_URL": "postgresql+psycopg://u:p@h/envdb"}
    explicit = resolve_database_url("sqlite:///x/explicit.db", environ=env, cwd=tmp_path)
    assert explicit.endswith("/x/explicit.db") and explicit.startswith("sqlite:///")
    assert resolve_database_url(None, environ=env, cwd=tmp_path) == env["KRYT_DATABASE_URL"]
    default = resolve_database_url(None, environ={}, cwd=tmp_path)
    assert default == f"sqlite:///{tmp_path / 'kryt.db'}"


def test_empty_values_count_as_absent(tmp_path: Path) -> None:
    url = resolve_database_url("  ", environ={"KRYT_DATABASE_URL": ""}, cwd=tmp_path)
    assert url == f"sqlite:///{tmp_path / 'kryt.db'}"


def test_plain_path_means_sqlite_file(tmp_path: Path) -> None:
    assert normalize_url(tmp_path / "a.db") == f"sqlite:///{tmp_path / 'a.db'}"


def test_relative_sqlite_url_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalize_url("sqlite:///rel.db") == f"sqlite:///{tmp_path / 'rel.db'}"


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_postgres_aliases_use_psycopg3(scheme: str) -> None:
    url = normalize_url(f"{scheme}://u:secret@db.example:5433/kryt")
    assert url == "postgresql+psycopg://u:secret@db.example:5433/kryt"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("mysql://u:p@h/db", "unsupported database URL scheme 'mysql'"),
        ("postgresql+psycopg2://u:p@h/db", "unsupported database URL scheme 'postgresql+psycopg2'"),
        ("sqlite://", "in-memory SQLite"),
        ("sqlite:///:memory:", "in-memory SQLite"),
        ("postgresql+psycopg://u:p@h", "no database name"),
        ("", "empty database URL"),
        ("://nothing", "malformed database URL"),
    ],
)
def test_bad_urls_raise_typed_error(raw: str, fragment: str) -> None:
    with pytest.raises(DatabaseURLError, match=fragment.replace("+", r"\+")) as info:
        normalize_url(raw)
    assert isinstance(info.value, ValueError)
    assert "postgresql+psycopg://user:password@host" in str(info.value)


def test_password_never_in_error_messages() -> None:
    with pytest.raises(DatabaseURLError) as info:
        normalize_url("mysql://u:hunter2@h/db")
    assert "hunter2" not in str(info.value)
    assert mask_url("postgresql+psycopg://u:hunter2@h/db") == "postgresql+psycopg://u:***@h/db"
