"""A raw-protobuf bot written from docs/protocol.md and proto/ only (no ``sdk``).

It serves ``kryt.v1.Bot`` and the standard health service on ``$KRYT_BOT_ADDRESS``, answers
each ``DecisionRequest`` with its first legal action (as text) and appends every message it
receives, one JSON object a line (the message's bytes in base64), to the file named by
``log`` in ``review.json`` beside this script. ``review.json`` may also ask for one fault
(``fault``) at one request (``game``, ``at``: the index of the bot's request within that
game, 0-based); see :func:`decision` and :func:`answer`.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from kryt_proto.v1 import bot_pb2 as pb

HERE = Path(__file__).resolve().parent
CONFIG: dict[str, Any] = json.loads((HERE / "review.json").read_text())
LOG = Path(CONFIG["log"])
LOCK = threading.Lock()


def note(kind: str, data: bytes = b"") -> None:
    entry = {"kind": kind, "pid": os.getpid(), "raw": base64.b64encode(data).decode()}
    with LOCK, LOG.open("a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")


def faulty(game: int, index: int) -> str:
    if CONFIG.get("game") == game and CONFIG.get("at", 0) == index:
        return str(CONFIG.get("fault", "none"))
    return "none"


def out(**body: Any) -> bytes:
    return bytes(pb.BotMessage(**body).SerializeToString())


def structured(first: str) -> Any:
    """``first`` (default-game text) as a structured Action."""
    words = first.split()
    swap = words[0] == "swap"
    words = words[1:] if swap else words
    if words[0] == "take":
        return pb.Action(kind=pb.ACTION_KIND_TAKE, swap=swap)
    if words[0] == "lead":
        return pb.Action(kind=pb.ACTION_KIND_LEAD, lead=words[1], swap=swap)
    if len(words) == 3:
        return pb.Action(
            kind=pb.ACTION_KIND_COVER_AND_LEAD, cover=words[1], lead=words[2], swap=swap
        )
    return pb.Action(kind=pb.ACTION_KIND_COVER_AND_GO_OUT, cover=words[1], swap=swap)


def decision(request: Any, fault: str, replies: queue.Queue[bytes | None]) -> list[bytes]:
    """The replies to one request, with ``fault`` (``none``: the first legal action)."""
    table = request.HasField("table_view")
    view = request.table_view if table else request.view
    legal = list(view.legal_actions)
    # ``pick``: ``first`` legal action (the default), or ``last``.
    first = legal[-1] if CONFIG.get("pick") == "last" else legal[0]
    rid = request.request_id
    texts = {
        "malformed_text": "dance",
        "illegal": "lead "
        + next(f"{r}{s}" for s in "CDHS" for r in "6789TJQKA" if f"{r}{s}" not in view.hand),
    }
    actions: dict[str, Callable[[], Any]] = {
        "structured": lambda: structured(first),
        "structured_bad": lambda: pb.Action(kind=pb.ACTION_KIND_TAKE, cover="6C"),
        "s_take": lambda: pb.Action(kind=pb.ACTION_KIND_TAKE),
        "s_lead": lambda: pb.Action(kind=pb.ACTION_KIND_LEAD, lead=view.hand[0]),
        "s_cover": lambda: pb.Action(
            kind=pb.ACTION_KIND_COVER_AND_LEAD, cover=view.hand[0], lead=view.hand[1]
        ),
    }
    if fault in texts:
        return [out(decision=pb.Decision(request_id=rid, text=texts[fault]))]
    if fault in actions:
        return [out(decision=pb.Decision(request_id=rid, structured=actions[fault]()))]
    if fault == "empty":
        return [out(decision=pb.Decision(request_id=rid))]
    if fault == "wrong_id":
        return [out(decision=pb.Decision(request_id=rid + 1, text=first))]
    if fault == "bot_error":
        return [out(error=pb.BotError(message="I give up"))]
    if fault == "big":
        return [out(decision=pb.Decision(request_id=rid, text="x" * 70_000))]
    reply = out(decision=pb.Decision(request_id=rid, text=first))
    if fault == "late":  # answered after ``sleep`` seconds; the stream is still read
        threading.Timer(float(CONFIG.get("sleep", 3.0)), replies.put, (reply,)).start()
        return []
    return [reply, reply] if fault == "twice" else [reply]


def answer(
    data: bytes, state: dict[str, int], replies: queue.Queue[bytes | None]
) -> list[bytes] | None:
    """The replies to one referee message; None: the series is over."""
    message = pb.RefereeMessage.FromString(data)
    body = str(message.WhichOneof("body"))
    note(body, data)
    if body == "handshake":
        reply = pb.HandshakeReply(
            protocol_version=int(CONFIG.get("protocol_version", 1)),
            name=str(CONFIG.get("reply_name", CONFIG["name"])),
            version="1.0.0",
            sdk="doc-review raw protobuf",
            rulesets=list(CONFIG.get("rulesets", ["default", "classic"])),
        )
        return [out(handshake_reply=reply)]
    if body == "game_start":
        game = message.game_start.game_number
        state["index"] = 0
        fault = faulty(game, 0)
        if fault == "early":
            return [out(decision=pb.Decision(request_id=12345, text="take"))]
        if fault == "handshake_again":
            again = pb.HandshakeReply(protocol_version=1, name=CONFIG["name"], version="1.0.0")
            return [out(handshake_reply=again)]
        return []
    if body == "decision_request":
        request = message.decision_request
        index = state.get("index", 0)
        state["index"] = index + 1
        return decision(request, faulty(request.game_number, index), replies)
    if body == "game_end":
        if faulty(message.game_end.game_number, 0) == "exit_after_end":
            note("exiting")
            os._exit(3)
        return []
    return None


def play(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
    """Read the stream on a thread of its own (a bot that sleeps on a request still takes
    the referee's next messages) and send what it queues, in order."""
    replies: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        state: dict[str, int] = {}
        try:
            for data in requests:
                answered = answer(data, state, replies)
                if answered is None:  # Shutdown: close the stream and exit
                    note("exiting")
                    threading.Timer(0.05, os._exit, (0,)).start()
                    break
                for reply in answered:
                    replies.put(reply)
            else:
                note("stream_ended")
        except grpc.RpcError:
            note("stream_ended")
        replies.put(None)

    threading.Thread(target=read, daemon=True).start()
    while (reply := replies.get()) is not None:
        yield reply


def main() -> None:
    address = os.environ["KRYT_BOT_ADDRESS"]
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
    note("started")
    print(f"serving on {address}", file=sys.stderr, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
