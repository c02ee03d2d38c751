"""Author tools: run the referee against your bot on your own machine.

- :func:`play_local`: a series between two bot objects in-process (fast offline testing).
- :func:`check_bot`: start a bot folder (or dial an address) and play games over gRPC
  against the reference bots, the way the arena will.
- :func:`new_bot`: a working bot folder from the template.

These sit above the referee and the sandbox; the bot runtime (``sdk``) never imports them,
so a bot's sandbox carries none of this code.
"""

from sdk.tools.check import CheckReport, check_bot
from sdk.tools.local import SeriesResult, play_local
from sdk.tools.template import new_bot

__all__ = ["CheckReport", "SeriesResult", "check_bot", "new_bot", "play_local"]
