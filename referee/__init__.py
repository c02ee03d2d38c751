"""The referee: rules core (``referee.rules``), protocol (``referee.protocol``), the bot client,
the game and series loops and the record of a game.

Importing this package imports nothing heavy; the rules core is usable on its own.
"""

import importlib.util as _importlib_util
import os as _os
import re as _re

OLDER_TRANSPORT_VERIFIED: tuple[tuple[int, int], ...] = ((1, 85),)
"""grpcio releases (major, minor) measured with gRPC's older transport (docs/benchmarks.md,
"gRPC's transport"), the only ones it is asked for on: gRPC is retiring the switch, and a
release without it would log "Unknown experiment" in every process (every bot's log too)."""


def grpcio_version() -> tuple[int, int] | None:
    """The installed grpcio's (major, minor), read without importing gRPC (which would read
    its settings then); ``None`` if it cannot be told."""
    try:
        spec = _importlib_util.find_spec("grpc")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            with open(_os.path.join(folder, "_grpcio_metadata.py"), encoding="utf-8") as file:
                text = file.read()
        except OSError:
            continue
        found = _re.search(r"(\d+)\.(\d+)", text)
        if found:
            return int(found[1]), int(found[2])
    return None


GRPC_DEFAULTS: dict[str, str] = {
    # gRPC's fork handlers crash a child forked while other threads are inside gRPC (seen as
    # SIGSEGV of the sandbox launcher between fork and exec, the bot then failing to start).
    # The referee forks launchers from threads that talk to bots, so it never wants them; a
    # bot's runtime (which imports this package too) must not fork inside gRPC either.
    "GRPC_ENABLE_FORK_SUPPORT": "false",
}
"""gRPC settings every process of ours (referee, runner, SDK bot) starts with. gRPC reads them
once, when it is first imported, so this package sets them at import, before any gRPC import of
ours; a setting already in the environment wins (an empty ``GRPC_EXPERIMENTS`` keeps gRPC's own
defaults)."""

if grpcio_version() in OLDER_TRANSPORT_VERIFIED:
    # gRPC's EventEngine endpoints (its default client and server transport) cost a ping-pong
    # of small messages, a referee's and a bot's only traffic, about twice the CPU of its
    # older pollers: both sides use the older ones.
    GRPC_DEFAULTS["GRPC_EXPERIMENTS"] = "-event_engine_client,-event_engine_listener"

GRPC_SETTING_NAMES: tuple[str, ...] = ("GRPC_ENABLE_FORK_SUPPORT", "GRPC_EXPERIMENTS")
"""Every gRPC setting :data:`GRPC_DEFAULTS` may hold."""


def grpc_settings() -> str:
    """The gRPC settings in force in this process, for a report (benchmarks print it)."""
    return ", ".join(f"{name}={_os.environ.get(name)!r}" for name in GRPC_SETTING_NAMES)


for _name, _value in GRPC_DEFAULTS.items():
    _os.environ.setdefault(_name, _value)
