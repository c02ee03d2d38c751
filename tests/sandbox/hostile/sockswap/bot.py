"""Hostile: instead of serving, points its socket path at the host's Docker API socket.

A referee that connect()s by path would follow the symlink on the host and talk to dockerd.
"""

import os
import time

address = os.environ["KRYT_BOT_ADDRESS"]
path = address.removeprefix("unix://")
for target in ("/var/run/docker.sock", "/run/docker.sock"):
    try:
        os.symlink(target, path)
        break
    except OSError:
        continue
while True:
    time.sleep(3600)
