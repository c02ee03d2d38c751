"""Revision scripts, applied in order; never edit one that has been released."""
