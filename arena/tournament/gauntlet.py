"""The gauntlet format: one bot plays every other entrant; the others never meet.

For the default ruleset that is one series per pair (the gauntlet bot, an opponent). At a
classic table every table includes the gauntlet bot: every set of ``size - 1`` opponents
sits down with it, once per distinct clockwise seating order (as in the round robin of
:mod:`arena.tournament.seatings`), each order listed starting at the gauntlet bot.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from arena.tournament.seatings import clockwise_orders


class GauntletError(ValueError):
    """The gauntlet bot is not an entrant, or an entrant is listed twice."""


def _others(entrants: Sequence[int], gauntlet: int) -> list[int]:
    if gauntlet not in entrants:
        raise GauntletError(
            f"the gauntlet bot {gauntlet} is not among the entrants {list(entrants)}"
        )
    if len(set(entrants)) != len(entrants):
        raise GauntletError(f"an entrant is listed twice: {list(entrants)}")
    return [e for e in entrants if e != gauntlet]


def gauntlet_pairs(entrants: Sequence[int], gauntlet: int) -> list[tuple[int, int]]:
    """(gauntlet, opponent) for every other entrant, in the order given."""
    return [(gauntlet, other) for other in _others(entrants, gauntlet)]


def gauntlet_seatings(entrants: Sequence[int], gauntlet: int, size: int) -> list[tuple[int, ...]]:
    """Every table of ``size`` seats that includes the gauntlet bot, times its clockwise
    orders; seat 0 is always the gauntlet bot."""
    others = _others(entrants, gauntlet)
    if not 2 <= size <= len(entrants):
        raise GauntletError(f"a table of {size} needs 2..{len(entrants)} seats, got {size}")
    return [
        order
        for group in combinations(others, size - 1)
        for order in clockwise_orders((gauntlet, *group))
    ]
