"""Where a bot serves: argument, then argv[1], then KRYT_BOT_ADDRESS; clear errors otherwise."""

from __future__ import annotations

import re

import pytest

from sdk.examples.random.bot import RandomBot
from sdk.server import DEFAULT_ADDRESS, AddressError, BotServer, resolve_address
from tests.protocol.helpers import socket_dir


def test_address_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRYT_BOT_ADDRESS", "unix:///env.sock")
    assert resolve_address("1.2.3.4:5", argv=["bot.py", "unix:///argv.sock"]) == "1.2.3.4:5"
    assert resolve_address(None, argv=["bot.py", "unix:///argv.sock"]) == "unix:///argv.sock"
    assert resolve_address(None, argv=["bot.py"]) == "unix:///env.sock"
    monkeypatch.delenv("KRYT_BOT_ADDRESS")
    assert resolve_address(None, argv=["bot.py"]) == DEFAULT_ADDRESS
    with pytest.raises(AddressError, match="'--verbose'"):
        resolve_address(None, argv=["bot.py", "--verbose"])


def test_an_address_that_cannot_be_bound_is_a_clear_error() -> None:
    address = "unix:///nonexistent/dir/bot.sock"
    with pytest.raises(AddressError, match=re.escape(f"cannot serve on {address!r}")):
        BotServer(RandomBot(), address).start()


def test_a_stale_socket_file_is_replaced() -> None:
    with socket_dir() as tmp:
        address = f"unix://{tmp / 'bot.sock'}"
        first = BotServer(RandomBot(), address)
        first.start()
        first.stop(grace=0)
        second = BotServer(RandomBot(), address)  # the old socket file may still be there
        assert second.start() == address
        second.stop(grace=0)
