"""A duplicate board's games as the units of its intervals: complete deal pairs, counted by
kind in the database, and the games whose deal is not complete (yet).

Games 1+2, 3+4, ... of a duplicate series are one deal played twice with the seats swapped.
While a series is being played its last deal often has one game only (and a voided game
leaves its partner alone until the replay): those games are *singles*, units of their own,
so that one unfinished deal neither switches the whole board to intervals per game nor is
left out of the fit (docs/leaderboard.md, "Duplicate format").

Like ``arena.db.results.deal_pair_counts`` (which answers only when every deal is complete),
everything is grouped in SQL: the cost is a pass over the odd-numbered games with an index
probe for each partner, whatever the number of games.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col

from arena.db import Game, Series
from arena.db.results import DealPairKind

_FIRST_SUB = case(
    (col(Game.first_mover) == 0, col(Game.seat0_submission_id)), else_=col(Game.seat1_submission_id)
)
_SECOND_SUB = case(
    (col(Game.first_mover) == 0, col(Game.seat1_submission_id)), else_=col(Game.seat0_submission_id)
)
_FIRST_WON = ((col(Game.result) == "seat0") & (col(Game.first_mover) == 0)) | (
    (col(Game.result) == "seat1") & (col(Game.first_mover) == 1)
)
_SCORE = case((_FIRST_WON, 1.0), (col(Game.result) == "draw", 0.5), else_=0.0)


@dataclass(frozen=True, slots=True)
class SingleGameKind:
    """``count`` counted games of duplicate series whose deal partner is not counted, with
    the same players and result: ``first`` moved first against ``second`` and scored
    ``first_score``."""

    first_submission_id: int
    second_submission_id: int
    first_score: float
    count: int


@dataclass(frozen=True, slots=True)
class DealUnits:
    """The units of a duplicate board: complete deal pairs and single games, each by kind."""

    pairs: list[DealPairKind]
    singles: list[SingleGameKind]

    @property
    def single_games(self) -> int:
        """How many games count alone (their deal is not complete)."""
        return sum(k.count for k in self.singles)


def _scoped(query: Any, tournament_id: int | None) -> Any:
    if tournament_id is None:
        return query  # the board of every tournament reads the games table alone
    return query.join(Series, col(Series.id) == col(Game.series_id))


def _counted(tournament_id: int | None) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [
        col(Game.voided).is_(False),
        col(Game.ruleset) == "default",
    ]
    if tournament_id is not None:
        conditions.append(col(Series.tournament_id) == tournament_id)
    return conditions


def deal_units(*, session: Session, tournament_id: int | None, counted: int) -> DealUnits | None:
    """The board's ``counted`` default games as complete deal pairs and single games, or
    None when a counted game is in a series of another format (its games are independent:
    intervals per game) or when there is no game."""
    connection = session.connection()
    # A series of another format with a counted game: one index probe per series.
    has_counted = (
        select(col(Game.id))
        .where(
            col(Game.ruleset) == "default",
            col(Game.voided).is_(False),
            col(Game.series_id) == col(Series.id),
        )
        .exists()
    )
    other_format = select(col(Series.id)).where(col(Series.format) != "duplicate", has_counted)
    if tournament_id is not None:
        other_format = other_format.where(col(Series.tournament_id) == tournament_id)
    if counted == 0 or connection.execute(other_format.limit(1)).first() is not None:
        return None
    partner = Game.__table__.alias("partner")  # type: ignore[attr-defined]
    p_first = case(
        (partner.c.first_mover == 0, partner.c.seat0_submission_id),
        else_=partner.c.seat1_submission_id,
    )
    p_second = case(
        (partner.c.first_mover == 0, partner.c.seat1_submission_id),
        else_=partner.c.seat0_submission_id,
    )
    p_won = ((partner.c.result == "seat0") & (partner.c.first_mover == 0)) | (
        (partner.c.result == "seat1") & (partner.c.first_mover == 1)
    )
    p_score = case((p_won, 1.0), (partner.c.result == "draw", 0.5), else_=0.0)
    columns = (_FIRST_SUB, _SECOND_SUB, _SCORE, p_first, p_second, p_score)
    # Every odd-numbered game with its partner (number + 1) when that one is counted; a
    # missing partner gives NULLs (an outer join): one pass finds the pairs and the odd
    # singles.
    odd = (
        _scoped(select(*columns, func.count()).select_from(Game), tournament_id)
        .outerjoin(
            partner,
            (partner.c.ruleset == "default")
            & partner.c.voided.is_(False)
            & (partner.c.series_id == col(Game.series_id))
            & (partner.c.number == col(Game.number) + 1),
        )
        .where(*_counted(tournament_id), col(Game.number) % 2 == 1)
        .group_by(*columns)
        .order_by(*columns)
    )
    pairs: list[DealPairKind] = []
    singles: list[SingleGameKind] = []
    for a, b, s, c, d, t, n in connection.execute(odd):
        if c is None:
            singles.append(SingleGameKind(int(a), int(b), float(s), int(n)))
        else:
            pairs.append(DealPairKind(int(a), int(b), float(s), int(c), int(d), float(t), int(n)))
    found = 2 * sum(k.count for k in pairs) + sum(k.count for k in singles)
    if found < counted:
        # Even-numbered games whose odd partner is not counted (voided after the fact, and
        # not replayed yet): rare, so looked for only when the counts say there are some.
        first_game = Game.__table__.alias("first_game")  # type: ignore[attr-defined]
        has_first = (
            select(first_game.c.id)
            .where(
                first_game.c.voided.is_(False),
                first_game.c.series_id == col(Game.series_id),
                first_game.c.number == col(Game.number) - 1,
            )
            .exists()
        )
        lone = (_FIRST_SUB, _SECOND_SUB, _SCORE)
        even = (
            _scoped(select(*lone, func.count()).select_from(Game), tournament_id)
            .where(*_counted(tournament_id), col(Game.number) % 2 == 0, ~has_first)
            .group_by(*lone)
            .order_by(*lone)
        )
        for a, b, s, n in connection.execute(even):
            singles.append(SingleGameKind(int(a), int(b), float(s), int(n)))
            found += int(n)
    if found != counted:
        return None  # the games changed under us or were written around arena.db: per game
    return DealUnits(pairs, singles)
