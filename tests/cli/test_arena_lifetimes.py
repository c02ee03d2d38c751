"""``kryt arena token create`` / ``author add``: a lifetime of more than 100 years is a
usage error (it overflowed the expiry date into a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.db.accounts import MAX_LIFETIME_DAYS
from kryt.commands import arena as arena_commands
from kryt.errors import ExitCode
from tests.cli.helpers import kryt


def test_the_cli_bound_is_the_database_bound() -> None:
    assert arena_commands.MAX_LIFETIME_DAYS == MAX_LIFETIME_DAYS


@pytest.mark.parametrize("days", ["99999999", str(MAX_LIFETIME_DAYS + 1), "0", "-3"])
def test_a_lifetime_out_of_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, days: str
) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    code, out, err = kryt(capsys, "arena", "author", "add", "bob", "-d", url)
    assert code == ExitCode.OK, (out, err)
    for args in (["token", "create", "bob"], ["author", "add", "frank"]):
        code, out, err = kryt(capsys, "arena", *args, "-d", url, "--days", days)
        assert code == ExitCode.BAD_INPUT, (args, out, err)
        assert "--days" in err and "Traceback" not in err and "OverflowError" not in err


def test_the_longest_lifetime_works(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    days = str(MAX_LIFETIME_DAYS)
    code, out, err = kryt(capsys, "arena", "author", "add", "bob", "-d", url, "--days", days)
    assert code == ExitCode.OK, (out, err)
    code, out, err = kryt(capsys, "arena", "token", "create", "bob", "-d", url, "--days", days)
    assert code == ExitCode.OK, (out, err)
    assert out.strip().splitlines()[-1].startswith("kryt_")
