"""A raw gRPC spy bot (no ``sdk``): it logs every message the referee sends it.

Serves ``kryt.v1.Bot`` and the health service on ``$KRYT_BOT_ADDRESS``. Each message it
receives is appended to the log named in ``spy.json`` beside this script, one JSON object a
line with the message's bytes in base64. At start it logs its environment and command line
(what a bot can read besides the stream). It plays a legal action chosen by the request id
(random, so games vary), or, when ``spy.json`` says ``illegal_game``, an illegal text at its
first decision of that game.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from kryt_proto.v1 import bot_pb2 as pb

HERE = Path(__file__).resolve().parent
CONFIG: dict[str, Any] = json.loads((HERE / "spy.json").read_text())
LOG = Path(CONFIG["log"])
LOCK = threading.Lock()
CARDS = [r + s for s in "CDHS" for r in "6789TJQKA"]


def note(kind: str, data: bytes = b"", **extra: Any) -> None:
    entry = {"kind": kind, "pid": os.getpid(), "raw": base64.b64encode(data).decode(), **extra}
    with LOCK, LOG.open("a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")


def out(**body: Any) -> bytes:
    return bytes(pb.BotMessage(**body).SerializeToString())


def decide(request: Any, first_of_game: bool) -> bytes:
    view = request.table_view if request.HasField("table_view") else request.view
    legal = list(view.legal_actions)
    text = legal[request.request_id % len(legal)]
    if first_of_game and CONFIG.get("illegal_game") == request.game_number:
        public = set(view.hand) | set(view.pile if hasattr(view, "pile") else view.led)
        text = "lead " + next(c for c in CARDS if c not in public)
    note("sent", text.encode())
    return out(decision=pb.Decision(request_id=request.request_id, text=text))


def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    replies: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        asked: set[int] = set()
        try:
            for data in requests:
                message = pb.RefereeMessage.FromString(data)
                body = str(message.WhichOneof("body"))
                note(body, data)
                if body == "handshake":
                    reply = pb.HandshakeReply(
                        protocol_version=1,
                        name=CONFIG["name"],
                        version="1.0.0",
                        sdk="view-leak-review raw protobuf",
                        rulesets=["default", "classic"],
                    )
                    replies.put(out(handshake_reply=reply))
                elif body == "decision_request":
                    number = message.decision_request.game_number
                    replies.put(decide(message.decision_request, number not in asked))
                    asked.add(number)
                elif body == "shutdown":
                    threading.Timer(0.05, os._exit, (0,)).start()
                    break
        except grpc.RpcError:
            pass
        replies.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (reply := replies.get()) is not None:
        yield reply


def main() -> None:
    address = os.environ["KRYT_BOT_ADDRESS"]
    note("started", json.dumps({"env": dict(os.environ), "argv": sys.argv}).encode())
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handler = grpc.stream_stream_rpc_method_handler(play)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("kryt.v1.Bot", {"Play": handler}),)
    )
    healthy = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(healthy, server)
    healthy.set("", health_pb2.HealthCheckResponse.SERVING)
    server.add_insecure_port(address)
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
