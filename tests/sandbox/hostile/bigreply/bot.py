"""Hostile: answers ``/kryt.test.Probe/Big`` with 100 MB."""

from _serve import serve  # type: ignore[import-not-found]

serve(big=lambda: b"\x04" * (100 << 20))
