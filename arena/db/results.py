"""Aggregated results for the ratings and the leaderboard (counted games only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col
from sqlmodel import select as select_rows

from arena.db.elo import board_tallies
from arena.db.models import Game, Series
from arena.db.records import GameOutcome, PairCounts
from referee.record import offender_detail

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
_SCORE = case((_FIRST_WON, 1.0), (col(Game.result) == "draw", 0.5), else_=0.0)
"""The first mover's score: 1, 0.5 or 0."""


def _scoped(query: Any, tournament_id: int | None) -> Any:
    """``query`` over the games of one tournament (joining their series), or of all."""
    if tournament_id is None:
        return query  # no join: the board of every tournament reads the games table alone
    return query.join(Series, col(Series.id) == col(Game.series_id))


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
    what a Bradley–Terry fit with a first-mover advantage consumes. Read from the board's
    stored tallies when they account for every counted game, else aggregated from the
    games (:func:`aggregated_pair_counts`); both give the same counts.
    """
    tallies = board_tallies(
        session=session, tournament_id=tournament_id, ruleset="default", players=2
    )
    if tallies is not None:
        return tallies.pairs
    return aggregated_pair_counts(session=session, tournament_id=tournament_id)


def aggregated_pair_counts(
    *, session: Session, tournament_id: int | None = None
) -> list[PairCounts]:
    """:func:`pair_counts` grouped by the database over every counted game (the slow path)."""
    first = _FIRST_SUB.label("first")
    second = _SECOND_SUB.label("second")
    query = _scoped(
        select(
            first,
            second,
            _count_if(_FIRST_WON),
            _count_if(col(Game.result) == "draw"),
            _count_if(_FIRST_LOST),
        ),
        tournament_id,
    )
    query = query.where(*_counted(tournament_id)).group_by(first, second).order_by(first, second)
    return [
        PairCounts(int(f), int(s), int(w), int(d), int(loss))
        for f, s, w, d, loss in session.connection().execute(query)
    ]


def game_outcomes(*, session: Session, tournament_id: int | None = None) -> list[GameOutcome]:
    """Counted games in the order they were recorded (their ids), as live Elo applies them."""
    score = case((_FIRST_WON, 1.0), (col(Game.result) == "draw", 0.5), else_=0.0)
    query = _scoped(
        select(
            col(Game.id),
            col(Game.series_id),
            col(Game.number),
            _FIRST_SUB,
            _SECOND_SUB,
            score,
            col(Game.finished_at),
        ),
        tournament_id,
    )
    query = query.where(*_counted(tournament_id)).order_by(col(Game.id))
    return [
        GameOutcome(int(g), int(s), int(n), int(a), int(b), float(sc), at)
        for g, s, n, a, b, sc, at in session.connection().execute(query)
    ]


def forfeit_counts(
    *, session: Session, tournament_id: int | None = None
) -> dict[int, dict[str, int]]:
    """For each submission that forfeited counted games: ``{reason: count}`` (from the
    board's stored tallies when they account for every counted game)."""
    tallies = board_tallies(
        session=session, tournament_id=tournament_id, ruleset="default", players=2
    )
    if tallies is not None:
        return tallies.forfeits
    return aggregated_forfeit_counts(session=session, tournament_id=tournament_id)


def aggregated_forfeit_counts(
    *, session: Session, tournament_id: int | None = None
) -> dict[int, dict[str, int]]:
    """:func:`forfeit_counts` grouped by the database over every counted game."""
    offender = case(
        (col(Game.forfeit_seat) == 0, col(Game.seat0_submission_id)),
        else_=col(Game.seat1_submission_id),
    ).label("offender")
    query = (
        _scoped(select(offender, col(Game.end_reason), func.count()), tournament_id)
        .where(col(Game.forfeit_seat).is_not(None), *_counted(tournament_id))
        .group_by(offender, col(Game.end_reason))
    )
    counts: dict[int, dict[str, int]] = {}
    for submission_id, reason, n in session.connection().execute(query):
        counts.setdefault(int(submission_id), {})[str(reason)] = int(n)
    return counts


@dataclass(frozen=True)
class DealPairKind:
    """``count`` deal pairs of duplicate series with the same players and results: game 1
    has ``first`` moving first against ``second`` and ``first`` scores ``first_score``;
    game 2 (the same deal, seats swapped) has ``second_first`` moving first, who scores
    ``second_score``."""

    first_submission_id: int
    second_submission_id: int
    first_score: float
    second_first_submission_id: int
    second_second_submission_id: int
    second_score: float
    count: int


# Games 1+2, 3+4, ... of a duplicate series are one deal played twice with the seats swapped.
# While a series is played its last deal often has one game only (and a voided game leaves
# its partner alone until the replay): those games are *singles*, units of their own, so one
# unfinished deal neither switches the whole board to intervals per game nor is left out of
# the fit (docs/leaderboard.md, "Duplicate format"). All grouped in SQL: a pass over the
# odd-numbered games with an index probe for each partner.


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
        for sub in game.seat_ids:
            seen.setdefault(int(sub), []).append(game)
    idle: dict[int, str] = {}
    for sub, played in seen.items():
        details = []
        for game in played:
            seats = game.seat_ids
            # The seats that did not start: the forfeit's, and at a table where several
            # could not, every seat the others beat (the record names only the first).
            failed = {game.forfeit_seat} | {int(x) for _, x in game.pairwise or ()}
            mine = any(seat in failed for seat, sid in enumerate(seats) if sid == sub)
            if game.end_reason == "startup failure" and mine:
                own = next(seat for seat, sid in enumerate(seats) if sid == sub and seat in failed)
                details.append(offender_detail(game.forfeit_detail or "", own, game.forfeit_seat))
            elif game.end_reason == "double forfeit":
                details.append(game.forfeit_detail or "")  # both bots' failures
            else:
                break
        else:
            idle[sub] = next((d for d in details if d), "it never started")
    return idle
