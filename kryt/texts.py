"""Phrases more than one command prints."""

from __future__ import annotations


def result_by(result: str, ending: str) -> str:
    """``"<result> by <ending>"``, or the ending alone when it already says the result:
    ``draw by final answer``, not ``draw by draw by final answer``."""
    return ending if ending.startswith(f"{result} ") else f"{result} by {ending}"


DETAIL_LINES = 12
"""Lines of a forfeit's detail (how the bot's process stood, its last output) shown below
the line that names it; ``kryt replay`` shows a stored game's in full."""


def detail_lines(
    detail: str, *, width: int = 200, below: int = DETAIL_LINES, more: str = ""
) -> tuple[str, list[str]]:
    """A forfeit's ``detail`` (bot text: the reason, then its process and last output) as
    its first line and the lines to show below it, indented by four spaces, every one
    escaped and cut at ``width`` characters. At most ``below`` lines are shown below; the
    last says how many more there are, then ``more`` (e.g. ``": kryt replay GAME"``)."""
    from sandbox.death import printable

    first, *rest = detail.split("\n")
    shown = rest[:below]
    if len(rest) > len(shown):
        shown[-1] = f"... ({len(rest) - len(shown) + 1} more lines{more})"
    return printable(first)[:width], [f"    {printable(line)[:width]}" for line in shown]
