"""Broken: crashes before serving."""

raise RuntimeError("crasher bot gave up at start-up")
