"""Read-only queries the pages need beyond ``arena.db``'s CRUD: progress, game lists,
results of one submission against each opponent. SQLAlchemy expressions only, no SQL text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, or_, select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col
from sqlmodel import select as sm_select

from arena.db import Game, RatingEntry, RatingSnapshot, Series


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a tournament (or every tournament) has got."""

    games_done: int
    games_planned: int
    series_done: int
    series_total: int
    voided: int

    @property
    def fraction(self) -> float:
        """Share of the planned games played (1.0 when nothing is planned)."""
        if self.games_planned <= 0:
            return 1.0
        return min(1.0, self.games_done / self.games_planned)


def progress(*, session: Session, tournament_id: int | None = None) -> Progress:
    """Counted games against planned games, finished series against all, voided games."""
    planned_q = select(
        func.coalesce(func.sum(col(Series.games_planned)), 0),
        func.count(),
        func.coalesce(
            func.sum(case((col(Series.status).in_(("finished", "aborted")), 1), else_=0)), 0
        ),
    )
    # Every game, then the voided ones (from their partial index, ix_games_voided): two
    # counts the database answers without visiting each game's row or index entry.
    games_q = select(func.count()).select_from(Game)
    voided_q = games_q.where(col(Game.voided) == True)  # noqa: E712 (the index's condition)
    if tournament_id is not None:
        planned_q = planned_q.where(col(Series.tournament_id) == tournament_id)
        games_q, voided_q = (
            q.join(Series, col(Series.id) == col(Game.series_id)).where(
                col(Series.tournament_id) == tournament_id
            )
            for q in (games_q, voided_q)
        )
    connection = session.connection()
    planned, total, finished = connection.execute(planned_q).one()
    stored = int(connection.execute(games_q).scalar_one())
    voided = int(connection.execute(voided_q).scalar_one())
    return Progress(
        games_done=stored - voided,
        games_planned=int(planned),
        series_done=int(finished),
        series_total=int(total),
        voided=int(voided),
    )


@dataclass(frozen=True, slots=True)
class GameRow:
    """One game in a list: who sat where, the outcome, and when."""

    game_id: int
    series_id: int
    tournament_id: int
    number: int
    attempt: int
    seat_submission_ids: tuple[int, int]
    dealer: int
    result: str | None
    end_reason: str
    forfeit_seat: int | None
    voided: bool
    moves: int
    finished_at: datetime
    ruleset: str = "default"
    table_seats: tuple[int, ...] = ()
    """Classic table: every seat's submission, seat 0 first (empty for the default game)."""
    loser_seat: int | None = None
    pairwise: tuple[tuple[int, int], ...] = ()


def _game_row(game: Game, tournament_id: int) -> GameRow:
    assert game.id is not None  # stored rows have ids; this narrows the type
    return GameRow(
        game_id=game.id,
        series_id=game.series_id,
        tournament_id=tournament_id,
        number=game.number,
        attempt=game.attempt,
        seat_submission_ids=(game.seat0_submission_id, game.seat1_submission_id),
        dealer=game.dealer,
        result=game.result,
        end_reason=game.end_reason,
        forfeit_seat=game.forfeit_seat,
        voided=game.voided,
        moves=len(game.actions),
        finished_at=game.finished_at,
        ruleset=game.ruleset,
        table_seats=tuple(game.seats or ()),
        loser_seat=game.loser_seat,
        pairwise=tuple((int(w), int(x)) for w, x in game.pairwise or ()),
    )


def recent_games(
    *,
    session: Session,
    tournament_id: int | None = None,
    submission_id: int | None = None,
    limit: int = 20,
) -> list[GameRow]:
    """The last ``limit`` games to finish (voided ones included, marked), newest first;
    optionally of one tournament and/or one submission."""
    query = sm_select(Game, Series.tournament_id).join(
        Series, col(Series.id) == col(Game.series_id)
    )
    if tournament_id is not None:
        query = query.where(Series.tournament_id == tournament_id)
    if submission_id is not None:
        query = query.where(
            or_(
                col(Game.seat0_submission_id) == submission_id,
                col(Game.seat1_submission_id) == submission_id,
            )
        )
    query = query.order_by(col(Game.finished_at).desc(), col(Game.id).desc()).limit(limit)
    return [_game_row(game, tid) for game, tid in session.exec(query)]


def games_of(series_id: int, *, session: Session) -> list[GameRow]:
    """Every game of a series (voided attempts too), by number then attempt."""
    query = (
        sm_select(Game, Series.tournament_id)
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(Game.series_id == series_id)
        .order_by(col(Game.number), col(Game.attempt))
    )
    return [_game_row(game, tid) for game, tid in session.exec(query)]


@dataclass(frozen=True, slots=True)
class OpponentResult:
    """One submission's counted results against one opponent (all seats, all series)."""

    opponent_id: int
    wins: int
    draws: int
    losses: int
    forfeits: int
    """Games this submission lost by forfeit against that opponent."""

    @property
    def games(self) -> int:
        """Games counted."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points per game (win 1, draw 1/2)."""
        return (self.wins + self.draws / 2) / self.games if self.games else 0.0


def results_by_opponent(
    submission_id: int, *, session: Session, tournament_id: int | None = None
) -> list[OpponentResult]:
    """Counted results of ``submission_id`` against each opponent, most games first."""
    seat0 = col(Game.seat0_submission_id)
    seat1 = col(Game.seat1_submission_id)
    result = col(Game.result)
    mine0 = seat0 == submission_id
    mine1 = seat1 == submission_id
    opponent = case((mine0, seat1), else_=seat0).label("opponent")

    def count(condition: ColumnElement[bool]) -> Any:
        return func.sum(case((condition, 1), else_=0))

    query = (
        select(
            opponent,
            count((mine0 & (result == "seat0")) | (mine1 & (result == "seat1"))),
            count(result == "draw"),
            count((mine0 & (result == "seat1")) | (mine1 & (result == "seat0"))),
            count(
                (mine0 & (col(Game.forfeit_seat) == 0)) | (mine1 & (col(Game.forfeit_seat) == 1))
            ),
        )
        .join(Series, col(Series.id) == col(Game.series_id))
        .where(col(Game.voided).is_(False), or_(mine0, mine1))
        .group_by(opponent)
    )
    if tournament_id is not None:
        query = query.where(col(Series.tournament_id) == tournament_id)
    rows = [
        OpponentResult(int(o), int(w), int(d), int(loss), int(f))
        for o, w, d, loss, f in session.connection().execute(query)
    ]
    return sorted(rows, key=lambda r: (-r.games, r.opponent_id))


def series_of_submission(submission_id: int, *, session: Session) -> list[Series]:
    """Every series the submission plays in, newest tournament first."""
    query = (
        sm_select(Series)
        .where(
            or_(
                col(Series.submission_a_id) == submission_id,
                col(Series.submission_b_id) == submission_id,
            )
        )
        .order_by(col(Series.tournament_id).desc(), col(Series.position))
    )
    return list(session.exec(query))


def played_in_series(series_ids: list[int], *, session: Session) -> dict[int, int]:
    """Counted games per series, for the given series."""
    if not series_ids:
        return {}
    query = (
        select(col(Game.series_id), func.count())
        .where(col(Game.series_id).in_(series_ids), col(Game.voided).is_(False))
        .group_by(col(Game.series_id))
    )
    return {int(s): int(n) for s, n in session.connection().execute(query)}


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A submission's rating of record in one stored snapshot."""

    created_at: datetime
    tournament_id: int | None
    model: str
    rating: float
    ci_low: float | None
    ci_high: float | None
    rank: int
    games: int


def rating_points(submission_id: int, *, session: Session, model: str) -> list[RatingPoint]:
    """The submission's line in every stored snapshot of ``model`` (global and per
    tournament), oldest first: the rating history the bot page plots."""
    query = (
        sm_select(RatingSnapshot, RatingEntry)
        .join(RatingEntry, col(RatingEntry.snapshot_id) == col(RatingSnapshot.id))
        .where(RatingEntry.submission_id == submission_id, RatingSnapshot.model == model)
        .order_by(col(RatingSnapshot.created_at), col(RatingSnapshot.id))
    )
    return [
        RatingPoint(
            created_at=snapshot.created_at,
            tournament_id=snapshot.tournament_id,
            model=snapshot.model,
            rating=entry.rating,
            ci_low=entry.ci_low,
            ci_high=entry.ci_high,
            rank=entry.rank,
            games=entry.games,
        )
        for snapshot, entry in session.exec(query)
    ]
