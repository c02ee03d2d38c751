"""Where a series' seed and deals come from, kept for series that were imported.

A series seed derives from its tournament's seed (or its extension round's) and the ids of
its two submissions *in the database that made it* (:func:`arena.tournament.runner.series_seed`);
a deal-book tournament's deals are decks of its book. Imported into another database, the
series gets new submission ids and no book, so ``kryt replay --verify`` could not follow the
chain. The game file therefore carries a :class:`SeriesOrigin` (headers ``SeriesSeedIds``,
``RoundSeed``, ``DealBook``; docs/games-format.md) and an import keeps it in the tournament's
stored configuration, under :data:`IMPORTED_ORIGINS_KEY`, per series position.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

IMPORTED_ORIGINS_KEY: Final = "imported_series"
"""The key of an imported tournament's stored configuration that maps a series position
(as text) to its :class:`SeriesOrigin` (its :meth:`SeriesOrigin.to_json`)."""


class OriginError(ValueError):
    """A stored origin that is malformed (a damaged configuration)."""


@dataclass(frozen=True, slots=True)
class SeriesOrigin:
    """``seed_ids``: the submission ids (A, B) the series seed was derived from, in the
    database that made the series; ``round_seed``: the extension round's seed it derives from
    (None: the tournament's); ``book_decks``: the size of the deal book its deals come from
    (None: the deals come from the series seed)."""

    seed_ids: tuple[int, int]
    round_seed: int | None = None
    book_decks: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {
            "seed_ids": list(self.seed_ids),
            "round_seed": self.round_seed,
            "book_decks": self.book_decks,
        }

    @classmethod
    def from_json(cls, data: object) -> SeriesOrigin:
        """Inverse of :meth:`to_json`; OriginError when ``data`` is not one."""
        if not isinstance(data, Mapping):
            raise OriginError(f"a stored series origin must be a table, got {data!r}")
        ids = data.get("seed_ids")
        round_seed, book = data.get("round_seed"), data.get("book_decks")
        if (
            not isinstance(ids, list)
            or len(ids) != 2
            or not all(_is_int(i) for i in ids)
            or not (round_seed is None or _is_int(round_seed))
            or not (book is None or _is_int(book))
        ):
            raise OriginError(f"a stored series origin is malformed: {dict(data)!r}")
        return cls((int(ids[0]), int(ids[1])), round_seed, book)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def imported_origin(config: Mapping[str, Any], position: int) -> SeriesOrigin | None:
    """The origin an import stored for the series at ``position`` (None: none stored)."""
    stored = config.get(IMPORTED_ORIGINS_KEY)
    if not isinstance(stored, Mapping) or str(position) not in stored:
        return None
    return SeriesOrigin.from_json(stored[str(position)])


def with_imported_origin(
    config: Mapping[str, Any], position: int, origin: SeriesOrigin
) -> dict[str, Any] | None:
    """``config`` with ``origin`` stored for ``position``; None when it is stored already.

    OriginError when another origin is stored for that position (two files disagree about
    one series)."""
    known = imported_origin(config, position)
    if known == origin:
        return None
    if known is not None:
        raise OriginError(
            f"series {position} was imported with another origin ({known}), not {origin}"
        )
    stored = dict(config.get(IMPORTED_ORIGINS_KEY) or {})
    stored[str(position)] = origin.to_json()
    return {**config, IMPORTED_ORIGINS_KEY: stored}


SEED_COMMITMENT_KEY: Final = "seed_commitment"
"""The key of a stored tournament configuration that holds the published commitment to the
tournament's seed (:func:`arena.tournament.seeds.commitment`): stored by the runner when a
tournament is created, and by an import from a game file's ``SeedCommitment`` header."""

IMPORTED_ROUND_COMMITMENTS_KEY: Final = "imported_round_commitments"
"""The key of an imported tournament's stored configuration that maps the seed of a
``kryt tournament extend`` round (as text) to that round's published commitment (a game
file's ``RoundSeedCommitment``): an imported tournament has no ``extensions`` record, and the
rounds' seeds are known only from its series' origins."""


def imported_commitment(config: Mapping[str, Any], round_seed: int | None) -> str | None:
    """The commitment stored for the tournament's seed (``round_seed`` None) or for the
    extension round with seed ``round_seed`` (None: none stored)."""
    if round_seed is None:
        mark = config.get(SEED_COMMITMENT_KEY)
    else:
        rounds = config.get(IMPORTED_ROUND_COMMITMENTS_KEY)
        mark = rounds.get(str(round_seed)) if isinstance(rounds, Mapping) else None
    return mark if isinstance(mark, str) else None


def with_imported_commitment(
    config: Mapping[str, Any], round_seed: int | None, mark: str
) -> dict[str, Any] | None:
    """``config`` with ``mark`` stored as the commitment of the tournament's seed
    (``round_seed`` None) or of the round with seed ``round_seed``; None when it is stored
    already.

    OriginError when another commitment is stored for that seed: the file's was checked
    against the seed it reveals, so the stored one does not match the seed (a damaged
    record), and keeping either would hide that."""
    known = imported_commitment(config, round_seed)
    if known == mark:
        return None
    whose = "the tournament's seed" if round_seed is None else f"the round seed {round_seed}"
    if known is not None:
        raise OriginError(
            f"{whose} is stored with the commitment {known[:16]!r}..., not {mark[:16]!r}..."
        )
    if round_seed is None:
        return {**config, SEED_COMMITMENT_KEY: mark}
    rounds = dict(config.get(IMPORTED_ROUND_COMMITMENTS_KEY) or {})
    rounds[str(round_seed)] = mark
    return {**config, IMPORTED_ROUND_COMMITMENTS_KEY: rounds}
