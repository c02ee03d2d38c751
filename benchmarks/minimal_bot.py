#!/usr/bin/env python3
"""The cheapest bot that speaks the protocol: raw protobuf, no SDK, the first legal action.

    python benchmarks/minimal_bot.py ADDRESS [--aio]

It is what a bot in another language looks like from the wire (``proto/kryt/v1/bot.proto``
and nothing else). Its own work is ~5 µs a message more than a bare echo server's (parse the
request, build the reply), so a series against it measures the referee's cost per decision
rather than a bot's. Its CPU per message is higher than the echo server's all the same: a
slower peer (the referee) leaves its loop idle between messages (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kryt_proto.v1 import bot_pb2 as pb

SERVICE = "kryt.v1.Bot"


def answer(data: bytes) -> bytes | None:
    """The reply to one referee message (None: none is due; b"": the series is over)."""
    message = pb.RefereeMessage.FromString(data)
    body = message.WhichOneof("body")
    if body == "decision_request":
        request = message.decision_request
        decision = pb.Decision(request_id=request.request_id, text=request.view.legal_actions[0])
        return pb.BotMessage(decision=decision).SerializeToString()
    if body == "handshake":
        reply = pb.HandshakeReply(
            protocol_version=message.handshake.protocol_version,
            name="minimal",
            version="1.0.0",
            sdk="raw protobuf",
        )
        return pb.BotMessage(handshake_reply=reply).SerializeToString()
    if body == "shutdown":
        return b""
    return None


def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    """Answer every decision request with its first legal action."""
    for data in requests:
        reply = answer(data)
        if reply == b"":
            return
        if reply is not None:
            yield reply


async def play_aio(requests: AsyncIterator[bytes], context: object) -> AsyncIterator[bytes]:
    """:func:`play` on gRPC's asyncio server, which serves any number of streams at once."""
    async for data in requests:
        reply = answer(data)
        if reply == b"":
            return
        if reply is not None:
            yield reply


async def serve_aio(address: str) -> None:
    """Serve on gRPC's asyncio API (for benchmarks with many concurrent streams)."""
    server = grpc.aio.server()
    handler = grpc.stream_stream_rpc_method_handler(play_aio)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Play": handler}),)
    )
    healthy = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(healthy, server)
    for service in ("", SERVICE):
        await healthy.set(service, health_pb2.HealthCheckResponse.SERVING)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


def main() -> None:
    if "--aio" in sys.argv[2:]:
        asyncio.run(serve_aio(sys.argv[1]))
        return
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.stream_stream_rpc_method_handler(play)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Play": handler}),)
    )
    healthy = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(healthy, server)
    for service in ("", SERVICE):
        healthy.set(service, health_pb2.HealthCheckResponse.SERVING)
    server.add_insecure_port(sys.argv[1])
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
