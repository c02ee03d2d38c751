"""Hostile: says where it serves (not ``$KRYT_BOT_ADDRESS``), in colour, then never makes
its socket; a bot of any language that ignored the address it was given looks like this."""

import sys
import time

BANNER = "misaddressed 1.0.0 serving on 127.0.0.1:50051 \x1b[2J\x1b]0;PWNED\x07"
print(BANNER, file=sys.stderr, flush=True)
while True:
    time.sleep(3600)
