"""The referee's side of the protocol: one connection to one bot, one stream per series.

:class:`BotClient` never trusts the bot: every failure is a typed :class:`BotFault` carrying
the forfeit reason and the offending input, and every decision has a hard deadline.

    client = BotClient("unix:///run/kryt/bot.sock")
    client.wait_healthy(timeout=10)
    reply = client.handshake(Handshake(...), timeout=5)
    client.send(GameStart(...))
    reply = client.decide(view, clock, game_number=1, timeout=clock.hard_limit_ms / 1000 + 0.05)
    client.send(GameEnd(...))
    client.shutdown("series over")
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import secrets
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.protocol.messages import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    AnyAction,
    AnyView,
    BotError,
    BotMessage,
    Clock,
    Decision,
    DecisionRequest,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    Shutdown,
    TimeControl,
)
from referee.protocol.wire import PLAY_PATH, SERVICE, MalformedMessageError, decode_bot_message
from referee.protocol.wire import encode_referee_message as _encode

T = TypeVar("T")

RECONNECT_OPTIONS: Final[list[tuple[str, int]]] = [
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 500),
]
"""Retry a bot's socket every 50-500 ms: gRPC's default first back-off (1 s) made every bot
start, which dials before the bot listens, take over a second instead of ~0.3 s."""

CHANNEL_OPTIONS: Final[list[tuple[str, int]]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # Descriptor numbers (the sandbox dials /proc/self/fd/N) are reused from bot to bot: a
    # private subchannel pool keeps a later bot from sharing an earlier one's connection.
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.enable_retries", 0),
    *RECONNECT_OPTIONS,
]
"""The options of every channel to a bot (the referee's client and sandbox probes)."""


class BotFault(RuntimeError):
    """The bot misbehaved. ``reason`` is the forfeit to record, ``offending`` what it sent.

    Each subclass names its forfeit: this is the one map from a bot's fault to a reason."""

    reason: GameEndReason = GameEndReason.CRASH

    def __init__(self, message: str, offending: str = "") -> None:
        super().__init__(message)
        self.offending = offending


class BotUnreachableError(BotFault):
    """The bot's health service did not answer SERVING in time."""


class BotCrashedError(BotFault):
    """The stream broke, the bot hung up, or it reported an error (``BotError``)."""


class IncompatibleProtocolError(BotFault):
    """The bot speaks another protocol version; it cannot play."""

    reason = GameEndReason.STARTUP_FAILURE


class BotTimeoutError(BotFault):
    """No reply before the hard deadline."""

    reason = GameEndReason.TIMEOUT


class MalformedReplyError(BotFault):
    """The reply could not be read, or is not the message that was expected."""

    reason = GameEndReason.MALFORMED_REPLY


class UnexpectedReplyError(MalformedReplyError):
    """A message nobody asked for: a reply before a request, or a second reply."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A bot's decision and the seconds from sending the request to receiving the reply."""

    action: str | AnyAction
    """Text as the bot sent it, or the action it sent in structured form (checked by the
    engine's legality gate, not here)."""
    elapsed: float
    request_id: int
    cpu: float | None = None
    """CPU seconds the bot's process tree spent on the decision, where its sandbox counts it."""


SEND_TIMEOUT: Final = 10.0
"""Seconds a message may wait to be taken by the bot's stream (a bot that stops reading)."""


class _ThreadLoop(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


_LOOPS = _ThreadLoop()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop for bot connections, made on first use.

    Connections use gRPC's asyncio API, driven from the calling thread: the loop runs only
    while a call waits for its bot, so a decision costs no hand-over between threads (the
    threaded API needs three per round trip, and each costs more than the referee's work).
    """
    loop = _LOOPS.loop
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
    return loop


_BACKGROUND_LOCK = threading.Lock()
_BACKGROUND: list[asyncio.AbstractEventLoop] = []


def _background_loop() -> asyncio.AbstractEventLoop:
    """A private event loop in a daemon thread, for clients made where an event loop already
    runs (a notebook, async code): their calls are handed to it and waited for."""
    with _BACKGROUND_LOCK:
        if not _BACKGROUND:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="kryt-bot-io", daemon=True)
            thread.start()
            _BACKGROUND.append(loop)
        return _BACKGROUND[0]


def _request_id() -> int:
    """A fresh request id. Unpredictable, so that a reply can only answer a request the bot
    has seen: one sent before being asked never matches and is caught at once.

    31 bits: every language reads it exactly (JavaScript's numbers lose precision past 2**53,
    and some protobuf libraries hand 64-bit values to it as numbers), while a bot guessing
    an id it has not seen still has one chance in a billion."""
    return secrets.randbits(31) | 1


_Item = tuple[float, bytes | BaseException | None]
"""What the stream delivered and when: bytes, the error that ended it, or None at its end."""


class BotClient:
    """A connection to one bot at ``address``; one :meth:`handshake` per stream.

    Use it from the thread that made it (a referee plays each series in one thread);
    :meth:`close` alone may be called from any thread. Made where an event loop is running
    (a notebook, async code), it does its I/O in a private thread instead, and any thread
    may use it (each call still blocks until it is done).
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self._background = asyncio._get_running_loop() is not None
        self._loop = _background_loop() if self._background else _thread_loop()
        self._owner = threading.get_ident()
        self._channel: grpc.aio.Channel = self._run(self._connect())
        self._call: grpc.aio.StreamStreamCall[bytes, bytes] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._inbox: collections.deque[_Item] = collections.deque()
        self._timed_out: set[int] = set()
        self._answered: set[int] = set()
        self.discarded: list[Decision] = []
        """Late replies to requests that had already timed out (ignored, kept for the record)."""
        self.closed = False

    # ------------------------------------------------------------------ event loop

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._background:
            return asyncio.run_coroutine_threadsafe(coro, self._loop).result()
        if threading.get_ident() != self._owner:
            coro.close()
            raise RuntimeError(
                f"the BotClient for {self.address} must be used from the thread that made it"
            )
        if asyncio._get_running_loop() is not None:
            coro.close()
            raise RuntimeError(
                f"the BotClient for {self.address} was made outside async code and is used "
                "inside it: make it where it is used"
            )
        return self._loop.run_until_complete(coro)

    async def _connect(self) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(self.address, options=CHANNEL_OPTIONS)

    # ------------------------------------------------------------------ connection

    def wait_healthy(self, timeout: float, alive: Callable[[], bool] | None = None) -> None:
        """Wait until the bot's health service says SERVING: the one start-up wait.

        Raises BotUnreachableError when ``timeout`` passes, and BotCrashedError as soon as
        ``alive()`` (checked between attempts) says the bot's process has ended.
        """
        self._run(self._wait_healthy(timeout, alive))

    async def _wait_healthy(self, timeout: float, alive: Callable[[], bool] | None) -> None:
        stub = health_pb2_grpc.HealthStub(self._channel)
        deadline = time.monotonic() + timeout
        last = "no answer"
        # Ready when the whole server ("") or the Bot service says SERVING (protocol.md).
        service = ""
        while True:
            if alive is not None and not alive():
                raise BotCrashedError(f"bot at {self.address} exited before serving")
            left = deadline - time.monotonic()
            if left <= 0:
                raise BotUnreachableError(
                    f"bot at {self.address} not healthy after {timeout:.1f}s: {last}"
                )
            try:
                answer = await stub.Check(
                    health_pb2.HealthCheckRequest(service=service),
                    timeout=min(left, 0.5 if alive is not None else 1.0),
                    wait_for_ready=True,
                )
            except grpc.RpcError as exc:
                code = exc.code()
                last = f"{code.name}: {exc.details()}"
                if code is grpc.StatusCode.NOT_FOUND and service == "":
                    service = SERVICE  # no overall status: ask for the Bot service at once
                    continue
                if code is grpc.StatusCode.NOT_FOUND:
                    last = f"NOT_FOUND: neither '' nor {SERVICE!r} has a health status"
                await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                continue
            if answer.status == health_pb2.HealthCheckResponse.SERVING:
                return
            name = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
            last = f"status {name}"
            await asyncio.sleep(0.05)

    def _open(self) -> grpc.aio.StreamStreamCall[bytes, bytes]:
        if self.closed:
            raise BotCrashedError(f"connection to {self.address} is closed")
        if self._call is None:
            play = self._channel.stream_stream(PLAY_PATH, None, None)
            self._call = play(None, wait_for_ready=True)
        return self._call

    async def _read_one(self, call: grpc.aio.StreamStreamCall[bytes, bytes]) -> None:
        """Take the next message off the stream into the inbox (at the end of the stream:
        None, or the error status it ended with).

        One read at a time, asked for with a request or when a message is awaited: a reader
        that always asks for the next message would do so on the referee's critical path,
        between a reply and the move it carries.
        """
        try:
            data = await call.read()
        except grpc.RpcError as exc:
            self._deliver(exc)
        except asyncio.CancelledError:
            self._deliver(ConnectionAbortedError("the stream was closed"))
            raise
        else:
            self._deliver(data if isinstance(data, bytes) else None)  # else grpc.aio.EOF

    def _deliver(self, item: bytes | BaseException | None) -> None:
        self._inbox.append((time.monotonic(), item))
        self._reading = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)  # wakes the waiting call at once (no done-callback hop)

    def _start_reading(self) -> None:
        call = self._call
        if self._reading is None and call is not None:
            self._reading = self._loop.create_task(self._read_one(call))

    async def _next(self) -> _Item:
        """The next message. The read runs in its own task and only a waiter is awaited here,
        so a timeout cancels the wait, not the read: a late reply is found by the next
        request instead of being lost with the stream."""
        while not self._inbox:
            self._start_reading()
            if self._reading is None:  # no stream was ever opened: nothing will come
                self._deliver(None)
                break
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._inbox.popleft()

    async def _write(self, call: grpc.aio.StreamStreamCall[bytes, bytes], data: bytes) -> None:
        try:
            await call.write(data)
        except grpc.RpcError as exc:
            self.closed = True
            raise self._fault(exc) from None
        except asyncio.InvalidStateError:  # the stream had already ended: say how
            self.closed = True
            code, details = await call.code(), await call.details()
            raise BotCrashedError(
                f"connection to bot at {self.address} lost: {code.name}: {details}"
            ) from None

    async def _send_async(self, data: bytes, timeout: float) -> None:
        call = self._open()
        try:
            async with asyncio.timeout(timeout):
                await self._write(call, data)
        except TimeoutError:
            self._abort()
            raise BotCrashedError(
                f"bot at {self.address} did not take a message within {timeout:.1f}s "
                "(it stopped reading its stream)"
            ) from None

    async def _exchange(self, data: bytes, deadline: float) -> _Item:
        """Send ``data`` and wait for the next message until ``deadline`` (TimeoutError)."""
        async with asyncio.timeout_at(deadline):
            return await self._send_then_next(data)

    async def _send_then_next(self, data: bytes) -> _Item:
        call = self._open()
        if not self._inbox:
            self._start_reading()  # the read goes out with the write: one loop turn less
        await self._write(call, data)
        return await self._next()

    def _fault(self, item: BaseException) -> BotFault:
        code = item.code().name if isinstance(item, grpc.RpcError) else type(item).__name__
        detail = item.details() if isinstance(item, grpc.RpcError) else str(item)
        if code == "RESOURCE_EXHAUSTED":  # the bot sent more than the message size limit
            return MalformedReplyError(
                f"bot at {self.address} sent a message over the {MAX_MESSAGE_BYTES}-byte "
                f"limit: {detail}",
                offending=f"<message over {MAX_MESSAGE_BYTES} bytes>",
            )
        return BotCrashedError(f"connection to bot at {self.address} lost: {code}: {detail}")

    def _decode(self, item: bytes | BaseException | None) -> BotMessage:
        if item is None:
            self.closed = True
            raise BotCrashedError(f"bot at {self.address} closed the stream")
        if isinstance(item, BaseException):
            self.closed = True
            raise self._fault(item)
        try:
            message = decode_bot_message(item)
        except MalformedMessageError as exc:
            raise MalformedReplyError(str(exc), offending=repr(item[:200])) from None
        if isinstance(message, BotError):
            raise BotCrashedError(f"bot reported an error: {message.message}", message.message)
        return message

    # ------------------------------------------------------------------ protocol

    def handshake(self, handshake: Handshake, timeout: float) -> HandshakeReply:
        """Open the stream and introduce the series; raises IncompatibleProtocolError."""
        try:
            _, item = self._run(self._exchange(_encode(handshake), time.monotonic() + timeout))
        except TimeoutError:
            raise BotTimeoutError(f"no handshake reply within {timeout:.1f}s") from None
        message = self._decode(item)
        if not isinstance(message, HandshakeReply):
            raise UnexpectedReplyError(
                f"expected a handshake reply, got {type(message).__name__}", repr(message)
            )
        if message.protocol_version != handshake.protocol_version:
            raise IncompatibleProtocolError(
                f"bot {message.name!r} {message.version} speaks protocol version "
                f"{message.protocol_version}; this referee speaks {handshake.protocol_version} "
                f"(upgrade the bot's SDK: {message.sdk or 'unknown SDK'})",
                repr(message),
            )
        if not message.plays(handshake.ruleset):
            raise IncompatibleProtocolError(
                f"bot {message.name!r} {message.version} plays the rulesets "
                f"{list(message.rulesets or ('default',))}, not {handshake.ruleset!r} "
                f"(its Bot class must list {handshake.ruleset!r} in `rulesets`)",
                repr(message),
            )
        return message

    def send(self, message: RefereeMessage, timeout: float = SEND_TIMEOUT) -> None:
        """Send a message that gets no reply (GameStart, GameEnd)."""
        self._run(self._send_async(_encode(message), timeout))

    def unsolicited(self) -> list[BotMessage]:
        """Messages that arrived without a request pending (late replies to timed-out
        requests are not counted: they go to :attr:`discarded`). Raises BotFault when the
        bot reported an error or the connection broke."""
        found: list[BotMessage] = []
        while self._inbox:
            _, item = self._inbox.popleft()
            message = self._decode(item)
            if isinstance(message, Decision) and message.request_id in self._timed_out:
                self._timed_out.discard(message.request_id)
                self.discarded.append(message)
            else:
                found.append(message)
        return found

    def decide(self, view: AnyView, clock: Clock, *, game_number: int, timeout: float) -> Reply:
        """Ask for a decision and wait at most ``timeout`` seconds for the reply.

        Raises BotTimeoutError, MalformedReplyError, UnexpectedReplyError (a message that
        arrived unasked before this request, or a reply to another request) or
        BotCrashedError. The action text is returned unchecked: legality is the caller's.
        """
        request_id = _request_id()
        data = _encode(
            DecisionRequest(request_id=request_id, game_number=game_number, view=view, clock=clock)
        )
        return self._run(self._decide(data, request_id, timeout))

    async def _decide(self, data: bytes, request_id: int, timeout: float) -> Reply:
        stray = self.unsolicited()
        if stray:
            raise UnexpectedReplyError(
                f"bot sent {len(stray)} message(s) nobody asked for", repr(stray[0])
            )
        sent = time.monotonic()
        try:
            async with asyncio.timeout_at(sent + timeout):
                at, item = await self._send_then_next(data)
                while True:
                    message = self._decode(item)
                    if isinstance(message, Decision):
                        if message.request_id == request_id:
                            self._answered.add(request_id)
                            return Reply(message.action, at - sent, request_id)
                        if message.request_id in self._timed_out:  # late: not blamed here
                            self._timed_out.discard(message.request_id)
                            self.discarded.append(message)
                            at, item = await self._next()
                            continue
                    break
        except TimeoutError:
            self._timed_out.add(request_id)
            raise BotTimeoutError(
                f"no decision within {timeout:.3f}s (request {request_id})"
            ) from None
        what = (
            f"a second reply to request {message.request_id}"
            if isinstance(message, Decision) and message.request_id in self._answered
            else f"{type(message).__name__} instead of the reply to request {request_id}"
        )
        raise UnexpectedReplyError(f"bot sent {what}", repr(message))

    def shutdown(self, reason: str, timeout: float = 2.0) -> None:
        """Tell the bot the series is over and close the stream and channel."""
        mine = self._background or threading.get_ident() == self._owner
        if mine and not self.closed and self._call is not None:
            with contextlib.suppress(BotFault, TimeoutError):
                self._run(self._shutdown(_encode(Shutdown(reason=reason)), timeout))
        self.close()

    async def _shutdown(self, data: bytes, timeout: float) -> None:
        call = self._open()
        async with asyncio.timeout(timeout):
            await self._write(call, data)
            with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError):
                await call.done_writing()
            while True:  # until the bot ends the stream (late messages are dropped)
                _, item = await self._next()
                if not isinstance(item, bytes):
                    return

    def _abort(self) -> None:
        """Cancel the stream (the bot sees it cancelled); runs in the loop's thread."""
        self.closed = True
        if self._call is not None:
            self._call.cancel()

    def close(self) -> None:
        """Drop the connection at once (the bot sees its stream cancelled). Any thread may
        call it: from another thread the work is handed to the client's own loop."""
        if not self._background and threading.get_ident() != self._owner:
            self.closed = True
            with contextlib.suppress(RuntimeError):  # that loop is closed: nothing to do
                self._loop.call_soon_threadsafe(self._abort)
            return
        if self.closed and self._call is None and self._channel is None:
            return
        self._run(self._close())

    async def _close(self) -> None:
        self._abort()
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.cancel()
            await asyncio.wait((reading,))
        channel, self._channel = self._channel, None  # type: ignore[assignment]
        if channel is not None:
            await channel.close(None)

    def __enter__(self) -> BotClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_handshake(opponent_name: str, games: int, move_ms: int, bank_ms: int) -> Handshake:
    """A handshake for this protocol version with the given series parameters."""
    return Handshake(
        protocol_version=PROTOCOL_VERSION,
        referee_version="kryt-arena 0.1.0",
        games=games,
        opponent_name=opponent_name,
        time_control=TimeControl(move_ms=move_ms, bank_ms=bank_ms),
    )


class RemotePlayer:
    """A bot behind a :class:`BotClient` as a series loop wants it (``sdk.tools.local.Player``):
    its name comes from the handshake reply."""

    def __init__(self, client: BotClient, *, handshake_timeout: float = 5.0) -> None:
        self.client = client
        self.handshake_timeout = handshake_timeout
        self.name = client.address
        self.reply: HandshakeReply | None = None

    def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Open the stream; raises BotFault (IncompatibleProtocolError on a version clash)."""
        self.reply = self.client.handshake(handshake, self.handshake_timeout)
        self.name = self.reply.name
        return self.reply

    def send(self, message: RefereeMessage) -> None:
        """A message that gets no reply."""
        self.client.send(message)

    def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's reply within ``timeout`` seconds; raises BotFault."""
        return self.client.decide(view, clock, game_number=game_number, timeout=timeout)
