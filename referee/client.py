"""The referee's side of the protocol: one connection to one bot, one stream per series.

:class:`AsyncBotClient` is the connection, for coroutines of one event loop (a referee
process plays all its series as tasks of one loop); :class:`BotClient` drives the same
connection from a thread that has no loop running (``kryt bot check``, scripts). Neither
trusts the bot: every failure is a typed :class:`BotFault` carrying the forfeit reason and
the offending input, and every decision has a hard deadline.

    client = AsyncBotClient("unix:///run/kryt/bot.sock")     # inside a running loop
    await client.wait_healthy(timeout=10)
    reply = await client.handshake(Handshake(...), timeout=HANDSHAKE_SECONDS)
    await client.send(GameStart(...))
    reply = await client.decide(view, clock, game_number=1, timeout=clock.hard_limit_ms / 1000)
    await client.send(GameEnd(...))
    await client.shutdown("series over")
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import logging
import secrets
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.alarms import Alarm, keeps_our_clock, ring_at
from referee.protocol.fast_encode import encode_decision_request
from referee.protocol.messages import (
    HANDSHAKE_SECONDS,
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    AnyAction,
    AnyView,
    BotError,
    BotMessage,
    Clock,
    Decision,
    GameEndReason,
    Handshake,
    HandshakeReply,
    RefereeMessage,
    Shutdown,
    TimeControl,
)
from referee.protocol.wire import (
    PLAY_PATH,
    SERVICE,
    MalformedMessageError,
    WireError,
    decode_bot_message,
)
from referee.protocol.wire import encode_referee_message as _encode

T = TypeVar("T")
log = logging.getLogger(__name__)

RECONNECT_OPTIONS: Final[list[tuple[str, int]]] = [
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 500),
]
"""Retry a bot's socket every 50-500 ms: gRPC's default first back-off (1 s) made every bot
start, which dials before the bot listens, take over a second instead of ~0.3 s."""

CHANNEL_OPTIONS: Final[list[tuple[str, int]]] = [
    ("grpc.max_receive_message_length", MAX_REPLY_BYTES),
    ("grpc.max_send_message_length", MAX_REQUEST_BYTES),
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


class BotReportedError(BotCrashedError):
    """The bot reported an error itself (``BotError``): a crash, but the bot is alive, so
    the sandbox has no death to diagnose and the game ends at once."""

    @classmethod
    def of(cls, error: BotError) -> BotReportedError:
        """The fault of a bot that sent ``error``: one text for it, whether it came over
        gRPC or from an in-process bot (``sdk.tools.local.LocalPlayer``)."""
        return cls(f"bot reported an error: {error.message}", error.message)


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


def check_handshake_reply(handshake: Handshake, reply: HandshakeReply) -> HandshakeReply:
    """``reply`` if it answers ``handshake``: the same protocol version, and the series'
    ruleset among those the bot plays; else :class:`IncompatibleProtocolError`. Every player
    (over gRPC or in process) checks a reply here, so a bot is refused alike everywhere."""
    if reply.protocol_version != handshake.protocol_version:
        unset = " (0: the reply does not set protocol_version)" * (not reply.protocol_version)
        advice = (
            f"upgrade the bot's SDK: {reply.sdk or 'unknown SDK'}"
            if reply.protocol_version < handshake.protocol_version
            else "this referee is older than the bot: run it with a release of Kryt Arena"
            f" that speaks version {reply.protocol_version}, or build the bot with an SDK"
            f" for version {handshake.protocol_version}"
        )
        raise IncompatibleProtocolError(
            f"bot {reply.name!r} {reply.version} speaks protocol version "
            f"{reply.protocol_version}{unset}; this referee speaks"
            f" {handshake.protocol_version} ({advice})",
            repr(reply),
        )
    if not reply.plays(handshake.ruleset):
        raise IncompatibleProtocolError(
            f"bot {reply.name!r} {reply.version} plays the rulesets "
            f"{list(reply.rulesets or ('default',))}, not {handshake.ruleset!r} "
            f"({ruleset_hint(reply, handshake.ruleset)})",
            repr(reply),
        )
    return reply


PYTHON_SDK = "kryt-sdk-python"
"""How the Python SDK names itself in ``HandshakeReply.sdk`` (``sdk.driver.SDK_VERSION``)."""


def ruleset_hint(reply: HandshakeReply, ruleset: str) -> str:
    """Where the author of the bot that sent ``reply`` lists ``ruleset``: the ``rulesets``
    of its ``Bot`` class with the Python SDK; the ``rulesets`` field of its handshake reply
    otherwise (node, Java, C++, Go, a native binary, or Python without the SDK: no ``Bot``
    class there). The reply's ``sdk`` says which, whatever runtime the bot runs on."""
    if reply.sdk.split(" ", 1)[0] == PYTHON_SDK:
        return f"its Bot class must list {ruleset!r} in `rulesets`"
    return (
        f"its handshake reply must list {ruleset!r} in `HandshakeReply.rulesets`,"
        " see docs/protocol.md"
    )


class MessageTooLargeError(WireError):
    """A message of the referee's own is over the protocol's size limit. Not a bot's fault
    (no :class:`BotFault`: the game is voided); it is not sent, so the stream stays usable.

    gRPC would refuse it and break the stream, which reads as the bot's crash: a table's
    view can grow past the limit (thousands of ways to cover four led cards, a long
    history under a high turn limit)."""


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
    an id it has not seen still has one chance in a billion. Drawn from the system's random
    source a batch at a time (one system call per decision cost more than the rest of
    choosing one)."""
    try:
        return _IDS.pop()
    except IndexError:
        batch = secrets.token_bytes(4 * _ID_BATCH)
        _IDS.extend((n & 0x7FFF_FFFF) | 1 for n in struct.unpack(f"<{_ID_BATCH}I", batch))
        return _IDS.pop()


_ID_BATCH: Final = 1024
_IDS: list[int] = []


_Item = tuple[float, bytes | BaseException | None]
"""What the stream delivered and when: bytes, the error that ended it, or None at its end."""

ANSWERED_KEPT: Final = 64
"""Answered request ids a connection remembers (one per decision was kept for the whole
series before: ~50 MB for a 10,000-game series)."""

INBOX_LIMIT: Final = 8
"""Messages the reader holds before it stops reading: a bot that floods its stream is caught
by its next request (every unasked message is a fault), so more would only cost memory."""


class Deadline:
    """A deadline for each of a series of waits of the calling task, with the semantics of
    ``asyncio.timeout_at`` around each wait, for less.

        deadline.start(when)             # the loop's clock
        try:
            ...                          # awaits
        except asyncio.CancelledError:
            if not deadline.passed():    # a cancel from outside goes on
                raise
            ...                          # the timeout
        finally:
            deadline.stop()

    When ``when`` passes before :meth:`stop`, the task is cancelled, whatever it awaits;
    :meth:`passed` then takes that cancel back and says so. If the task was also cancelled
    from outside, :meth:`passed` says False and the cancel goes on (as ``asyncio.timeout``
    does). ``asyncio.timeout`` schedules and cancels a timer handle per wait (~7 % of the
    referee's CPU per decision at 64 streams); here one alarm rings at the deadline of an
    earlier wait and is moved only when a new deadline comes sooner; when it rings before
    the pending deadline it is set again for it. A decision's deadline is seconds away and
    a decision takes about a millisecond, so a connection schedules one timer every few
    seconds instead of one per decision. The alarm rings from :mod:`referee.alarms`' thread
    (a timer kept in the loop costs on every turn of the loop) unless the loop has a clock of
    its own. One wait at a time (a connection asks one thing at a time); made and used in the
    loop's thread.
    """

    __slots__ = (
        "_alarm",
        "_alarm_at",
        "_cancelling",
        "_expired",
        "_loop",
        "_task",
        "_threaded",
        "_when",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._when: float | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self._expired = False
        self._alarm: Alarm | asyncio.TimerHandle | None = None
        self._alarm_at = 0.0
        self._threaded = keeps_our_clock(loop)

    def start(self, when: float) -> None:
        """Cancel the calling task at ``when`` (the loop's clock) unless :meth:`stop` comes
        first. Raises RuntimeError outside a task of the loop."""
        task = asyncio.current_task(self._loop)
        if task is None:
            raise RuntimeError(f"a deadline ({when}) needs a task of its loop")
        self._when, self._task = when, task
        self._cancelling = task.cancelling()
        self._expired = False
        alarm = self._alarm
        if alarm is None or self._alarm_at > when:
            if alarm is not None:
                alarm.cancel()
            self._alarm_at = when
            self._alarm = self._set_alarm(when)

    def _set_alarm(self, when: float) -> Alarm | asyncio.TimerHandle:
        if self._threaded:
            return ring_at(self._loop, when, self._ring)
        return self._loop.call_at(when, self._ring)

    def passed(self) -> bool:
        """In ``except asyncio.CancelledError``: True when the cancel was the deadline's and
        nothing else cancelled the task (the cancel is then taken back)."""
        if not self._expired or self._task is None:
            return False
        self._expired = False
        return self._task.uncancel() <= self._cancelling

    def stop(self) -> None:
        """The wait is over (the alarm stays set for a later one)."""
        task = self._task
        if self._expired and task is not None:  # cancelled by the deadline, ended otherwise
            self._expired = False
            task.uncancel()
        self._when = self._task = None

    def close(self) -> None:
        """Drop the alarm (nothing is pending any more)."""
        alarm, self._alarm = self._alarm, None
        if alarm is not None:
            alarm.cancel()

    def _ring(self) -> None:
        # Cancel the task if its deadline is the alarm's time (the loop runs a timer up to
        # its clock resolution early, as asyncio.timeout_at is run), else ring again then.
        self._alarm = None
        when, task = self._when, self._task
        if when is None or task is None:
            return  # nothing pending: the next start sets the alarm
        if when > self._alarm_at:
            self._alarm_at = when
            self._alarm = self._set_alarm(when)
        elif not self._expired:
            self._expired = True
            task.cancel()


class AsyncBotClient:
    """A connection to one bot, used by coroutines of the event loop that made it.

    One stream per series, with one long-lived reader task: it reads every message as it
    comes into an inbox, stamped with its arrival time, and wakes the call waiting for it.
    Make it inside a running loop; :meth:`close` alone may be called from any thread.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        # How errors name the bot: they become forfeit details, which both bots are told and
        # pages show. A sandbox's socket path names the runner's private directory and
        # label, so only an address somebody gave (TCP) is named.
        self._bot = "bot" if address.startswith("unix:") else f"bot at {address}"
        self._loop = asyncio.get_running_loop()
        self._channel: grpc.aio.Channel | None = grpc.aio.insecure_channel(
            address, options=CHANNEL_OPTIONS
        )
        self._call: grpc.aio.StreamStreamCall[bytes, bytes] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None
        self._inbox: collections.deque[_Item] = collections.deque()
        self._abandoned: set[int] = set()
        """Requests given up on (timed out, or the bot reported an error while one was
        pending): a reply that still comes for one is dropped, not blamed on a later game."""
        self._answered: dict[int, int] = {}
        """The latest requests answered, each with its game: a duplicate reply is named as one
        (within its game it is a fault), and one to an earlier game's request is dropped;
        bounded, so a long series' connection does not grow."""
        self._forgiven: set[int] = set()
        """Answered requests whose one second reply, after their game was over, was dropped:
        another copy is a fault (a bot flooding its stream with stale copies would otherwise
        have every one kept and logged). Bounded with :attr:`_answered`."""
        self._deadline = Deadline(self._loop)
        """The decisions' deadline: one alarm for all of them (see :class:`Deadline`)."""
        self.discarded: list[Decision] = []
        """Late replies to requests already given up on (timed out, or pending when the bot
        reported an error), and second replies to a request of a game already over (ignored,
        kept for the record)."""
        self.closed = False

    # ------------------------------------------------------------------ connection

    async def wait_healthy(
        self,
        timeout: float,
        alive: Callable[[], bool] | Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """Wait until the bot's health service says SERVING: the one start-up wait.

        Raises BotUnreachableError when ``timeout`` passes, and BotCrashedError as soon as
        ``alive()`` (checked between attempts; it may be a coroutine function) says the
        bot's process has ended.
        """
        if self._channel is None:
            raise BotCrashedError(f"connection to {self._bot} is closed")
        stub = health_pb2_grpc.HealthStub(self._channel)
        deadline = time.monotonic() + timeout
        last = "no answer"
        # Ready when the whole server ("") or the Bot service says SERVING (protocol.md).
        service = ""
        while True:
            if alive is not None and not await _truth(alive()):
                raise BotCrashedError(f"{self._bot} exited before serving")
            left = deadline - time.monotonic()
            if left <= 0:
                raise BotUnreachableError(f"{self._bot} not healthy after {timeout:.1f}s: {last}")
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
            last = f"status {_status_name(answer.status)}"
            await asyncio.sleep(0.05)

    def _open(self) -> grpc.aio.StreamStreamCall[bytes, bytes]:
        if self.closed or self._channel is None:
            raise BotCrashedError(f"connection to {self._bot} is closed")
        call = self._call
        if call is None:
            play = self._channel.stream_stream(PLAY_PATH, None, None)
            call = self._call = play(None, wait_for_ready=True)
            self._reader = self._loop.create_task(self._read_all(call))
        return call

    async def _read_all(self, call: grpc.aio.StreamStreamCall[bytes, bytes]) -> None:
        """The stream's one reader: every message into the inbox until the stream ends
        (then None, or the error status it ended with)."""
        inbox = self._inbox
        try:
            while True:
                if len(inbox) >= INBOX_LIMIT:
                    room = self._room = self._loop.create_future()
                    await room
                data = await call.read()
                if not isinstance(data, bytes):  # grpc.aio.EOF
                    self._deliver(None)
                    return
                self._deliver(data)
        except (grpc.RpcError, grpc.aio.BaseError) as exc:
            # BaseError: gRPC's own failure of a batch on a stream ending under it (seen
            # from done_writing); told as the connection lost, never an unread task error.
            self._deliver(exc)
        except asyncio.CancelledError:
            self._deliver(ConnectionAbortedError("the stream was closed"))
            raise

    def _deliver(self, item: bytes | BaseException | None) -> None:
        self._inbox.append((time.monotonic(), item))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)  # wakes the waiting call at once (no done-callback hop)

    def _take(self) -> _Item:
        item = self._inbox.popleft()
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)
        return item

    async def _next(self) -> _Item:
        """The next message. Only a waiter is awaited here, never the read itself, so a
        timeout cancels the wait, not the read: a late reply is found by the next request
        instead of being lost with the stream."""
        while not self._inbox:
            reader = self._reader
            if reader is None or reader.done():  # no stream, or it ended: nothing will come
                self._deliver(None if reader is None else ConnectionAbortedError("stream ended"))
                break
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._take()

    async def _write(self, call: grpc.aio.StreamStreamCall[bytes, bytes], data: bytes) -> None:
        if len(data) > MAX_REQUEST_BYTES:
            raise MessageTooLargeError(
                f"a message of {len(data)} bytes for the {self._bot} is over the "
                f"protocol's {MAX_REQUEST_BYTES}-byte limit: not sent (the referee's failure)"
            )
        try:
            await call.write(data)
        except grpc.RpcError as exc:
            self.closed = True
            if not _write_failed_in_core(exc):
                raise self._fault(exc) from None
            # The stream ended while this message was being written: gRPC then reports its
            # own failure to write, not how the stream ended. The reader saw that (at once:
            # the stream is over), unless the failure hid it from the reader too.
            raise await self._how_it_ended() from None
        except grpc.aio.BaseError as exc:  # gRPC's batch failed under a stream's end
            self.closed = True
            raise await self._how_it_ended() from exc
        except asyncio.InvalidStateError:  # the stream had already ended: say how
            self.closed = True
            code, details = await call.code(), await call.details()
            if code is grpc.StatusCode.OK:  # the bot ended its side of the stream itself
                raise BotCrashedError(f"{self._bot} closed the stream") from None
            raise BotCrashedError(
                f"connection to {self._bot} lost: {code.name}: {details}"
            ) from None

    async def _how_it_ended(self) -> BotFault:
        """The fault of a stream that ended under a write, as its reader saw it end."""
        reader = self._reader
        if reader is not None and not reader.done():
            await asyncio.wait({reader}, timeout=WRITE_END_SECONDS)
        ending = self._inbox[-1][1] if self._inbox else ConnectionAbortedError()
        if ending is None:  # a clean end (status OK): the bot ended its side itself
            return BotCrashedError(f"{self._bot} closed the stream")
        if isinstance(ending, grpc.RpcError) and not _write_failed_in_core(ending):
            return self._fault(ending)  # the status the stream ended with
        return BotCrashedError(
            f"{self._bot} closed the stream or the connection was lost (it ended while a"
            " message was being written to it)"
        )

    async def _send_then_next(self, data: bytes) -> _Item:
        await self._write(self._open(), data)
        return await self._next()

    def _fault(self, item: BaseException) -> BotFault:
        code = item.code().name if isinstance(item, grpc.RpcError) else type(item).__name__
        detail = item.details() if isinstance(item, grpc.RpcError) else str(item)
        if code == "RESOURCE_EXHAUSTED" and _OVER_LIMIT in (detail or ""):
            # gRPC refused what the bot sent (over the reply limit, on either end). Its words
            # are all we see, and a bot can end its stream saying the same: the evidence is
            # the status as it came, never a size we did not measure.
            return MalformedReplyError(
                f"{self._bot} sent a message over the {MAX_REPLY_BYTES}-byte limit: {detail}",
                offending=f"<the stream ended with {code}: {detail}>",
            )
        return BotCrashedError(f"connection to {self._bot} lost: {code}: {detail}")

    def _decode(self, item: bytes | BaseException | None) -> BotMessage:
        if item is None:
            self.closed = True
            raise BotCrashedError(f"{self._bot} closed the stream")
        if isinstance(item, BaseException):
            self.closed = True
            raise self._fault(item)
        try:
            message = decode_bot_message(item)
        except MalformedMessageError as exc:
            raise MalformedReplyError(str(exc), offending=repr(item[:200])) from None
        if isinstance(message, BotError):
            raise BotReportedError.of(message)
        return message

    # ------------------------------------------------------------------ protocol

    async def handshake(self, handshake: Handshake, timeout: float) -> HandshakeReply:
        """Open the stream and introduce the series; raises IncompatibleProtocolError."""
        try:
            async with asyncio.timeout(timeout):
                _, item = await self._send_then_next(_encode(handshake))
        except TimeoutError:
            raise BotTimeoutError(f"no handshake reply within {timeout:.1f}s") from None
        message = self._decode(item)
        if not isinstance(message, HandshakeReply):
            raise UnexpectedReplyError(
                f"expected a handshake reply, got {type(message).__name__}", repr(message)
            )
        return check_handshake_reply(handshake, message)

    async def send(self, message: RefereeMessage, timeout: float = SEND_TIMEOUT) -> None:
        """Send a message that gets no reply (GameStart, GameEnd)."""
        call = self._open()
        deadline = self._deadline
        deadline.start(time.monotonic() + timeout)
        try:
            await self._write(call, _encode(message))
        except asyncio.CancelledError:
            if not deadline.passed():  # a cancel from outside goes on
                raise
            self._abort()
            raise BotCrashedError(
                f"{self._bot} did not take a message within {timeout:.1f}s "
                "(it stopped reading its stream)"
            ) from None
        finally:
            deadline.stop()

    def unsolicited(self, game_number: int | None = None) -> list[BotMessage]:
        """Messages that arrived without a request pending. Late replies to abandoned
        requests (timed out, or pending when the bot reported an error) are not counted,
        nor, when ``game_number`` is given, second replies to a request of an earlier game:
        they go to :attr:`discarded`. Raises BotFault when the bot reported an error or the
        connection broke before any such message came (the first fault on the stream is the
        one charged: a second reply, then a closed stream, is the second reply)."""
        found: list[BotMessage] = []
        while self._inbox:
            _, item = self._take()
            try:
                message = self._decode(item)
            except BotFault:
                if found:
                    return found
                raise
            if not self._dropped(message, game_number):
                found.append(message)
        return found

    def _dropped(self, message: BotMessage, game_number: int | None) -> bool:
        """Whether ``message`` is a reply nobody blames now, put in :attr:`discarded`: late
        for an abandoned request, or a second reply to a request of a game before
        ``game_number``, which is over and recorded (it was no fault of this game's)."""
        if not isinstance(message, Decision):
            return False
        request_id = message.request_id
        if request_id in self._abandoned:
            self._abandoned.discard(request_id)
        elif game_number is None or self._answered.get(request_id, game_number) >= game_number:
            return False
        elif request_id in self._forgiven:
            return False  # one late copy is forgiven, not a flood
        else:
            self._forgiven.add(request_id)
            log.warning(
                "bot at %s sent a second reply to request %s after game %s was over: dropped",
                self.address,
                request_id,
                self._answered[request_id],
            )
        self.discarded.append(message)
        return True

    def _another_reply(self, request_id: int) -> str:
        """How a fault names a reply to a request already answered."""
        if request_id in self._forgiven:
            return f"a third reply to request {request_id} (a late second one was dropped)"
        return f"a second reply to request {request_id}"

    def _answer(self, request_id: int, game_number: int) -> None:
        answered = self._answered
        answered[request_id] = game_number
        if len(answered) > ANSWERED_KEPT:
            oldest = next(iter(answered))
            del answered[oldest]
            self._forgiven.discard(oldest)

    async def decide(
        self, view: AnyView, clock: Clock, *, game_number: int, timeout: float
    ) -> Reply:
        """Ask for a decision and wait at most ``timeout`` seconds for the reply.

        Raises BotTimeoutError, MalformedReplyError, UnexpectedReplyError (a message that
        arrived unasked before this request, or a reply to another request) or
        BotCrashedError. The action text is returned unchecked: legality is the caller's.
        """
        request_id = _request_id()
        data = encode_decision_request(request_id, game_number, view, clock)
        if len(data) > MAX_REQUEST_BYTES:
            raise MessageTooLargeError(
                f"the decision request of game {game_number} for seat {view.seat} is "
                f"{len(data)} bytes ({len(view.legal_actions)} legal actions, "
                f"{len(view.history)} actions played), over the protocol's "
                f"{MAX_REQUEST_BYTES}-byte limit: not sent (the referee's failure, not the bot's)"
            )
        if self._inbox:
            stray = self.unsolicited(game_number)
            if stray:
                # Whether the duplicate came before this request or after it is a race:
                # both ways it is named the same.
                first = stray[0]
                what = (
                    self._another_reply(first.request_id)
                    if isinstance(first, Decision) and first.request_id in self._answered
                    else f"{len(stray)} message(s) nobody asked for"
                )
                raise UnexpectedReplyError(f"bot sent {what}", repr(first))
        sent = time.monotonic()
        deadline = self._deadline
        deadline.start(sent + timeout)
        try:
            await self._write(self._open(), data)  # _send_then_next, a coroutine less
            at, item = await self._next()
            while True:
                message = self._decode(item)
                if isinstance(message, Decision) and message.request_id == request_id:
                    self._answer(request_id, game_number)
                    return Reply(message.action, at - sent, request_id)
                if self._dropped(message, game_number):  # not blamed here
                    at, item = await self._next()
                    continue
                break
        except asyncio.CancelledError:
            if not deadline.passed():  # a cancel from outside goes on
                raise
            self._abandoned.add(request_id)
            raise BotTimeoutError(
                f"no decision within {timeout:.3f}s (request {request_id})"
            ) from None
        except BotReportedError:
            # The bot is alive (an SDK bot reports an error from a hook between games, then
            # answers the request it finds next): that answer is not the next game's fault.
            self._abandoned.add(request_id)
            raise
        finally:
            deadline.stop()
        if isinstance(message, Decision) and message.request_id in self._answered:
            what = self._another_reply(message.request_id)
        elif isinstance(message, Decision):
            what = f"a reply to request {message.request_id}, not to the pending {request_id}"
        else:
            what = f"{type(message).__name__} instead of the reply to request {request_id}"
        raise UnexpectedReplyError(f"bot sent {what}", repr(message))

    async def shutdown(self, reason: str, timeout: float = 2.0) -> None:
        """Tell the bot the series is over and close the stream and channel."""
        if not self.closed and self._call is not None:
            with contextlib.suppress(BotFault, TimeoutError):
                await self._shutdown(_encode(Shutdown(reason=reason)), timeout)
        await self.aclose()

    async def _shutdown(self, data: bytes, timeout: float) -> None:
        call = self._open()
        async with asyncio.timeout(timeout):
            await self._write(call, data)
            # A stream that ends while it is half-closed makes gRPC's asyncio API raise its
            # internal batch error here (not an RpcError): the bot is gone, as wanted.
            with contextlib.suppress(grpc.RpcError, grpc.aio.BaseError, asyncio.InvalidStateError):
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
        """Drop the connection at once (the bot sees its stream cancelled); any thread.

        The channel itself is closed by :meth:`aclose` (or when the client is collected)."""
        self.closed = True
        if _running_here(self._loop):
            self._abort()
            return
        with contextlib.suppress(RuntimeError):  # that loop is closed: nothing to do
            self._loop.call_soon_threadsafe(self._abort)

    async def aclose(self) -> None:
        """Drop the connection and close the channel (the bot sees its stream cancelled)."""
        self._abort()
        self._deadline.close()
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.cancel()
            await asyncio.wait((reader,))
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close(None)

    async def __aenter__(self) -> AsyncBotClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_OVER_LIMIT: Final = "message larger than max"
"""What gRPC says when it refuses a message over a channel's size limit: ours received
("Received message larger than max"), or the bot's own sent ("Sent message ...")."""


_CORE_WRITE_FAILURE: Final = "Internal error from Core"
"""What gRPC's asyncio API says when a write fails because the stream ended under it (the
status it then reports is its own, INTERNAL, not the one the stream ended with)."""

WRITE_END_SECONDS: Final = 1.0
"""How long a failed write waits for the stream's reader to tell how the stream ended."""


def _write_failed_in_core(exc: grpc.RpcError) -> bool:
    """Whether ``exc`` is gRPC's own failure to write to a stream that ended under it."""
    return exc.code() is grpc.StatusCode.INTERNAL and (exc.details() or "").startswith(
        _CORE_WRITE_FAILURE
    )


def _status_name(status: int) -> str:
    """The name of a health status the bot answered; the enum is open, so a bot may answer
    a number no status names (then the number itself: not serving, never an exception)."""
    try:
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(status))
    except ValueError:
        return str(status)


async def _truth(value: bool | Awaitable[bool]) -> bool:
    return await value if inspect.isawaitable(value) else bool(value)


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    return asyncio._get_running_loop() is loop


class BotClient:
    """A blocking connection to one bot at ``address``: :class:`AsyncBotClient` driven from
    the calling thread (one :meth:`handshake` per stream).

    Use it from the thread that made it (``kryt bot check``, a series in its own thread);
    :meth:`close` alone may be called from any thread. Made where an event loop is running
    (a notebook, async code), it does its I/O in a private thread instead, and any thread
    may use it (each call still blocks until it is done). A referee that plays many series
    at once uses :class:`AsyncBotClient` on one loop instead.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self._background = asyncio._get_running_loop() is not None
        self._loop = _background_loop() if self._background else _thread_loop()
        self._owner = threading.get_ident()
        self.connection: AsyncBotClient = self._run(_make_async(address))
        """The asynchronous client this one drives."""

    @property
    def closed(self) -> bool:
        """True once the connection is closed or broken."""
        return self.connection.closed

    @property
    def discarded(self) -> list[Decision]:
        """Replies ignored: late for an abandoned request, or second replies to an ended game."""
        return self.connection.discarded

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

    def wait_healthy(self, timeout: float, alive: Callable[[], bool] | None = None) -> None:
        """Wait until the bot's health service says SERVING (see AsyncBotClient)."""
        self._run(self.connection.wait_healthy(timeout, alive))

    def handshake(self, handshake: Handshake, timeout: float) -> HandshakeReply:
        """Open the stream and introduce the series; raises IncompatibleProtocolError."""
        return self._run(self.connection.handshake(handshake, timeout))

    def send(self, message: RefereeMessage, timeout: float = SEND_TIMEOUT) -> None:
        """Send a message that gets no reply (GameStart, GameEnd)."""
        self._run(self.connection.send(message, timeout))

    def unsolicited(self, game_number: int | None = None) -> list[BotMessage]:
        """Messages that arrived without a request pending (see AsyncBotClient)."""
        return self.connection.unsolicited(game_number)

    def decide(self, view: AnyView, clock: Clock, *, game_number: int, timeout: float) -> Reply:
        """Ask for a decision and wait at most ``timeout`` seconds (see AsyncBotClient)."""
        return self._run(
            self.connection.decide(view, clock, game_number=game_number, timeout=timeout)
        )

    def shutdown(self, reason: str, timeout: float = 2.0) -> None:
        """Tell the bot the series is over and close the stream and channel."""
        if self._background or threading.get_ident() == self._owner:
            self._run(self.connection.shutdown(reason, timeout))
        self.close()

    def close(self) -> None:
        """Drop the connection at once (the bot sees its stream cancelled). Any thread may
        call it: from another thread the work is handed to the client's own loop."""
        if not self._background and threading.get_ident() != self._owner:
            self.connection.close()
            return
        if self.connection._channel is None:
            return
        self._run(self.connection.aclose())

    def __enter__(self) -> BotClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _make_async(address: str) -> AsyncBotClient:
    return AsyncBotClient(address)


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

    def __init__(self, client: BotClient, *, handshake_timeout: float = HANDSHAKE_SECONDS) -> None:
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


class AsyncRemotePlayer:
    """A bot behind an :class:`AsyncBotClient` as the asynchronous game loop wants it
    (``referee.match.AsyncPlayer``): its name comes from the handshake reply."""

    def __init__(
        self, client: AsyncBotClient, *, handshake_timeout: float = HANDSHAKE_SECONDS
    ) -> None:
        self.client = client
        self.handshake_timeout = handshake_timeout
        self.name = client.address
        self.reply: HandshakeReply | None = None

    async def handshake(self, handshake: Handshake) -> HandshakeReply:
        """Open the stream; raises BotFault (IncompatibleProtocolError on a version clash)."""
        self.reply = await self.client.handshake(handshake, self.handshake_timeout)
        self.name = self.reply.name
        return self.reply

    async def send(self, message: RefereeMessage) -> None:
        """A message that gets no reply."""
        await self.client.send(message)

    async def decide(self, view: AnyView, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's reply within ``timeout`` seconds; raises BotFault."""
        return await self.client.decide(view, clock, game_number=game_number, timeout=timeout)
