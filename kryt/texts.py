"""Phrases more than one command prints."""

from __future__ import annotations


def result_by(result: str, ending: str) -> str:
    """``"<result> by <ending>"``, or the ending alone when it already says the result:
    ``draw by final answer``, not ``draw by draw by final answer``."""
    return ending if ending.startswith(f"{result} ") else f"{result} by {ending}"
