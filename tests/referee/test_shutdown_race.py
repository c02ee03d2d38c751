"""gRPC's internal batch errors when the bot's stream ends under a call, and the goodbye at
the end of a series.

A bot that ends its stream while the referee half-closes it makes gRPC's asyncio API raise
its internal batch error from ``done_writing`` (not an ``RpcError``): CI saw it end a whole
polyglot round robin. The goodbye is best effort: it must neither raise nor leave the bot
running. The same error from a read or a write is the connection lost (a bot fault), never an
exception that escapes the referee."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import NoReturn

import pytest
from grpc._cython import cygrpc  # the exact error gRPC raised in CI
from grpc.aio import _call as aio_call

from arena.tournament.config import SandboxSettings
from arena.tournament.seats import SandboxSlot
from referee.client import AsyncBotClient, BotClient, BotCrashedError
from referee.protocol.messages import BotMessage, RefereeMessage
from referee.series import SeriesConfig, series_handshake
from sandbox import choose_backend, load_submission
from sandbox.local import LocalBot
from tests.protocol.helpers import raw_server
from tests.protocol.test_service import PATIENT, _decide, _fine, _handshake

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parents[2] / "sdk" / "examples"


def _stream_ended_under_it(self: object, *args: object) -> NoReturn:
    raise cygrpc.ExecuteBatchError('Failed "execute_batch": (SendCloseFromClientOperation,)')


def _fine_bot(message: RefereeMessage) -> list[BotMessage | bytes]:
    return _fine(message)


def test_the_blocking_goodbye_takes_the_batch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aio_call._StreamRequestMixin, "done_writing", _stream_ended_under_it)
    with raw_server(_fine_bot) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        client.shutdown("series over", timeout=1.0)  # must not raise
        assert client.closed


def test_the_asynchronous_goodbye_takes_the_batch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aio_call._StreamRequestMixin, "done_writing", _stream_ended_under_it)

    async def goodbye(address: str) -> bool:
        client = AsyncBotClient(address)
        await client.handshake(_handshake(), timeout=PATIENT)
        await client.shutdown("series over", timeout=1.0)
        return client.closed

    with raw_server(_fine_bot) as address:
        assert asyncio.run(goodbye(address))


def test_a_batch_error_on_a_write_is_the_connection_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    with raw_server(_fine_bot) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        monkeypatch.setattr(aio_call._StreamRequestMixin, "write", _stream_ended_under_it)
        with pytest.raises(BotCrashedError, match="connection was lost"):
            _decide(client)
        assert client.closed


def test_a_batch_error_on_a_read_is_the_connection_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    real = aio_call._StreamResponseMixin.read
    reads = [0]

    async def read_once_then_fail(self: aio_call._StreamResponseMixin[bytes, bytes]) -> object:
        reads[0] += 1
        if reads[0] > 1:  # the handshake's reply is read; the stream then ends under gRPC
            _stream_ended_under_it(self)
        return await real(self)

    monkeypatch.setattr(aio_call._StreamResponseMixin, "read", read_once_then_fail)
    with raw_server(_fine_bot) as address, BotClient(address) as client:
        client.handshake(_handshake(), timeout=PATIENT)
        with pytest.raises(BotCrashedError, match="connection to bot lost: ExecuteBatchError"):
            _decide(client)
        assert client.closed


def _slot(label: str) -> SandboxSlot:
    return SandboxSlot(
        choose_backend("process", allow_unsafe=True),
        load_submission(EXAMPLES / "random"),
        name="random",
        limits=SandboxSettings(startup_seconds=120.0).limits(),
        label=label,
        trusted=True,
    )


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + PATIENT
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _bot_pid(slot: SandboxSlot) -> int:
    running = slot._running
    assert isinstance(running, LocalBot)
    return running.process.pid


class _GoodbyeFailed(Exception):
    """Anything the goodbye might raise that is no bot fault."""


def test_a_goodbye_that_raises_still_stops_the_bot(monkeypatch: pytest.MonkeyPatch) -> None:
    slot = _slot("kryt-test-goodbye-raises")
    handshake = series_handshake(SeriesConfig(games=1, seed=7), "nobody")
    slot.player(handshake)
    pid = _bot_pid(slot)

    def failing_goodbye(self: BotClient, reason: str, timeout: float = 2.0) -> None:
        raise _GoodbyeFailed(reason)

    monkeypatch.setattr(BotClient, "shutdown", failing_goodbye)
    with pytest.raises(_GoodbyeFailed):
        slot.close()
    assert slot._running is None
    assert _gone(pid), f"bot process {pid} outlived its series"


def test_an_asynchronous_goodbye_that_raises_still_stops_the_bot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slot = _slot("kryt-test-async-goodbye-raises")
    handshake = series_handshake(SeriesConfig(games=1, seed=7), "nobody")

    async def failing_goodbye(self: AsyncBotClient, reason: str, timeout: float = 2.0) -> None:
        raise _GoodbyeFailed(reason)

    monkeypatch.setattr(AsyncBotClient, "shutdown", failing_goodbye)

    async def play_then_close() -> int:
        await slot.start_player(handshake)
        pid = _bot_pid(slot)
        with pytest.raises(_GoodbyeFailed):
            await slot.aclose()
        return pid

    pid = asyncio.run(play_then_close())
    assert slot._running is None
    assert _gone(pid), f"bot process {pid} outlived its series"
