"""Aggregated results for the ratings and the leaderboard (counted games only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col
from sqlmodel import select as select_rows

from arena.db.models import Game, Series
from arena.db.records import GameOutcome, PairCounts

# The first mover's submission and score, computed in SQL so 10^6 games aggregate in the
# database instead of in Python. Multi-column queries use SQLAlchemy Core on the session's
# connection (same transaction); sqlmodel's select() stops at four columns.
_FIRST_SUB = case(
    (col(Game.first_mover) == 0, col(Game.seat0_submission_id)), else_=col(Game.seat1_submission_id)
)
_SECOND_SUB = case(
    (col(Game.first_mover) == 0, col(Game.seat1_submission_id)), else_=col(Game.seat0_submission_id)
)
_FIRST_WON = ((col(Game.result) == "seat0") & (col(Game.first_mover) == 0)) | (
    (col(Game.result) == "seat1") & (col(Game.first_mover) == 1)
)
_FIRST_LOST = ((col(Game.result) == "seat1") & (col(Game.first_mover) == 0)) | (
    (col(Game.result) == "seat0") & (col(Game.first_mover) == 1)
)


def _counted(tournament_id: int | None) -> list[ColumnElement[bool]]:
    # The default two-player game only: tables are aggregated by arena.db.table_results.
    conditions: list[ColumnElement[bool]] = [
        col(Game.voided).is_(False),
        col(Game.ruleset) == "default",
    ]
    if tournament_id is not None:
        conditions.append(col(Series.tournament_id) == tournament_id)
    return conditions


def _count_if(condition: ColumnElement[bool]) -> Any:
    return func.sum(case((condition, 1), else_=0))


def pair_counts(*, session: Session, tournament_id: int | None = None) -> list[PairCounts]:
    """W/D/L of every ordered pair (first mover, second), from the first mover's side.

    Over all counted games, or one tournament's. Sorted by (first, second) id. This is
    what a Bradley–Terry fit with a first-mover advantage consumes.
    """
    first = _FIRST_SUB.label("first")
    second = _SECOND_SUB.label("second")
    query = (
        select(
            first,
            second,
            _count_if(_FIRST_WON),
            _count_if(col(Game.result) == "draw"),
            _count_if(_FIRST_LOST),
        )
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(*_counted(tournament_id))
        .group_by(first, second)
        .order_by(first, second)
    )
    return [
        PairCounts(int(f), int(s), int(w), int(d), int(loss))
        for f, s, w, d, loss in session.connection().execute(query)
    ]


def game_outcomes(*, session: Session, tournament_id: int | None = None) -> list[GameOutcome]:
    """Counted games in the order they finished (for Elo and per-deal pairing)."""
    score = case((_FIRST_WON, 1.0), (col(Game.result) == "draw", 0.5), else_=0.0)
    query = (
        select(
            col(Game.id),
            col(Game.series_id),
            col(Game.number),
            _FIRST_SUB,
            _SECOND_SUB,
            score,
            col(Game.finished_at),
        )
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(*_counted(tournament_id))
        .order_by(col(Game.finished_at), col(Game.id))
    )
    return [
        GameOutcome(int(g), int(s), int(n), int(a), int(b), float(sc), at)
        for g, s, n, a, b, sc, at in session.connection().execute(query)
    ]


def forfeit_counts(
    *, session: Session, tournament_id: int | None = None
) -> dict[int, dict[str, int]]:
    """For each submission that forfeited counted games: ``{reason: count}``."""
    offender = case(
        (col(Game.forfeit_seat) == 0, col(Game.seat0_submission_id)),
        else_=col(Game.seat1_submission_id),
    ).label("offender")
    query = (
        select(offender, col(Game.end_reason), func.count())
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(col(Game.forfeit_seat).is_not(None), *_counted(tournament_id))
        .group_by(offender, col(Game.end_reason))
    )
    counts: dict[int, dict[str, int]] = {}
    for submission_id, reason, n in session.connection().execute(query):
        counts.setdefault(int(submission_id), {})[str(reason)] = int(n)
    return counts


@dataclass(frozen=True)
class SeriesTally:
    """One series of a tournament with its counted games, from bot A's side."""

    series_id: int
    position: int
    submission_a_id: int
    submission_b_id: int
    games_planned: int
    status: str
    played: int
    a_wins: int
    draws: int
    b_wins: int
    forfeits: int


def series_tallies(tournament_id: int, *, session: Session) -> list[SeriesTally]:
    """Every series of the tournament in position order, with W/D/L and forfeits counted by
    the database (one query, series without games included)."""
    a_seat0 = col(Game.seat0_submission_id) == col(Series.submission_a_id)
    a_won = ((col(Game.result) == "seat0") & a_seat0) | ((col(Game.result) == "seat1") & ~a_seat0)
    b_won = ((col(Game.result) == "seat1") & a_seat0) | ((col(Game.result) == "seat0") & ~a_seat0)
    counted = (col(Game.id).is_not(None)) & col(Game.voided).is_(False)
    query = (
        select(
            col(Series.id),
            col(Series.position),
            col(Series.submission_a_id),
            col(Series.submission_b_id),
            col(Series.games_planned),
            col(Series.status),
            _count_if(counted),
            _count_if(counted & a_won),
            _count_if(counted & (col(Game.result) == "draw")),
            _count_if(counted & b_won),
            _count_if(counted & col(Game.forfeit_seat).is_not(None)),
        )
        .select_from(Series)
        .outerjoin(Game, col(Game.series_id) == col(Series.id))
        .where(col(Series.tournament_id) == tournament_id)
        .group_by(col(Series.id))
        .order_by(col(Series.position))
    )
    return [
        SeriesTally(
            int(sid),
            int(pos),
            int(a),
            int(b),
            int(planned),
            str(status),
            *(int(v or 0) for v in counts),
        )
        for sid, pos, a, b, planned, status, *counts in session.connection().execute(query)
    ]


def never_played(tournament_id: int, *, session: Session) -> dict[int, str]:
    """Submissions of the tournament that played no move at all: every counted game of theirs
    was their own start-up failure (or a double forfeit). ``{submission_id: a detail}``."""
    games = session.exec(
        select_rows(Game)
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(col(Series.tournament_id) == tournament_id, col(Game.voided).is_(False))
    ).all()
    seen: dict[int, list[Game]] = {}
    for game in games:
        for sub in game.seats or [game.seat0_submission_id, game.seat1_submission_id]:
            seen.setdefault(int(sub), []).append(game)
    idle: dict[int, str] = {}
    for sub, played in seen.items():
        details = []
        for game in played:
            seats = game.seats or [game.seat0_submission_id, game.seat1_submission_id]
            mine = game.forfeit_seat is not None and seats[game.forfeit_seat] == sub
            if game.end_reason == "startup failure" and mine:
                details.append(game.forfeit_detail or "")
            elif game.end_reason != "double forfeit":
                break
        else:
            idle[sub] = next((d for d in details if d), "it never started")
    return idle
