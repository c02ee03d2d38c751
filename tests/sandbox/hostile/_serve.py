"""Minimal bot server for the sandbox tests: health service + a JSON probe method.

Copied next to each fixture's ``bot.py`` by the tests (the fixtures need nothing but grpcio
and grpcio-health-checking, so they run before and without the SDK). ``serve()`` binds to
``KRYT_BOT_ADDRESS`` (or argv[1]), reports SERVING and exposes ``/kryt.test.Probe/Report``
returning ``json.dumps(report())`` and ``/kryt.test.Probe/Big`` returning ``big()`` bytes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc


def _identity(data: bytes) -> bytes:
    return data


def serve(
    report: Callable[[], dict[str, Any]] | None = None,
    big: Callable[[], bytes] | None = None,
    *,
    block: bool = True,
) -> grpc.Server:
    """Start serving; block forever unless ``block`` is False."""
    address = sys.argv[1] if len(sys.argv) > 1 else os.environ["KRYT_BOT_ADDRESS"]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.max_send_message_length", 512 * 1024 * 1024)],
    )
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)

    def _report(request: bytes, context: grpc.ServicerContext) -> bytes:
        return json.dumps(report() if report else {}).encode()

    def _big(request: bytes, context: grpc.ServicerContext) -> bytes:
        return big() if big else b""

    methods = {
        "Report": grpc.unary_unary_rpc_method_handler(_report, _identity, _identity),
        "Big": grpc.unary_unary_rpc_method_handler(_big, _identity, _identity),
    }
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("kryt.test.Probe", methods)]
    )
    server.add_insecure_port(address)
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    if block:
        while True:
            time.sleep(3600)
    return server
