"""More games for a tournament (``kryt tournament extend ID --games N``), with fresh secret seeds.

Each extension is a *round*: every pairing the tournament already has (a pair, or a seating
at a classic table) gets one new series of ``N`` games. The tournament's own seed may be
public by then (it is revealed once the tournament is finished), so the new series must not
derive from it: each round draws a fresh seed from the operating system's CSPRNG and stores
it with its commitment in the tournament's configuration (key ``extensions``, a record, not a
setting). The chain ``kryt replay --verify`` checks for a game of a round is then the same as
for the first series: round commitment → round seed → series seed → deal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.db import SeriesFormat as DbSeriesFormat
from arena.db import SeriesSpec
from arena.db.models import Series
from arena.tournament.config import is_imported
from arena.tournament.ladder import is_ladder, ladder_master, ladder_series_seed
from arena.tournament.origin import (
    OriginError,
    SeriesOrigin,
    imported_commitment,
    imported_origin,
)
from arena.tournament.runner import TournamentError, series_seed
from arena.tournament.seeds import commitment
from arena.tournament.table_runner import table_series_seed

EXTENSIONS_KEY = "extensions"
"""The key of the stored tournament configuration that lists the rounds, oldest first."""


@dataclass(frozen=True, slots=True)
class Extension:
    """One round of extra games: ``games`` per pairing, its series from ``first_position`` on,
    their seeds derived from ``seed`` (secret while the round runs), published as
    ``seed_commitment``."""

    games: int
    first_position: int
    seed: int
    seed_commitment: str

    def to_json(self) -> dict[str, Any]:
        """The stored form (one entry of the ``extensions`` list)."""
        return {
            "games": self.games,
            "first_position": self.first_position,
            "seed": self.seed,
            "seed_commitment": self.seed_commitment,
        }

    @classmethod
    def from_json(cls, data: object) -> Extension:
        """Inverse of :meth:`to_json`; TournamentError naming the entry when it is malformed."""
        if not isinstance(data, Mapping):
            raise TournamentError(f"a stored extension must be a table, got {data!r}")
        values = [data.get(k) for k in ("games", "first_position", "seed")]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise TournamentError(f"a stored extension has a bad number: {dict(data)!r}")
        mark = data.get("seed_commitment")
        if not isinstance(mark, str):
            raise TournamentError(f"a stored extension has no seed commitment: {dict(data)!r}")
        games, first, seed = (int(v) for v in values)  # type: ignore[arg-type]
        return cls(games, first, seed, mark)


def extensions(config: Mapping[str, Any]) -> list[Extension]:
    """The rounds recorded in a stored tournament configuration, oldest first."""
    stored = config.get(EXTENSIONS_KEY, [])
    if not isinstance(stored, list):
        raise TournamentError(f"the stored extensions must be a list, got {stored!r}")
    return [Extension.from_json(entry) for entry in stored]


@dataclass(frozen=True, slots=True)
class SeedChain:
    """Where a series' seed comes from: the seed it derives from (the tournament's or its
    round's), that seed's published commitment (None: none was stored), and the series seed
    that follows from it."""

    seed: int
    commitment: str | None
    series_seed: int
    imported_book: int | None = None
    """For an imported series whose deals came from a deal book: the book's size (the book
    itself stayed in the database the games were exported from)."""


def seed_chain(tournament_seed: int, config: Mapping[str, Any], series: Series) -> SeedChain:
    """The seed chain of a stored series (its position says which round it belongs to; an
    imported series' origin says where its seed came from; a series of the arena's ladder
    derives from the ladder's seed as :mod:`arena.tournament.ladder` says). TournamentError
    when the stored configuration is damaged."""
    if is_ladder(config):
        master, published = ladder_master(tournament_seed, config, series.position)
        derived = ladder_series_seed(
            master, series.position, series.submission_a_id, series.submission_b_id
        )
        return SeedChain(master, published, derived)
    origin = _imported(config, series)
    if origin is not None:
        seed = tournament_seed if origin.round_seed is None else origin.round_seed
        # The commitment the game file published with the seed (None: a file without one).
        published = imported_commitment(config, origin.round_seed)
        return SeedChain(seed, published, series_seed(seed, *origin.seed_ids), origin.book_decks)
    rounds = [e for e in extensions(config) if e.first_position <= series.position]
    mark: str | None
    if rounds:
        seed, mark = rounds[-1].seed, rounds[-1].seed_commitment
    else:
        stored = config.get("seed_commitment")
        seed, mark = tournament_seed, stored if isinstance(stored, str) else None
    if series.ruleset != "default" and series.seats:
        expected = table_series_seed(seed, tuple(series.seats))
    else:
        expected = series_seed(seed, series.submission_a_id, series.submission_b_id)
    return SeedChain(seed, mark, expected)


def series_origin(config: Mapping[str, Any], series: Series) -> SeriesOrigin | None:
    """Where a two-player series' seed and deals come from, for a game file (None: a table's
    series, or an imported one whose file did not say). TournamentError when the stored
    configuration is damaged."""
    if series.ruleset != "default" and series.seats:
        return None
    if is_imported(config):
        return _imported(config, series)
    rounds = [e for e in extensions(config) if e.first_position <= series.position]
    book = config.get("book")
    return SeriesOrigin(
        (series.submission_a_id, series.submission_b_id),
        rounds[-1].seed if rounds else None,
        len(book) if isinstance(book, list) and book else None,
    )


def _imported(config: Mapping[str, Any], series: Series) -> SeriesOrigin | None:
    if not is_imported(config):
        return None
    try:
        return imported_origin(config, series.position)
    except OriginError as exc:
        raise TournamentError(str(exc)) from None


def extension_specs(series: Sequence[Series], games: int, seed: int) -> list[SeriesSpec]:
    """One new series of ``games`` games per distinct pairing of ``series`` (in position
    order), its seed derived from the round's ``seed`` as the first series' were from the
    tournament's."""
    specs: list[SeriesSpec] = []
    seen: set[tuple[int, ...]] = set()
    for row in sorted(series, key=lambda s: s.position):
        table = row.ruleset != "default" and bool(row.seats)
        key = tuple(row.seats or ()) if table else (row.submission_a_id, row.submission_b_id)
        if key in seen:
            continue
        seen.add(key)
        specs.append(
            SeriesSpec(
                submission_a_id=row.submission_a_id,
                submission_b_id=row.submission_b_id,
                games_planned=games,
                seed=(
                    table_series_seed(seed, key)
                    if table
                    else series_seed(seed, row.submission_a_id, row.submission_b_id)
                ),
                format=DbSeriesFormat(row.format),
                ruleset=row.ruleset,
                seats=key if table else (),
            )
        )
    return specs


def new_extension(games: int, first_position: int, seed: int) -> Extension:
    """A round starting at ``first_position`` with its secret ``seed`` and its commitment."""
    return Extension(games, first_position, seed, commitment(seed))
