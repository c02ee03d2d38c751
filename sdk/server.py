"""Serve a :class:`~sdk.bot.Bot` over gRPC: the ``kryt.v1.Bot`` service plus standard health.

    from sdk import Bot, serve
    class MyBot(Bot):
        def act(self, view): return view.legal_actions[0]
    if __name__ == "__main__":
        serve(MyBot())

The address comes from the ``address`` argument, else ``sys.argv[1]``, else the environment
variable ``KRYT_BOT_ADDRESS``, else ``127.0.0.1:50051``; ``unix:///path/bot.sock`` serves on a
Unix domain socket. The server runs until the referee sends ``Shutdown`` or the process gets
SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
import threading
import time
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from types import FrameType
from typing import Final

import grpc

# health.aio (the public name of this module) is missing from the package's type stubs.
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from referee.protocol.messages import MAX_REPLY_BYTES, MAX_REQUEST_BYTES, BotError, Shutdown
from referee.protocol.wire import (
    PLAY_METHOD,
    SERVICE,
    MalformedMessageError,
    decode_referee_message,
    encode_bot_message,
)
from sdk.bot import Bot
from sdk.driver import BotDriver

ADDRESS_ENV: Final = "KRYT_BOT_ADDRESS"
DEFAULT_ADDRESS: Final = "127.0.0.1:50051"

GRPC_OPTIONS: Final[list[tuple[str, int]]] = [
    ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
    ("grpc.max_send_message_length", MAX_REPLY_BYTES),
    ("grpc.so_reuseport", 0),  # a second bot on the same port must fail, not share it
]


class AddressError(ValueError):
    """The address to serve on is malformed or cannot be bound."""


def resolve_address(address: str | None = None, argv: list[str] | None = None) -> str:
    """The address to serve on: argument, else ``argv[1]``, else ``$KRYT_BOT_ADDRESS``."""
    args = sys.argv if argv is None else argv
    chosen = address or (args[1] if len(args) > 1 else None) or os.environ.get(ADDRESS_ENV)
    chosen = (chosen or DEFAULT_ADDRESS).strip()
    if not chosen or chosen.startswith("-"):
        raise AddressError(
            f"bad bot address {chosen!r}: expected host:port or unix:///path/to.sock"
        )
    return chosen


def _unix_path(address: str) -> Path | None:
    if address.startswith("unix://"):
        return Path(address.removeprefix("unix://"))
    if address.startswith("unix:"):
        return Path(address.removeprefix("unix:"))
    return None


def bot_identity(bot: Bot) -> tuple[str, str]:
    """Name and version of ``bot``: its class attributes, else the ``bot.toml`` beside the
    file that defines its class, else beside the running script, else in the working
    directory, else the class name and ``0.0.0``.

    The class's own folder comes first so that two bots played in one process (a local
    series, ``check``) do not both take the name of the working directory's ``bot.toml``."""
    name, version = bot.name, bot.version
    if not (name and version):
        places: list[Path] = []
        for module in (sys.modules.get(type(bot).__module__), sys.modules.get("__main__")):
            source = getattr(module, "__file__", None)
            if source:
                places.append(Path(source).resolve().parent)
        places.append(Path.cwd())
        for place in places:
            manifest = place / "bot.toml"
            if manifest.is_file():
                try:
                    data = tomllib.loads(manifest.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                    break  # the sandbox validates manifests; here we only want a name
                name = name or str(data.get("name", ""))
                version = version or str(data.get("version", ""))
                break
    return name or type(bot).__name__.lower(), version or "0.0.0"


class BotServer:
    """A gRPC server for one bot. :meth:`start`, then :meth:`wait` or :meth:`stop`.

    It serves on gRPC's asyncio API from an event loop of its own, in a background thread:
    one loop turn per message instead of the threaded server's hand-offs between a reader
    thread, a worker and a condition variable (the bot's CPU per decision is what a
    tournament pays for). The bot's hooks run on that loop, so the messages of every stream
    are handled in turn and a bot object never sees two calls at once.
    """

    def __init__(self, bot: Bot, address: str) -> None:
        self.bot = bot
        self.address = address
        self.name, self.version = bot_identity(bot)
        self.shutdown_requested = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._server: grpc.aio.Server | None = None
        self._health = health_aio.HealthServicer()

    def start(self) -> str:
        """Bind and start serving; returns the bound address (the real port for ``:0``)."""
        sock = _unix_path(self.address)
        if sock is not None and sock.exists() and stat.S_ISSOCK(sock.stat().st_mode):
            sock.unlink()  # a stale socket from a previous run would make the bind fail
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="kryt-bot-loop", daemon=True
        )
        self._thread.start()
        try:
            port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        except BaseException:
            self._close_loop()
            raise
        if sock is None and self.address.rsplit(":", 1)[-1] == "0":
            return f"{self.address.rsplit(':', 1)[0]}:{port}"
        return self.address

    async def _start(self) -> int:
        server = grpc.aio.server(options=GRPC_OPTIONS)
        handler = grpc.stream_stream_rpc_method_handler(self._play)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {PLAY_METHOD: handler}),)
        )
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        try:
            port = server.add_insecure_port(self.address)
        except RuntimeError as exc:
            raise AddressError(f"cannot serve on {self.address!r}: {exc}") from None
        if _unix_path(self.address) is None and port == 0:
            raise AddressError(f"cannot serve on {self.address!r} (port in use?)")
        await server.start()
        self._server = server
        for service in ("", SERVICE):
            await self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        return port

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the referee sends ``Shutdown``; True if it did."""
        return self.shutdown_requested.wait(timeout)

    def stop(self, grace: float = 1.0) -> None:
        """Stop serving (open streams get ``grace`` seconds to finish).

        A bot stuck in its own code holds the loop: after ``grace`` plus a second the loop's
        daemon thread is abandoned, so the process can still exit."""
        if self._thread is None or not self._loop.is_running():
            return
        stopping = asyncio.run_coroutine_threadsafe(self._stop(grace), self._loop)
        try:
            stopping.result(timeout=grace + 1.0)
        except TimeoutError:
            return
        self._close_loop()

    async def _stop(self, grace: float) -> None:
        await self._health.enter_graceful_shutdown()
        if self._server is not None:
            await self._server.stop(grace)

    def _close_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        self._loop.close()

    async def _play(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        driver = BotDriver(self.bot, name=self.name, version=self.version)
        async for data in requests:
            received = time.monotonic()
            try:
                message = decode_referee_message(data, lazy=True)
            except MalformedMessageError as exc:
                yield encode_bot_message(BotError(f"bot could not read the referee: {exc}"))
                continue
            reply = driver.handle(message, received)
            if reply is not None:
                yield encode_bot_message(reply)
            if isinstance(message, Shutdown):
                self.shutdown_requested.set()
                return


def serve(bot: Bot, address: str | None = None) -> None:
    """Serve ``bot`` until the referee says ``Shutdown`` or SIGTERM/SIGINT arrives."""
    server = BotServer(bot, resolve_address(address))
    bound = server.start()
    print(f"kryt bot {server.name} {server.version} serving on {bound}", file=sys.stderr)

    def _stop(signum: int, frame: FrameType | None) -> None:
        server.shutdown_requested.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    try:
        while not server.wait(0.5):  # short waits keep the main thread responsive to signals
            pass
    finally:
        server.stop(grace=1.0)
