"""Hostile: answers ``Big`` with 48 MiB of zeros, gzip-compressed by gRPC to about 48 KiB.

On the wire the reply is under the referee's 64 KiB reply limit; decompressed it is 768
times over it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import _serve  # type: ignore[import-not-found]
import grpc

BOMB_BYTES = 48 << 20


def big() -> bytes:
    return bytes(BOMB_BYTES)


_original = grpc.unary_unary_rpc_method_handler


def _compressing(
    behaviour: Callable[[Any, grpc.ServicerContext], Any],
    request_deserializer: Any = None,
    response_serializer: Any = None,
) -> grpc.RpcMethodHandler[Any, Any]:
    def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
        context.set_compression(grpc.Compression.Gzip)
        return behaviour(request, context)

    return _original(wrapped, request_deserializer, response_serializer)


grpc.unary_unary_rpc_method_handler = _compressing  # type: ignore[assignment]
_serve.serve(big=big)
