"""Aggregated results of classic-table games: their pairwise record, for the same ratings.

rules-classic.md scores a game as pairwise results: each winner beats the loser, and winners
have no result between themselves; at the turn limit every seat that is out beats every seat
still holding cards, and the seats still holding cards draw with each other; in a draw every
pair draws. Each pair with a result becomes one two-player result between submissions, so the
BayesElo fit of the default game consumes it unchanged. The "first" of a pair is the seat
that plays earlier in the game (clockwise from the dealer's left): the seatings of a table
round robin rotate it, like the first mover.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from arena.db.models import Game, Series
from arena.db.records import GameOutcome, PairCounts


@dataclass(frozen=True)
class TableGame:
    """A counted table game in compact form."""

    game_id: int
    series_id: int
    number: int
    dealer: int
    seats: tuple[int, ...]
    pairwise: tuple[tuple[int, int], ...]
    forfeit_seat: int | None
    end_reason: str
    finished_at: datetime

    def order(self, seat: int) -> int:
        """Position of ``seat`` in the order of play (0: the dealer's left)."""
        return (seat - self.dealer - 1) % len(self.seats)

    def pair_scores(self) -> list[tuple[int, int, float]]:
        """(first submission, second submission, first's score) for each pair of seats with
        a result (see :func:`table_pair_scores`)."""
        return table_pair_scores(self.dealer, self.seats, self.pairwise)


def table_pair_scores(
    dealer: int, seats: Sequence[int], pairwise: Iterable[Sequence[int]]
) -> list[tuple[int, int, float]]:
    """The pairwise record of one table game: each pair of seats with a result, the one
    playing earlier first, with the first's score (1, ½ or 0).

    ``pairwise`` is the game's ``(winner, loser)`` pairs by seat
    (:meth:`~referee.rules.ClassicGame.pairwise_results`, or a forfeit's). A pair it does not
    decide is a draw (everyone in a drawn game, the seats still holding cards at the turn
    limit), unless both seats won a pair: winners have no result between themselves
    (rules-classic.md), so that pair is left out. A game thus gives between ``n - 1`` and
    ``n (n - 1) / 2`` results."""
    n = len(seats)
    decided = {frozenset((int(p[0]), int(p[1]))): int(p[0]) for p in pairwise}
    winners = set(decided.values())
    out = []
    for a in range(n):
        for b in range(a + 1, n):
            winner = decided.get(frozenset((a, b)))
            if winner is None and a in winners and b in winners:
                continue
            # Order of play starts at the dealer's left.
            first, second = (a, b) if (a - dealer - 1) % n < (b - dealer - 1) % n else (b, a)
            score = 0.5 if winner is None else (1.0 if winner == first else 0.0)
            out.append((int(seats[first]), int(seats[second]), score))
    return out


def table_games(
    *,
    session: Session,
    ruleset: str,
    players: int,
    tournament_id: int | None = None,
    series_ids: Any = None,
) -> list[TableGame]:
    """Counted games of this ruleset and table size (one tournament's or all; with
    ``series_ids``, a subquery of series ids, only theirs), in the order they were recorded
    (their ids, as live Elo applies them). Only the columns the standings need are read,
    never the deal or the moves."""
    query = sa_select(
        col(Game.id),
        col(Game.series_id),
        col(Game.number),
        col(Game.dealer),
        col(Game.seats),
        col(Game.seat0_submission_id),
        col(Game.seat1_submission_id),
        col(Game.pairwise),
        col(Game.forfeit_seat),
        col(Game.end_reason),
        col(Game.finished_at),
    ).where(
        col(Game.voided).is_(False),
        col(Game.ruleset) == ruleset,
        col(Game.players) == players,
    )
    if tournament_id is not None:
        query = query.join(Series, col(Series.id) == col(Game.series_id)).where(
            col(Series.tournament_id) == tournament_id
        )
    if series_ids is not None:
        query = query.where(col(Game.series_id).in_(series_ids))
    found = []
    for (
        gid,
        series_id,
        number,
        dealer,
        seats,
        seat0,
        seat1,
        pairwise,
        forfeit,
        reason,
        at,
    ) in session.connection().execute(query.order_by(col(Game.id))):
        found.append(
            TableGame(
                int(gid or 0),  # a stored game always has its id
                int(series_id),
                int(number),
                int(dealer),
                tuple(int(x) for x in (seats or (seat0, seat1))),
                tuple((int(w), int(x)) for w, x in pairwise or ()),
                forfeit,
                str(reason),
                at,
            )
        )
    return found


def table_pair_counts(games: list[TableGame]) -> list[PairCounts]:
    """W/D/L of every ordered pair (first to play, second) over these games: the pairwise
    record as the BayesElo fit consumes it. Sorted by (first, second) id."""
    counts: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0, 0])
    for game in games:
        for first, second, score in game.pair_scores():
            counts[first, second][{1.0: 0, 0.5: 1, 0.0: 2}[score]] += 1
    return [PairCounts(f, s, *counts[f, s]) for f, s in sorted(counts)]


def table_outcomes(games: list[TableGame]) -> list[GameOutcome]:
    """Each pair of each game as a two-player outcome, in the order of ``games`` (id order
    from :func:`table_games`, the order live Elo applies them)."""
    out = []
    for game in games:
        for first, second, score in game.pair_scores():
            out.append(
                GameOutcome(
                    game.game_id,
                    game.series_id,
                    game.number,
                    first,
                    second,
                    score,
                    game.finished_at,
                )
            )
    return out


def table_forfeit_counts(games: list[TableGame]) -> dict[int, dict[str, int]]:
    """For each submission that forfeited counted table games: ``{reason: count}``."""
    counts: dict[int, dict[str, int]] = {}
    for game in games:
        if game.forfeit_seat is not None:
            by_reason = counts.setdefault(game.seats[game.forfeit_seat], {})
            by_reason[game.end_reason] = by_reason.get(game.end_reason, 0) + 1
    return counts
