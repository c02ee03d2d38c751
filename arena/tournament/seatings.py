"""[ruling] Round robin of tables (rules-classic.md): which series a table tournament plays.

For a table size ``n``, every set of ``n`` entrants plays, and each set plays one series for
every distinct clockwise seating order: ``(n-1)!`` orders (1 for two players, 2 for three, 6
for four), so that nobody always sits after the same opponent. A seating order is a cycle, so
rotations are the same order: each is listed once, starting from the set's first entrant.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, permutations


def clockwise_orders(entrants: Sequence[int]) -> list[tuple[int, ...]]:
    """The distinct clockwise seating orders of ``entrants``, each starting at the first."""
    first, *rest = entrants
    return [(first, *order) for order in permutations(rest)]


def table_seatings(entrants: Sequence[int], size: int) -> list[tuple[int, ...]]:
    """Every set of ``size`` entrants (in the order given) times its clockwise orders; seat
    ``s`` of a returned tuple is the entrant at seat ``s``."""
    if not 2 <= size <= len(entrants):
        raise ValueError(f"a table of {size} needs 2..{len(entrants)} seats, got {size}")
    if len(set(entrants)) != len(entrants):
        raise ValueError(f"an entrant is listed twice: {list(entrants)}")
    return [order for group in combinations(entrants, size) for order in clockwise_orders(group)]


def seating_key(seats: Sequence[int]) -> str:
    """A text naming one seating (for seeds): the submissions in seat order."""
    return "-".join(str(s) for s in seats)
