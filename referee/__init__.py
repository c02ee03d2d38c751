"""The referee: rules core (``referee.rules``), protocol (``referee.protocol``), the bot client,
the game and series loops and the record of a game.

Importing this package imports nothing heavy; the rules core is usable on its own.
"""

import os as _os

GRPC_DEFAULTS: dict[str, str] = {
    # gRPC's fork handlers crash a child forked while other threads are inside gRPC (seen as
    # SIGSEGV of the sandbox launcher between fork and exec, the bot then failing to start).
    # The referee forks launchers from threads that talk to bots, so it never wants them; a
    # bot's runtime (which imports this package too) must not fork inside gRPC either.
    "GRPC_ENABLE_FORK_SUPPORT": "false",
    # gRPC's EventEngine endpoints (its default client and server transport) cost a Python
    # ping-pong about twice the CPU of its older pollers: a bare asyncio echo client 133 -> 65
    # µs a round trip at 64 streams, the referee 322 -> 158 µs a decision (docs/benchmarks.md,
    # "gRPC's transport"). A referee and a bot exchange one small message each way per
    # decision, the worst case for it, so both sides default to the older transport.
    "GRPC_EXPERIMENTS": "-event_engine_client,-event_engine_listener",
}
"""gRPC settings every process of ours (referee, runner, SDK bot) starts with. gRPC reads them
once, when it is first imported, so this package sets them at import, before any gRPC import of
ours; a setting already in the environment wins (an empty ``GRPC_EXPERIMENTS`` keeps gRPC's own
defaults)."""

for _name, _value in GRPC_DEFAULTS.items():
    _os.environ.setdefault(_name, _value)
