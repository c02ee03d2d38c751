"""Deals no bot can predict: secret seeds, with a public commitment.

By default every tournament draws its seed from the operating system's CSPRNG. The seed stays
secret (never in a view, a log a bot can read, or a page) until the tournament is finished;
what is published while it runs is a commitment, a hash of the seed, stored with the
tournament when it is created. Once the seed is revealed anyone can check that it matches
the commitment and that every deal follows from it (``kryt replay --verify``), so the deals
cannot have been chosen. An organiser may still fix a seed for a reproducible run; that is
unsafe for a competition (a bot that knows the seed knows every hidden card).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from typing import Final

SEED_BITS: Final = 62
"""Seeds are in [0, 2**62): they fit every database's BIGINT."""


def draw_seed() -> int:
    """A fresh secret seed from the operating system's CSPRNG."""
    return secrets.randbits(SEED_BITS)


def commitment(seed: int) -> str:
    """The public commitment to ``seed``: a SHA-256 that reveals nothing of it."""
    return hashlib.sha256(f"kryt-arena seed commitment v1:{seed}".encode()).hexdigest()


def deal_problems(
    *,
    tournament_seed: int,
    stored_commitment: str | None,
    series_seed: int,
    expected_series_seed: int,
    series_format: str,
    games_planned: int,
    number: int,
    deck: tuple[str, ...],
    book: Sequence[str] = (),
    unknown_book: bool = False,
) -> list[str]:
    """Why a stored deal does not follow from the tournament's committed seed (empty: it does).

    Checks the chain commitment → tournament seed → series seed → this game's deck (with a
    deal ``book``, the tournament's stored decks as texts: the book's deck for this deal;
    with ``unknown_book``, deals from a book this database does not have: the deck is not
    checked).
    """
    from referee.series import SeriesConfig, SeriesFormat, deal_number, game_deck

    problems = []
    if stored_commitment is not None and commitment(tournament_seed) != stored_commitment:
        problems.append(
            f"the tournament's seed does not match the commitment published when it started"
            f" ({stored_commitment[:16]}...)"
        )
    if series_seed != expected_series_seed:
        problems.append(
            f"the series seed {series_seed} is not the one the tournament seed gives"
            f" ({expected_series_seed})"
        )
    config = SeriesConfig(
        games=max(games_planned, number, 2), seed=series_seed, format=SeriesFormat(series_format)
    )
    deal = deal_number(config, number)
    if unknown_book:
        return problems
    if book:
        if tuple(deck) != tuple(book[(deal - 1) % len(book)].split()):
            problems.append("the deal is not the deck the tournament's deal book gives")
        return problems
    expected = tuple(str(c) for c in game_deck(series_seed, deal))
    if tuple(deck) != expected:
        problems.append("the deal is not the one the series seed gives for this game")
    return problems
