"""Small text helpers shared by the leaderboard's table, web pages and ``kryt ratings``.

Standard library only: ``kryt leaderboard`` formats a board read from a stored snapshot
without importing NumPy or SciPy (tests/cli/test_leaderboard_startup.py).
"""

from __future__ import annotations

import unicodedata
from decimal import Decimal

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def confidence_percent(confidence: float) -> str:
    """``confidence`` (a level between 0 and 1) as a percentage with every digit it was given:
    ``0.95`` -> ``95%``, ``0.9995`` -> ``99.95%``, ``0.5`` -> ``50%``.

    A fixed number of decimals would round 0.9995 to "100%", which no interval has; the
    shortest decimal that reads back as the same float (Python's ``repr``) is exactly what
    the user typed, so it is shifted by two places instead of rounded."""
    shifted = (Decimal(repr(float(confidence))) * 100).normalize()
    return f"{shifted:f}%"


def tenths(value: float) -> str:
    """``value`` to one decimal, a zero never written ``-0.0`` (``-0.04`` -> ``0.0``)."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def board_name(ruleset: str, table_size: int) -> str:
    """``default game`` or ``classic, table of 3``: how a board is named in titles and notes."""
    if ruleset == "default" and table_size == 2:
        return "default game"
    return f"{ruleset}, table of {table_size}"


def board_flags(ruleset: str, table_size: int) -> str:
    """The ``kryt leaderboard`` options that show a board: ``--ruleset classic --table-size 3``
    (the web API takes the same as ``?ruleset=classic&table_size=3``)."""
    return f"--ruleset {ruleset} --table-size {table_size}"


def visible(text: str) -> str:
    """``text`` with every control, format or line-separator character written as an escape
    (``\\x1b``, ``\\u202e``): what ``sandbox.death.printable`` does for bot output, here
    for the free text of the database (a version, a note quoting one) reaching a terminal.
    Kept apart because importing the sandbox package would slow ``kryt leaderboard``."""
    out = []
    for char in text:
        if char != "\t" and unicodedata.category(char) in _HIDDEN:
            code = ord(char)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            else:
                out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)
