"""The referee: rules core (``referee.rules``), protocol (``referee.protocol``), the bot client,
the game and series loops and the record of a game.

Importing this package imports nothing heavy; the rules core is usable on its own.
"""

import os as _os

# gRPC's fork handlers crash a child forked while other threads are inside gRPC (seen as
# SIGSEGV of the sandbox launcher between fork and exec, the bot then failing to start).
# The referee forks launchers from threads that talk to bots, so it never wants them; a
# bot's runtime (which imports this package too) must not fork inside gRPC either. Set
# before any gRPC import of ours; an explicit setting in the environment wins.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
