"""``check_bot`` of an address where nothing listens fails within seconds, in one line naming
the address, instead of waiting out the start-up deadline; a bot that listens but is slow to
answer SERVING still gets that whole deadline."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from grpc_health.v1 import health_pb2

from referee.protocol.messages import TimeControl
from referee.protocol.wire import SERVICE
from sdk.examples.random.bot import RandomBot
from sdk.server import BotServer
from sdk.tools import check
from sdk.tools.check import CONNECT_SECONDS, check_bot
from tests.protocol.helpers import socket_dir

pytestmark = pytest.mark.timeout(300)

STARTUP = 120.0
"""The start-up deadline of these checks: far longer than any of them may take, so that a
check that waited it out instead of failing fast is caught."""
FAST = 30.0
"""Seconds a check of an empty address may take at most on a busy machine (it tries for
:data:`CONNECT_SECONDS`); it used to take the whole start-up deadline."""
ROOMY = TimeControl(move_ms=10_000, bank_ms=60_000)


@contextmanager
def refusing_port() -> Iterator[socket.socket]:
    """A TCP port of this host bound but not listening: connecting to it is refused, and no
    other program can take the port while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock


def timed_check(target: str) -> tuple[check.CheckReport, float]:
    started = time.monotonic()
    report = check_bot(target, games=1, time_control=ROOMY, startup_timeout=STARTUP)
    return report, time.monotonic() - started


def test_nothing_listening_at_a_tcp_address_fails_within_seconds() -> None:
    with refusing_port() as sock:
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        report, took = timed_check(address)
    assert took < FAST
    assert took >= CONNECT_SECONDS - 0.1  # a bot just started gets a moment to listen
    assert not report.ok and report.series is None
    (problem,) = report.problems
    assert problem.kind == "unreachable" and "\n" not in problem.detail
    assert problem.detail == (
        f"nothing listens at {address} (Connection refused, tried for {CONNECT_SECONDS:g} s):"
        " start the bot serving on that address first"
    )
    assert f"ERROR unreachable: nothing listens at {address}" in report.format()


def test_nothing_listening_at_a_unix_socket_fails_within_seconds() -> None:
    with socket_dir() as folder:
        address = f"unix://{folder / 'nobody.sock'}"
        report, took = timed_check(address)
    assert took < FAST
    (problem,) = report.problems
    assert problem.kind == "unreachable"
    assert problem.detail.startswith(f"nothing listens at {address} (No such file or directory")


def test_a_host_that_does_not_resolve_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[object] = []

    def unknown(address: object, timeout: float) -> socket.socket:
        tries.append(address)  # the resolver's answer, without asking a real one
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "create_connection", unknown)
    report, took = timed_check("no-such-host.invalid:50051")
    assert took < FAST and tries == [("no-such-host.invalid", 50051)]  # not tried again
    (problem,) = report.problems
    assert problem.kind == "unreachable"
    assert problem.detail == (
        "cannot connect to no-such-host.invalid:50051: Name or service not known"
    )


def test_a_bot_that_starts_listening_a_moment_later_is_waited_for() -> None:
    with refusing_port() as sock:
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        later = threading.Timer(0.5, sock.listen)
        later.start()
        started = time.monotonic()
        try:
            check._wait_listening(address, timeout=STARTUP)  # returns: it listens now
        finally:
            later.join()
        assert time.monotonic() - started >= 0.4


class SlowToServe(BotServer):
    """A bot server that listens at once but answers NOT_SERVING for ``delay`` seconds (a bot
    loading something large before it can play)."""

    def __init__(self, address: str, delay: float) -> None:
        super().__init__(RandomBot(seed=3), address)
        self.delay = delay

    async def _start(self) -> int:
        port = await super()._start()
        await self._status(health_pb2.HealthCheckResponse.NOT_SERVING)
        serving = self._status(health_pb2.HealthCheckResponse.SERVING)
        asyncio.get_running_loop().call_later(self.delay, asyncio.ensure_future, serving)
        return port

    async def _status(self, status: int) -> None:
        for service in ("", SERVICE):
            await self._health.set(service, status)


@pytest.mark.parametrize("transport", ["tcp", "uds"])
def test_a_listening_bot_slow_to_serve_gets_the_start_up_deadline(transport: str) -> None:
    delay = CONNECT_SECONDS + 3
    with socket_dir() as folder:
        address = f"unix://{folder / 'bot.sock'}" if transport == "uds" else "127.0.0.1:0"
        server = SlowToServe(address, delay)
        bound = server.start()
        started = time.monotonic()
        try:
            report = check_bot(bound, games=1, time_control=ROOMY, startup_timeout=STARTUP)
        finally:
            server.stop(grace=0.2)
    assert report.ok, report.format()
    assert report.series is not None and len(report.series.games) == 1
    assert time.monotonic() - started >= delay - 0.5  # it did wait for SERVING


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("127.0.0.1:50051", ("127.0.0.1", 50051)),
        ("localhost:9", ("localhost", 9)),
        ("[::1]:50051", ("::1", 50051)),
        ("unix:///tmp/bot.sock", "/tmp/bot.sock"),
        ("unix:bot.sock", "bot.sock"),
        ("ipv4:127.0.0.1:50051", None),  # a gRPC target: left to the health checks
        ("host:0", None),
        ("host:70000", None),
    ],
)
def test_the_addresses_a_check_connects_to(
    address: str, target: str | tuple[str, int] | None
) -> None:
    assert check._socket_address(address) == target
