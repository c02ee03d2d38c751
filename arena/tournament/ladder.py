"""What marks the arena's ladder tournament, and how its series seeds derive from its seed.

``kryt arena serve`` keeps its ladder's series in one tournament it creates itself: named
``ladder``, with ``"ladder": true`` in its stored configuration (a key no tournament
configuration of ``kryt tournament run`` or ``kryt games import`` can hold: ``ladder`` is no
setting). The name alone marks nothing: anyone may run a tournament named ``ladder``, and
such a tournament is never the arena's ladder (its seed is public once it finished).

A ladder series' seed follows from the ladder's (secret, committed) seed, the series'
position in the tournament and its two submissions: :func:`ladder_series_seed`, the one
derivation the ladder uses and ``kryt replay --verify`` checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LADDER_NAME = "ladder"
"""The name of the ladder's tournament (not what identifies it: see :func:`is_ladder`)."""

LADDER_KEY = "ladder"
"""The key of the stored configuration that marks the ladder's tournament (``true``)."""


def is_ladder(stored: Mapping[str, Any]) -> bool:
    """Whether a stored tournament configuration is that of the arena's ladder (created by
    ``kryt arena serve``; also one an older server created)."""
    return stored.get(LADDER_KEY) is True and stored.get("imported") is not True


def ladder_series_seed(master: int, position: int, first: int, second: int) -> int:
    """The seed of the ladder series at ``position`` between submissions ``first`` and
    ``second``, from the ladder's seed ``master``."""
    digest = hashlib.sha256(f"kryt-ladder:{master}:{position}:{first}:{second}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


EARLIER_MASTERS_KEY = "earlier_seeds"
"""The key of the ladder's stored configuration that records the seeds it had before (a
ladder stored by an older release, with the then public default seed, gets a secret one):
the series before ``before_position`` derive from that seed."""


@dataclass(frozen=True, slots=True)
class EarlierMaster:
    """A seed the ladder had before: the series at positions below ``before_position`` (and
    from the previous record's on) derive from ``seed``; no commitment was published."""

    seed: int
    before_position: int

    def to_json(self) -> dict[str, int]:
        """The stored form (one entry of the ``earlier_seeds`` list)."""
        return {"seed": self.seed, "before_position": self.before_position}


def earlier_masters(stored: Mapping[str, Any]) -> list[EarlierMaster]:
    """The earlier seeds recorded in the ladder's stored configuration, oldest first
    (malformed entries are left out: they can only make a check fail)."""
    entries = stored.get(EARLIER_MASTERS_KEY)
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping):
            seed, before = entry.get("seed"), entry.get("before_position")
            if isinstance(seed, int) and isinstance(before, int):
                found.append(EarlierMaster(seed, before))
    return found


def ladder_master(
    tournament_seed: int, stored: Mapping[str, Any], position: int
) -> tuple[int, str | None]:
    """The seed the ladder series at ``position`` derives from, and that seed's published
    commitment (None: none was published)."""
    for earlier in earlier_masters(stored):
        if position < earlier.before_position:
            return earlier.seed, None
    mark = stored.get("seed_commitment")
    return tournament_seed, mark if isinstance(mark, str) else None
