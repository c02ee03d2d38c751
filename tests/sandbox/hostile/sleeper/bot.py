"""Hostile: ignores SIGTERM and sleeps forever without ever serving."""

import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(3600)
