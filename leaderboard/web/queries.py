"""Read-only queries the pages need beyond ``arena.db``'s CRUD: progress, game lists,
results of one submission against each opponent. SQLAlchemy expressions only, no SQL text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, cast, exists, func, or_, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col
from sqlmodel import select as sm_select

from arena.db import (
    Game,
    RatingEntry,
    RatingSnapshot,
    Series,
    Tournament,
    table_games,
    table_pair_counts,
)
from arena.db.gamecodec import PackError
from leaderboard.formatting import board_name


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
    seats: tuple[int, ...]
    """Every seat's submission, seat 0 first (two for the default game, 2-4 at a table)."""
    dealer: int
    result: str | None
    end_reason: str
    forfeit_seat: int | None
    voided: bool
    moves: int | None
    """Moves played; ``None`` for a game whose stored deal and moves do not unpack (a damaged
    row: its own page says what is wrong, the list still shows the game)."""
    finished_at: datetime
    ruleset: str = "default"
    loser_seat: int | None = None
    pairwise: tuple[tuple[int, int], ...] = ()


def _move_count(game: Game) -> int | None:
    """How many moves ``game`` holds (counted from ``packed`` without replaying them), or
    ``None`` when its packed deal and moves are damaged: one bad row must not break a list."""
    try:
        return game.move_count
    except PackError:
        return None


def _game_row(game: Game, tournament_id: int) -> GameRow:
    assert game.id is not None  # stored rows have ids; this narrows the type
    return GameRow(
        game_id=game.id,
        series_id=game.series_id,
        tournament_id=tournament_id,
        number=game.number,
        attempt=game.attempt,
        seats=game.seat_ids,
        dealer=game.dealer,
        result=game.result,
        end_reason=game.end_reason,
        forfeit_seat=game.forfeit_seat,
        voided=game.voided,
        moves=_move_count(game),
        finished_at=game.finished_at,
        ruleset=game.ruleset,
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
                # Seats 2 and 3 of a table: every game of a table series has its seats.
                col(Game.series_id).in_(_table_series_ids(submission_id, session)),
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


def _seated(seats: Any, submission_id: int, session: Session) -> ColumnElement[bool]:
    """SQL: the JSON list of submissions ``seats`` (a table's, seat 0 first) holds
    ``submission_id``. NULL (a two-player series or game) and JSON ``null`` hold nobody."""
    if session.get_bind().dialect.name == "postgresql":
        return cast(seats, JSONB).contains(cast([submission_id], JSONB))
    values = func.json_each(seats).table_valued("value")
    return exists(select(1).select_from(values).where(values.c.value == submission_id))


def _table_series_ids(submission_id: int, session: Session) -> Any:
    """Subquery: the ids of the table series in which ``submission_id`` has a seat (any seat:
    a and b are seats 0 and 1, the others are in ``seats`` only)."""
    return select(col(Series.id)).where(
        col(Series.seats).is_not(None), _seated(col(Series.seats), submission_id, session)
    )


@dataclass(frozen=True, slots=True)
class OpponentResult:
    """One submission's counted results against one opponent on one board (all seats, all
    series). At a classic table these are the pairwise results (rules-classic.md): a game
    gives one against each other seat with a result between the two."""

    opponent_id: int
    wins: int
    draws: int
    losses: int
    forfeits: int
    """Games this submission lost by forfeit against that opponent (at a table: games it
    forfeited with the opponent seated)."""

    @property
    def games(self) -> int:
        """Results counted (games of the default game, pairwise results at a table)."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points per result (win 1, draw 1/2)."""
        return (self.wins + self.draws / 2) / self.games if self.games else 0.0


@dataclass(frozen=True, slots=True)
class BoardResults:
    """A submission's results against each opponent on one board (ruleset and table size),
    most results first; ``games`` counts its counted games there (a table game once)."""

    ruleset: str
    table_size: int
    games: int
    opponents: list[OpponentResult]

    @property
    def name(self) -> str:
        """``default game`` or ``classic, table of 3``, as the standings name boards."""
        return board_name(self.ruleset, self.table_size)

    @property
    def table(self) -> bool:
        """A classic table's board: results are pairwise."""
        return self.ruleset != "default"


def _sorted(rows: list[OpponentResult]) -> list[OpponentResult]:
    return sorted(rows, key=lambda r: (-r.games, r.opponent_id))


def _default_results(
    submission_id: int, session: Session, tournament_id: int | None
) -> BoardResults | None:
    """The default game's board: one grouped count over the submission's games."""
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
        .where(col(Game.voided).is_(False), col(Game.ruleset) == "default", or_(mine0, mine1))
        .group_by(opponent)
    )
    if tournament_id is not None:
        query = query.where(col(Series.tournament_id) == tournament_id)
    rows = [
        OpponentResult(int(o), int(w), int(d), int(loss), int(f))
        for o, w, d, loss, f in session.connection().execute(query)
    ]
    if not rows:
        return None
    # Two seats: every game is one result against the one opponent.
    return BoardResults("default", 2, sum(r.games for r in rows), _sorted(rows))


def _table_results(
    submission_id: int, session: Session, tournament_id: int | None
) -> list[BoardResults]:
    """Every classic board the submission sat at: its games there (the light columns the
    standings read, never the deal or the moves), scored by ``arena.db.table_pair_counts``,
    the pairwise record the standings count."""
    mine = _table_series_ids(submission_id, session)
    boards_query = (
        select(col(Game.ruleset), col(Game.players))
        .where(
            col(Game.voided).is_(False),
            col(Game.ruleset) != "default",
            col(Game.series_id).in_(mine),
        )
        .distinct()
    )
    boards = {
        (str(ruleset), int(players)): table_games(
            session=session,
            ruleset=str(ruleset),
            players=int(players),
            tournament_id=tournament_id,
            series_ids=mine,
        )
        for ruleset, players in session.connection().execute(boards_query)
    }
    found = []
    for (ruleset, players), games in sorted(boards.items()):
        tally: dict[int, list[int]] = {}
        for pair in table_pair_counts(games):
            if pair.first_submission_id == submission_id:
                opponent, won, lost = pair.second_submission_id, pair.wins, pair.losses
            elif pair.second_submission_id == submission_id:
                opponent, won, lost = pair.first_submission_id, pair.losses, pair.wins
            else:
                continue  # two other seats of the same tables
            counts = tally.setdefault(opponent, [0, 0, 0, 0])
            counts[0] += won
            counts[1] += pair.draws
            counts[2] += lost
        for game in games:
            if game.forfeit_seat is not None and game.seats[game.forfeit_seat] == submission_id:
                for other in set(game.seats) - {submission_id}:
                    tally.setdefault(other, [0, 0, 0, 0])[3] += 1
        rows = [OpponentResult(o, w, d, lo, f) for o, (w, d, lo, f) in tally.items()]
        found.append(BoardResults(ruleset, players, len(games), _sorted(rows)))
    return found


def results_by_opponent(
    submission_id: int, *, session: Session, tournament_id: int | None = None
) -> list[BoardResults]:
    """Counted results of ``submission_id`` against each opponent, one list per board it
    played on (the default game first, then each ruleset and table size), most results
    first: the W/D/L the standings of that board count, so a board's rows add up to the
    submission's W/D/L there. At a classic table they are pairwise results."""
    default = _default_results(submission_id, session, tournament_id)
    tables = _table_results(submission_id, session, tournament_id)
    return ([] if default is None else [default]) + tables


def series_of_submission(submission_id: int, *, session: Session) -> list[Series]:
    """Every series the submission plays in (at any seat of a table), newest tournament
    first."""
    query = (
        sm_select(Series)
        .where(
            or_(
                col(Series.submission_a_id) == submission_id,
                col(Series.submission_b_id) == submission_id,
                col(Series.id).in_(_table_series_ids(submission_id, session)),
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
    ruleset: str = "default"
    table_size: int = 2
    """The board the snapshot rated (stored with it; for older snapshots, the tournament's,
    or the default game's for a fit of all tournaments)."""


def _snapshot_board(parameters: Any, tournament_config: Any) -> tuple[str, int]:
    from leaderboard.standings import InvalidFilterError, resolve_board_kind

    stored = parameters if isinstance(parameters, dict) else {}
    ruleset, size = stored.get("ruleset"), stored.get("table_size")
    try:
        return resolve_board_kind(
            ruleset if isinstance(ruleset, str) else None,
            size if isinstance(size, int) and not isinstance(size, bool) else None,
            tournament_config if isinstance(tournament_config, dict) else None,
        )
    except (InvalidFilterError, ValueError, TypeError):
        return "default", 2


def rating_points(submission_id: int, *, session: Session, model: str) -> list[RatingPoint]:
    """The submission's line in every stored snapshot of ``model`` (global and per
    tournament), oldest first: the rating history the bot page plots."""
    query = (
        sm_select(RatingSnapshot, RatingEntry, Tournament.config)
        .join(RatingEntry, col(RatingEntry.snapshot_id) == col(RatingSnapshot.id))
        .outerjoin(Tournament, col(Tournament.id) == col(RatingSnapshot.tournament_id))
        .where(RatingEntry.submission_id == submission_id, RatingSnapshot.model == model)
        .order_by(col(RatingSnapshot.created_at), col(RatingSnapshot.id))
    )
    points = []
    for snapshot, entry, config in session.exec(query):
        ruleset, table_size = _snapshot_board(snapshot.parameters, config)
        points.append(
            RatingPoint(
                created_at=snapshot.created_at,
                tournament_id=snapshot.tournament_id,
                model=snapshot.model,
                rating=entry.rating,
                ci_low=entry.ci_low,
                ci_high=entry.ci_high,
                rank=entry.rank,
                games=entry.games,
                ruleset=ruleset,
                table_size=table_size,
            )
        )
    return points
