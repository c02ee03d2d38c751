"""Malformed database URLs are one typed error (never a traceback) that never shows the
password: a port that is not a number, a host cut short, a NUL byte, a home folder that does
not exist."""

from __future__ import annotations

import pytest

from arena.db import DatabaseURLError, mask_url, normalize_url
from kryt.cli import main
from kryt.errors import ExitCode


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("postgresql://kryt:s3cret@dbhost:5432x/kryt", "host or port cannot be read"),
        ("postgresql://kryt:s3cret@[::1", "host or port cannot be read"),
        ("postgresql://[::1", "host or port cannot be read"),
        ("postgresql://kryt:s3cret@dbhost:70000/kryt", "port 70000 is not in 1-65535"),
        ("postgresql://kryt:s3cret@dbhost:0/kryt", "port 0 is not in 1-65535"),
        ("sqlite:////tmp/x%00y.db", "NUL byte"),
        ("/tmp/x\x00y.db", "NUL byte"),
        ("postgresql://kryt:s3cr%00et@dbhost/kryt", "NUL byte"),
        ("postgresql://kryt:s3cret@dbhost/kr%00yt", "NUL byte"),
        ("~no-such-user-kryt/k.db", "home folder that does not exist"),
        ("sqlite:///~no-such-user-kryt/k.db", "home folder that does not exist"),
        ("/tmp/x\udcffy.db", r"'/tmp/x\\xffy.db' is not UTF-8 text"),  # the byte 0xff
        ("postgresql://kryt:s3cret@dbhost/kr\udcffyt", "is not UTF-8 text"),
        ("/tmp/x\ud800y.db", "is not UTF-8 text"),  # a lone surrogate from elsewhere
    ],
)
def test_a_malformed_url_is_a_url_error_without_the_password(raw: str, fragment: str) -> None:
    with pytest.raises(DatabaseURLError, match=fragment) as caught:
        normalize_url(raw)
    message = str(caught.value)
    assert "s3cr" not in message and "\x00" not in message
    assert "postgresql+psycopg://user:password@host" in message  # what to write instead


def test_masking_an_unparseable_url_hides_everything_that_may_be_the_password() -> None:
    assert mask_url("postgresql://kryt:s3cret@dbhost:5432x/kryt") == (
        "postgresql://kryt:***@dbhost:5432x/kryt"
    )
    assert "s3c" not in mask_url("postgresql://kryt:s3c@ret@[::1/kryt")


@pytest.mark.parametrize(
    "raw",
    [
        "postgresql://kryt:s3cret@dbhost:5432x/kryt",
        "postgresql://[::1",
        "sqlite:////tmp/x%00y.db",
        "/tmp/x\udcffy.db",  # as Python reads a command-line argument holding byte 0xff
    ],
)
def test_the_cli_prints_one_line_and_exits_2(capsys: pytest.CaptureFixture[str], raw: str) -> None:
    code = main(["tournament", "status", "-d", raw])
    err = capsys.readouterr().err
    assert code == ExitCode.BAD_INPUT, err
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "s3cret" not in err
