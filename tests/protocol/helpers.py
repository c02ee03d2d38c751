"""Servers for protocol tests: a real SDK bot server, and raw servers that misbehave."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc

from referee.protocol.messages import BotMessage, RefereeMessage
from referee.protocol.wire import PLAY_METHOD, SERVICE, decode_referee_message, encode_bot_message
from sdk.bot import Bot
from sdk.server import GRPC_OPTIONS, BotServer


@contextmanager
def socket_dir() -> Iterator[Path]:
    """A short temporary directory (Unix socket paths are limited to ~100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="kryt-t-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def served(bot: Bot, transport: str) -> Iterator[tuple[str, BotServer]]:
    """``bot`` served in this process on a Unix socket (``"uds"``) or TCP (``"tcp"``)."""
    with socket_dir() as tmp:
        address = f"unix://{tmp / 'bot.sock'}" if transport == "uds" else "127.0.0.1:0"
        server = BotServer(bot, address)
        bound = server.start()
        try:
            yield bound, server
        finally:
            server.stop(grace=0.2)


Behaviour = Callable[[RefereeMessage], list[BotMessage | bytes]]
"""What a raw test server sends back for each referee message (bytes are sent verbatim)."""


@contextmanager
def raw_server(behaviour: Behaviour) -> Iterator[str]:
    """A Play service driven by ``behaviour`` (no SDK driver), on a Unix socket."""

    def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        for data in requests:
            for out in behaviour(decode_referee_message(data)):
                yield out if isinstance(out, bytes) else encode_bot_message(out)

    handler = grpc.stream_stream_rpc_method_handler(play)
    with serving(SERVICE, {PLAY_METHOD: handler}, options=GRPC_OPTIONS) as address:
        yield address


@contextmanager
def serving(
    service: str,
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]],
    *,
    options: Sequence[tuple[str, Any]] = (),
) -> Iterator[str]:
    """A gRPC server of ``handlers`` (method name -> handler) under ``service`` on a Unix
    socket of its own: its address while the block runs."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=list(options))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    with socket_dir() as tmp:
        address = f"unix://{tmp / 'raw.sock'}"
        server.add_insecure_port(address)
        server.start()
        try:
            yield address
        finally:
            server.stop(0.2).wait()
