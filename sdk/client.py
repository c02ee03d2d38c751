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

import itertools
import queue
import threading
import time
from dataclasses import dataclass
from typing import Final

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.rules import View
from sdk.messages import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
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
from sdk.wire import PLAY_PATH, SERVICE, MalformedMessageError, decode_bot_message
from sdk.wire import encode_referee_message as _encode

CHANNEL_OPTIONS: Final[list[tuple[str, int]]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]


class BotFault(RuntimeError):
    """The bot misbehaved. ``reason`` is the forfeit to record, ``offending`` what it sent."""

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

    action: str
    elapsed: float
    request_id: int


_END: Final = object()  # ends the request stream


class BotClient:
    """A connection to one bot at ``address``; one :meth:`handshake` per stream."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self._outbox: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._inbox: queue.SimpleQueue[tuple[float, bytes | Exception | None]] = queue.SimpleQueue()
        self._call: grpc.CallIterator[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._ids = itertools.count(1)
        self._timed_out: set[int] = set()
        self._answered: set[int] = set()
        self.discarded: list[Decision] = []
        """Late replies to requests that had already timed out (ignored, kept for the record)."""
        self.closed = False

    # ------------------------------------------------------------------ connection

    def wait_healthy(self, timeout: float) -> None:
        """Wait until the bot's health service says SERVING; raises BotUnreachableError."""
        stub = health_pb2_grpc.HealthStub(self._channel)
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BotUnreachableError(
                    f"bot at {self.address} not healthy after {timeout:.1f}s: {last}"
                )
            try:
                answer = stub.Check(
                    health_pb2.HealthCheckRequest(service=SERVICE),
                    timeout=min(left, 1.0),
                    wait_for_ready=True,
                )
            except grpc.RpcError as exc:
                last = f"{exc.code().name}: {exc.details()}"
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                continue
            if answer.status == health_pb2.HealthCheckResponse.SERVING:
                return
            last = f"status {health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)}"
            time.sleep(0.05)

    def _open(self) -> None:
        play = self._channel.stream_stream(PLAY_PATH, None, None)
        self._call = play(iter(self._outbox.get, _END), wait_for_ready=True)
        self._reader = threading.Thread(target=self._read, name="kryt-bot-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._call is not None
        try:
            for data in self._call:
                self._inbox.put((time.monotonic(), data))
        except grpc.RpcError as exc:
            self._inbox.put((time.monotonic(), exc))
        else:
            self._inbox.put((time.monotonic(), None))

    def _send(self, message: RefereeMessage) -> None:
        if self.closed:
            raise BotCrashedError(f"connection to {self.address} is closed")
        if self._call is None:
            self._open()
        self._outbox.put(_encode(message))

    def _receive(self, deadline: float) -> tuple[float, BotMessage]:
        """Next message from the bot; raises BotTimeoutError (as TimeoutError) or a fault."""
        left = deadline - time.monotonic()
        try:
            at, item = self._inbox.get(timeout=max(0.0, left))
        except queue.Empty:
            raise TimeoutError from None
        return at, self._decode(item)

    def _decode(self, item: bytes | Exception | None) -> BotMessage:
        if item is None:
            self.closed = True
            raise BotCrashedError(f"bot at {self.address} closed the stream")
        if isinstance(item, Exception):
            self.closed = True
            detail = item.details() if isinstance(item, grpc.Call) else str(item)
            code = item.code().name if isinstance(item, grpc.Call) else type(item).__name__
            if code == "RESOURCE_EXHAUSTED":  # the bot sent more than the message size limit
                raise MalformedReplyError(
                    f"bot at {self.address} sent a message over the {MAX_MESSAGE_BYTES}-byte "
                    f"limit: {detail}",
                    offending=f"<message over {MAX_MESSAGE_BYTES} bytes>",
                )
            raise BotCrashedError(f"connection to bot at {self.address} lost: {code}: {detail}")
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
        self._send(handshake)
        try:
            _, message = self._receive(time.monotonic() + timeout)
        except TimeoutError:
            raise BotTimeoutError(f"no handshake reply within {timeout:.1f}s") from None
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
        return message

    def send(self, message: RefereeMessage) -> None:
        """Send a message that gets no reply (GameStart, GameEnd)."""
        self._send(message)

    def unsolicited(self) -> list[BotMessage]:
        """Messages that arrived without a request pending (late replies to timed-out
        requests are not counted: they go to :attr:`discarded`). Raises BotFault when the
        bot reported an error or the connection broke."""
        found: list[BotMessage] = []
        while True:
            try:
                _, item = self._inbox.get_nowait()
            except queue.Empty:
                return found
            message = self._decode(item)
            if isinstance(message, Decision) and message.request_id in self._timed_out:
                self._timed_out.discard(message.request_id)
                self.discarded.append(message)
            else:
                found.append(message)

    def decide(self, view: View, clock: Clock, *, game_number: int, timeout: float) -> Reply:
        """Ask for a decision and wait at most ``timeout`` seconds for the reply.

        Raises BotTimeoutError, MalformedReplyError, UnexpectedReplyError (a message that
        arrived unasked before this request, or a reply to another request) or
        BotCrashedError. The action text is returned unchecked: legality is the caller's.
        """
        stray = self.unsolicited()
        if stray:
            raise UnexpectedReplyError(
                f"bot sent {len(stray)} message(s) nobody asked for", repr(stray[0])
            )
        request_id = next(self._ids)
        sent = time.monotonic()
        self._send(
            DecisionRequest(request_id=request_id, game_number=game_number, view=view, clock=clock)
        )
        deadline = sent + timeout
        while True:
            try:
                at, message = self._receive(deadline)
            except TimeoutError:
                self._timed_out.add(request_id)
                raise BotTimeoutError(
                    f"no decision within {timeout:.3f}s (request {request_id})"
                ) from None
            if isinstance(message, Decision) and message.request_id == request_id:
                self._answered.add(request_id)
                return Reply(action=message.action, elapsed=at - sent, request_id=request_id)
            if isinstance(message, Decision) and message.request_id in self._timed_out:
                self._timed_out.discard(message.request_id)
                self.discarded.append(message)
                continue
            what = (
                f"a second reply to request {message.request_id}"
                if isinstance(message, Decision) and message.request_id in self._answered
                else f"{type(message).__name__} instead of the reply to request {request_id}"
            )
            raise UnexpectedReplyError(f"bot sent {what}", repr(message))

    def shutdown(self, reason: str, timeout: float = 2.0) -> None:
        """Tell the bot the series is over and close the stream and channel."""
        if not self.closed and self._call is not None:
            self._outbox.put(_encode(Shutdown(reason=reason)))
            self._outbox.put(_END)
            if self._reader is not None:
                self._reader.join(timeout)
        self.close()

    def close(self) -> None:
        """Drop the connection at once (the bot sees its stream cancelled)."""
        if self._call is not None:
            self._outbox.put(_END)
            cancel = getattr(self._call, "cancel", None)
            if cancel is not None:
                cancel()
        self.closed = True
        self._channel.close()

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
    """A bot behind a :class:`BotClient` as a series loop wants it (``sdk.local.Player``):
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

    def decide(self, view: View, clock: Clock, game_number: int, timeout: float) -> Reply:
        """The bot's reply within ``timeout`` seconds; raises BotFault."""
        return self.client.decide(view, clock, game_number=game_number, timeout=timeout)
