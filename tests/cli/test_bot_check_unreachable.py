"""``kryt bot check HOST:PORT`` where nothing listens: one error line naming the address,
exit 1, within seconds (it used to wait out the 15 s start-up deadline)."""

from __future__ import annotations

import re
import socket
import time

import pytest

from kryt.cli import main
from kryt.errors import ExitCode

FAST = 12.0
"""Seconds the command may take on a busy machine: well under the 15 s start-up deadline it
used to wait (it tries to connect for about 2 s)."""


def test_bot_check_of_an_address_where_nothing_listens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        started = time.monotonic()
        code = main(["bot", "check", address])
        took = time.monotonic() - started
    out = capsys.readouterr().out
    assert code == ExitCode.FAILED and took < FAST, (took, out)
    errors = [line for line in out.splitlines() if "ERROR" in line]
    assert len(errors) == 1, out
    assert re.fullmatch(
        rf"  ERROR unreachable: nothing listens at {re.escape(address)} \(Connection refused,"
        r" tried for 2 s\): start the bot serving on that address first",
        errors[0],
    ), errors
    assert out.rstrip().endswith("FAILED")
