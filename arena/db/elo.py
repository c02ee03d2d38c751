"""Live Elo kept in the database, updated as each game is recorded (no replay per read).

Each board (a *scope*: all tournaments, or one tournament; one ruleset and table size) has
a row in ``elo_scopes`` and one row per submission in ``elo_ratings``. :func:`record_elo`
applies a newly recorded counted game to the board of all tournaments and to its
tournament's board, in the transaction that records it; :func:`rebuild_elo` replays stored
games (migration 0006 backfills with it, and voiding a game rebuilds its boards).

Games are applied in the order they are recorded, which is the order of their ids: writers
hold the SQLite write lock, and on PostgreSQL a counted game's boards (their ``elo_scopes``
rows) are locked ``FOR UPDATE`` by :func:`lock_boards` *before* the game's row is inserted,
so its id is drawn only once every game recorded before it on those boards has committed.
A rebuild applies them by id too, so live Elo is one function of the stored games. It is
still provisional (the rating of record is the order-independent BayesElo fit).

The arithmetic is :mod:`arena.elo`, which :class:`leaderboard.ratings.elo.EloTracker` uses
too, applied in the same order, so both give the same floating-point numbers;
tests/standings pin that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Session

from arena.db.records import PairCounts
from arena.db.table_results import table_pair_scores
from arena.elo import INITIAL_RATING, NEW_BOT_GAMES, expected_score, k_factor

ALL_TOURNAMENTS = 0
"""``tournament_id`` of the board of every tournament."""

# Light table descriptions (not the ORM models): the migration's backfill uses them too,
# and must not depend on columns later revisions may add or drop.
_GAMES = sa.table(
    "games",
    sa.column("id", sa.Integer),
    sa.column("series_id", sa.Integer),
    sa.column("voided", sa.Boolean),
    sa.column("ruleset", sa.String),
    sa.column("players", sa.Integer),
    sa.column("dealer", sa.Integer),
    sa.column("first_mover", sa.Integer),
    sa.column("result", sa.String),
    sa.column("seat0_submission_id", sa.Integer),
    sa.column("seat1_submission_id", sa.Integer),
    sa.column("seats", sa.JSON),
    sa.column("pairwise", sa.JSON),
    sa.column("forfeit_seat", sa.Integer),
    sa.column("end_reason", sa.String),
)
_SERIES = sa.table("series", sa.column("id", sa.Integer), sa.column("tournament_id", sa.Integer))
SCOPES = sa.table(
    "elo_scopes",
    sa.column("tournament_id", sa.Integer),
    sa.column("ruleset", sa.String),
    sa.column("players", sa.Integer),
    sa.column("games", sa.Integer),
    sa.column("last_game_id", sa.Integer),
)
RATINGS = sa.table(
    "elo_ratings",
    sa.column("tournament_id", sa.Integer),
    sa.column("ruleset", sa.String),
    sa.column("players", sa.Integer),
    sa.column("submission_id", sa.Integer),
    sa.column("rating", sa.Float),
    sa.column("games", sa.Integer),
)
PAIRS = sa.table(
    "board_pairs",
    sa.column("tournament_id", sa.Integer),
    sa.column("ruleset", sa.String),
    sa.column("players", sa.Integer),
    sa.column("first_submission_id", sa.Integer),
    sa.column("second_submission_id", sa.Integer),
    sa.column("wins", sa.Integer),
    sa.column("draws", sa.Integer),
    sa.column("losses", sa.Integer),
)
FORFEITS = sa.table(
    "board_forfeits",
    sa.column("tournament_id", sa.Integer),
    sa.column("ruleset", sa.String),
    sa.column("players", sa.Integer),
    sa.column("submission_id", sa.Integer),
    sa.column("reason", sa.String),
    sa.column("games", sa.Integer),
)
_SCOPE_KEY = ("tournament_id", "ruleset", "players")
_PAIR_KEY = (*_SCOPE_KEY, "first_submission_id", "second_submission_id")
_FORFEIT_KEY = (*_SCOPE_KEY, "submission_id", "reason")


@dataclass(frozen=True, slots=True)
class Scope:
    """One board: ``tournament_id`` (0 for all tournaments), ruleset and table size."""

    tournament_id: int
    ruleset: str
    players: int

    def where(self, table: Any) -> sa.ColumnElement[bool]:
        """The condition selecting this scope's rows of ``elo_scopes``/``elo_ratings``."""
        return sa.and_(
            table.c.tournament_id == self.tournament_id,
            table.c.ruleset == self.ruleset,
            table.c.players == self.players,
        )


@dataclass(frozen=True, slots=True)
class EloEntry:
    """A submission's live Elo on a board after ``games`` pairwise results."""

    submission_id: int
    rating: float
    games: int

    @property
    def provisional(self) -> bool:
        """Still within its first games (K is still the new bot's)."""
        return self.games < NEW_BOT_GAMES


@dataclass(frozen=True)
class EloBoard:
    """A board's live Elo: ``games`` counted games applied, an entry per submission."""

    games: int
    entries: dict[int, EloEntry]


@dataclass(frozen=True, slots=True)
class ScoredGame:
    """A counted game as Elo consumes it: its id, tournament and pairwise results."""

    game_id: int
    tournament_id: int
    ruleset: str
    players: int
    pairs: tuple[tuple[int, int, float], ...]  # (first, second, first's score)
    forfeiter: int | None = None
    """The submission that forfeited the game, if one did."""
    forfeit_reason: str | None = None
    """How the game ended when one forfeited (a :class:`GameEndReason` value)."""

    def scopes(self) -> tuple[Scope, Scope]:
        """The board of all tournaments first, then its tournament's (the lock order)."""
        return game_boards(self.tournament_id, self.ruleset, self.players)


def game_boards(tournament_id: int, ruleset: str, players: int) -> tuple[Scope, Scope]:
    """The two boards a counted game of this tournament, ruleset and table size is on: all
    tournaments' first, then its tournament's (the lock order)."""
    return Scope(ALL_TOURNAMENTS, ruleset, players), Scope(tournament_id, ruleset, players)


def _lock_order(scope: Scope) -> tuple[int, str, int]:
    # Every writer locks boards in this order (all tournaments' is 0: first): no deadlock.
    return scope.tournament_id, scope.ruleset, scope.players


def apply_pairs(
    state: dict[int, tuple[float, int]], pairs: Iterable[tuple[int, int, float]]
) -> None:
    """Apply pairwise results in order to ``{submission: (rating, games)}`` (in place)."""
    for a, b, score in pairs:
        ra, ga = state.get(a, (INITIAL_RATING, 0))
        rb, gb = state.get(b, (INITIAL_RATING, 0))
        expected = expected_score(ra, rb)
        # Both deltas from the pre-game ratings, each side with its own K (as EloTracker).
        state[a] = (ra + k_factor(ga) * (score - expected), ga + 1)
        state[b] = (rb + k_factor(gb) * ((1.0 - score) - (1.0 - expected)), gb + 1)


def scored_pairs(
    *,
    ruleset: str,
    dealer: int,
    first_mover: int,
    result: str | None,
    seat0: int,
    seat1: int,
    seats: Sequence[int] | None,
    pairwise: Iterable[Sequence[int]] | None,
) -> tuple[tuple[int, int, float], ...]:
    """The pairwise results of one counted game: one for the default game (first mover
    first), one per pair of seats at a classic table (rules-classic.md)."""
    if ruleset != "default":
        return tuple(table_pair_scores(dealer, seats or (seat0, seat1), pairwise or ()))
    first, second = (seat0, seat1) if first_mover == 0 else (seat1, seat0)
    won = {"seat0": 0, "seat1": 1}.get(result or "")
    score = 0.5 if won is None else (1.0 if won == first_mover else 0.0)
    return ((int(first), int(second), score),)


def forfeiter(
    forfeit_seat: int | None, seat0: int, seat1: int, seats: Sequence[int] | None
) -> int | None:
    """The submission in ``forfeit_seat`` (None when nobody forfeited)."""
    if forfeit_seat is None:
        return None
    return int((seats or (seat0, seat1))[forfeit_seat])


def _scored(row: Any) -> ScoredGame:
    return ScoredGame(
        int(row.id),
        int(row.tournament_id),
        str(row.ruleset),
        int(row.players),
        scored_pairs(
            ruleset=row.ruleset,
            dealer=row.dealer,
            first_mover=row.first_mover,
            result=row.result,
            seat0=row.seat0_submission_id,
            seat1=row.seat1_submission_id,
            seats=row.seats,
            pairwise=row.pairwise,
        ),
        forfeiter(row.forfeit_seat, row.seat0_submission_id, row.seat1_submission_id, row.seats),
        None if row.forfeit_seat is None else str(row.end_reason),
    )


def _light_query() -> sa.Select[Any]:
    g = _GAMES.c
    return (
        sa.select(
            g.id,
            _SERIES.c.tournament_id,
            g.ruleset,
            g.players,
            g.dealer,
            g.first_mover,
            g.result,
            g.seat0_submission_id,
            g.seat1_submission_id,
            g.seats,
            g.pairwise,
            g.forfeit_seat,
            g.end_reason,
        )
        .select_from(_GAMES.join(_SERIES, _SERIES.c.id == g.series_id))
        .where(g.voided.is_(False))
    )


def scored_game(game_id: int, connection: Connection) -> ScoredGame | None:
    """The stored game ``game_id`` as Elo consumes it; None when it does not count."""
    row = connection.execute(_light_query().where(_GAMES.c.id == game_id)).first()
    return None if row is None else _scored(row)


def stored_scored_games(connection: Connection, scope: Scope | None = None) -> list[ScoredGame]:
    """Every counted game (of ``scope`` only, if given) in the order of their ids."""
    query = _light_query()
    if scope is not None:
        query = query.where(_GAMES.c.ruleset == scope.ruleset, _GAMES.c.players == scope.players)
        if scope.tournament_id != ALL_TOURNAMENTS:
            query = query.where(_SERIES.c.tournament_id == scope.tournament_id)
    return [_scored(row) for row in connection.execute(query.order_by(_GAMES.c.id))]


def _insert(connection: Connection, table: Any) -> Any:
    # An upsert that does nothing on a conflict, in each backend's own dialect.
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def _lock_scope(connection: Connection, scope: Scope) -> tuple[int, int | None]:
    """Create the scope row if missing, lock it (PostgreSQL) and return (games, last id)."""
    values = {
        "tournament_id": scope.tournament_id,
        "ruleset": scope.ruleset,
        "players": scope.players,
        "games": 0,
        "last_game_id": None,
    }
    connection.execute(_insert(connection, SCOPES).values(**values).on_conflict_do_nothing())
    row = connection.execute(
        sa.select(SCOPES.c.games, SCOPES.c.last_game_id)
        .where(scope.where(SCOPES))
        .with_for_update()
    ).one()
    return int(row.games), row.last_game_id


def lock_boards(connection: Connection, scopes: Iterable[Scope]) -> dict[Scope, int]:
    """Lock these boards (creating their rows) for the rest of the transaction, in the lock
    order, and return how many games each holds. Called before counted games' rows are
    inserted: on PostgreSQL a row's id is drawn when it is inserted, so two writers of the
    same board then draw ids in the order they apply their games (without it, the later id
    could be applied first). On SQLite the write lock, taken when the transaction begins,
    already orders them. Hand the counts to :func:`apply_games` (``locked``) so that it does
    not lock the same rows again."""
    return {
        scope: _lock_scope(connection, scope)[0] for scope in sorted(set(scopes), key=_lock_order)
    }


def _load(
    connection: Connection, scope: Scope, submissions: Iterable[int] | None
) -> dict[int, tuple[float, int]]:
    query = sa.select(RATINGS.c.submission_id, RATINGS.c.rating, RATINGS.c.games).where(
        scope.where(RATINGS)
    )
    if submissions is not None:
        query = query.where(RATINGS.c.submission_id.in_(sorted(set(submissions))))
    return {
        int(sid): (float(rating), int(games)) for sid, rating, games in connection.execute(query)
    }


def _save(
    connection: Connection,
    scope: Scope,
    before: dict[int, tuple[float, int]],
    after: dict[int, tuple[float, int]],
) -> None:
    key = {"t": scope.tournament_id, "r": scope.ruleset, "p": scope.players}
    changed = [
        key | {"s": sid, "rating": rating, "games": games}
        for sid, (rating, games) in after.items()
        if sid in before and before[sid] != (rating, games)
    ]
    if changed:
        r = RATINGS.c
        connection.execute(
            RATINGS.update()
            .where(
                r.tournament_id == sa.bindparam("t"),
                r.ruleset == sa.bindparam("r"),
                r.players == sa.bindparam("p"),
                r.submission_id == sa.bindparam("s"),
            )
            .values(rating=sa.bindparam("rating"), games=sa.bindparam("games")),
            changed,
        )
    new = [
        {
            "tournament_id": scope.tournament_id,
            "ruleset": scope.ruleset,
            "players": scope.players,
            "submission_id": sid,
            "rating": rating,
            "games": games,
        }
        for sid, (rating, games) in after.items()
        if sid not in before
    ]
    if new:
        connection.execute(RATINGS.insert(), new)


def _pair_column(score: float) -> int:
    # 0: the first's win, 1: a draw, 2: the first's loss (board_pairs' three counts).
    return 0 if score == 1.0 else (1 if score == 0.5 else 2)


def _add_tallies(connection: Connection, scope: Scope, games: Iterable[ScoredGame]) -> None:
    """Add the games' pairwise results and forfeits to the scope's stored tallies."""
    pairs: dict[tuple[int, int], list[int]] = {}
    forfeits: dict[tuple[int, str], int] = {}
    for game in games:
        for a, b, score in game.pairs:
            pairs.setdefault((a, b), [0, 0, 0])[_pair_column(score)] += 1
        if game.forfeiter is not None:
            key = (game.forfeiter, game.forfeit_reason or "")
            forfeits[key] = forfeits.get(key, 0) + 1
    scope_values = {
        "tournament_id": scope.tournament_id,
        "ruleset": scope.ruleset,
        "players": scope.players,
    }
    if pairs:
        insert = _insert(connection, PAIRS)
        connection.execute(
            insert.on_conflict_do_update(
                index_elements=list(_PAIR_KEY),
                set_={
                    name: PAIRS.c[name] + insert.excluded[name]
                    for name in ("wins", "draws", "losses")
                },
            ),
            [
                scope_values
                | {
                    "first_submission_id": a,
                    "second_submission_id": b,
                    "wins": w,
                    "draws": d,
                    "losses": lo,
                }
                for (a, b), (w, d, lo) in sorted(pairs.items())
            ],
        )
    if forfeits:
        insert = _insert(connection, FORFEITS)
        connection.execute(
            insert.on_conflict_do_update(
                index_elements=list(_FORFEIT_KEY),
                set_={"games": FORFEITS.c.games + insert.excluded.games},
            ),
            [
                scope_values | {"submission_id": sid, "reason": reason, "games": n}
                for (sid, reason), n in sorted(forfeits.items())
            ],
        )


def apply_games(
    connection: Connection,
    games: Sequence[ScoredGame],
    *,
    tallies: bool = True,
    locked: Mapping[Scope, int] | None = None,
) -> None:
    """Apply newly recorded counted games, in this order, to their boards: live Elo and, with
    ``tallies``, the per-pair results and forfeits (``board_pairs``, ``board_forfeits``).

    Loads each touched board once (only the submissions the games involve), so recording one
    game or a bulk of them costs the same handful of statements per board. ``tallies=False``
    is for migration 0006, which runs before the tally tables exist. ``locked``: what
    :func:`lock_boards` returned earlier in this transaction, with no game applied since;
    those boards are not locked again.
    """
    by_scope: dict[Scope, list[ScoredGame]] = {}
    for game in games:
        for scope in game.scopes():
            by_scope.setdefault(scope, []).append(game)
    for scope in sorted(by_scope, key=_lock_order):
        applied = by_scope[scope]
        count = locked[scope] if locked and scope in locked else _lock_scope(connection, scope)[0]
        involved = {sid for g in applied for a, b, _ in g.pairs for sid in (a, b)}
        before = _load(connection, scope, involved)
        state = dict(before)
        for game in applied:
            apply_pairs(state, game.pairs)
        _save(connection, scope, before, state)
        if tallies:
            _add_tallies(connection, scope, applied)
        connection.execute(
            SCOPES.update()
            .where(scope.where(SCOPES))
            .values(games=count + len(applied), last_game_id=applied[-1].game_id)
        )


def record_elo(
    game_id: int | None, *, session: Session, locked: Mapping[Scope, int] | None = None
) -> None:
    """Apply the just-recorded game ``game_id`` to its boards (nothing if it is void).

    Called by :func:`arena.db.record_game` in its transaction, after the game's row, with
    the counts :func:`lock_boards` returned before it (``locked``).
    """
    if game_id is None:
        raise ValueError("live Elo needs a flushed game: it has no id yet")
    connection = session.connection()
    scored = scored_game(game_id, connection)
    if scored is not None:
        apply_games(connection, [scored], locked=locked)


def rebuild_elo(
    connection: Connection, scopes: Iterable[Scope] | None = None, *, tallies: bool = True
) -> None:
    """Replay the counted games of ``scopes`` (every board when None) by id, replacing their
    live Elo and (with ``tallies``) their per-pair results and forfeits. Used by migrations
    0006 (without tallies), 0010 and 0011, and when a recorded game is voided."""
    tables = (RATINGS, PAIRS, FORFEITS) if tallies else (RATINGS,)
    if scopes is None:
        for table in tables:
            connection.execute(table.delete())
        connection.execute(SCOPES.delete())
        apply_games(connection, stored_scored_games(connection), tallies=tallies)
        return
    for scope in sorted(set(scopes), key=_lock_order):
        _lock_scope(connection, scope)
        for table in tables:
            connection.execute(table.delete().where(scope.where(table)))
        # apply_games would also touch the other board of each game: replay this one only.
        count = 0
        last: int | None = None
        state: dict[int, tuple[float, int]] = {}
        games = stored_scored_games(connection, scope)
        for game in games:
            apply_pairs(state, game.pairs)
            count, last = count + 1, game.game_id
        _save(connection, scope, {}, state)
        if tallies:
            _add_tallies(connection, scope, games)
        connection.execute(
            SCOPES.update().where(scope.where(SCOPES)).values(games=count, last_game_id=last)
        )


def rebuild_elo_of(game_id: int, *, session: Session) -> None:
    """Rebuild the boards of game ``game_id`` (called when a recorded game is voided)."""
    connection = session.connection()
    row = connection.execute(
        sa.select(_SERIES.c.tournament_id, _GAMES.c.ruleset, _GAMES.c.players)
        .select_from(_GAMES.join(_SERIES, _SERIES.c.id == _GAMES.c.series_id))
        .where(_GAMES.c.id == game_id)
    ).one()
    tournament_id, ruleset, players = int(row[0]), str(row[1]), int(row[2])
    rebuild_elo(
        connection,
        [Scope(ALL_TOURNAMENTS, ruleset, players), Scope(tournament_id, ruleset, players)],
    )


def elo_board(
    *, session: Session, tournament_id: int | None, ruleset: str, players: int
) -> EloBoard:
    """The stored live Elo of a board (all tournaments when ``tournament_id`` is None)."""
    scope = Scope(tournament_id or ALL_TOURNAMENTS, ruleset, players)
    connection = session.connection()
    row = connection.execute(sa.select(SCOPES.c.games).where(scope.where(SCOPES))).first()
    entries = {
        sid: EloEntry(sid, rating, games)
        for sid, (rating, games) in _load(connection, scope, None).items()
    }
    return EloBoard(0 if row is None else int(row[0]), entries)


def replayed_elo(
    *, session: Session, tournament_id: int | None, ruleset: str, players: int
) -> EloBoard:
    """The same board computed by replaying its stored games (the slow path, for when the
    stored state does not account for every counted game, e.g. rows written by hand)."""
    scope = Scope(tournament_id or ALL_TOURNAMENTS, ruleset, players)
    state: dict[int, tuple[float, int]] = {}
    games = stored_scored_games(session.connection(), scope)
    for game in games:
        apply_pairs(state, game.pairs)
    entries = {sid: EloEntry(sid, rating, g) for sid, (rating, g) in state.items()}
    return EloBoard(len(games), entries)


@dataclass(frozen=True)
class BoardTallies:
    """A board's stored per-pair results and forfeits, as kept by :func:`apply_games`."""

    games: int
    """Counted games the tallies account for."""
    pairs: list[PairCounts]
    """W/D/L of every ordered pair (first, second), sorted by (first, second) id."""
    forfeits: dict[int, dict[str, int]]
    """For each submission that forfeited counted games: ``{reason: count}``."""


def counted_games(connection: Connection, scope: Scope) -> int:
    """How many counted games the board has, counted in the games table itself."""
    g = _GAMES.c
    query = sa.select(sa.func.count()).select_from(_GAMES)
    query = query.where(g.voided.is_(False), g.ruleset == scope.ruleset)
    if scope.ruleset != "default":
        # The default game is two-player by its rules; leaving the size out keeps this
        # count inside ix_games_standings, which has no column for it.
        query = query.where(g.players == scope.players)
    if scope.tournament_id != ALL_TOURNAMENTS:
        query = query.join(_SERIES, _SERIES.c.id == g.series_id).where(
            _SERIES.c.tournament_id == scope.tournament_id
        )
    return int(connection.execute(query).scalar_one())


def board_tallies(
    *, session: Session, tournament_id: int | None, ruleset: str, players: int
) -> BoardTallies | None:
    """The board's stored tallies (all tournaments when ``tournament_id`` is None), or None
    when they do not account for exactly its counted games (rows written around
    :func:`arena.db.record_game`, or a game recorded between these reads on a database
    whose reads are not one snapshot): the caller then aggregates the games themselves.

    Costs one count over the standings' index and two reads of small tables, whatever the
    number of games.
    """
    scope = Scope(tournament_id or ALL_TOURNAMENTS, ruleset, players)
    connection = session.connection()
    counted = counted_games(connection, scope)
    row = connection.execute(sa.select(SCOPES.c.games).where(scope.where(SCOPES))).first()
    if (0 if row is None else int(row[0])) != counted:
        return None
    forfeits: dict[int, dict[str, int]] = {}
    for sid, reason, n in connection.execute(
        sa.select(FORFEITS.c.submission_id, FORFEITS.c.reason, FORFEITS.c.games).where(
            scope.where(FORFEITS), FORFEITS.c.games > 0
        )
    ):
        forfeits.setdefault(int(sid), {})[str(reason)] = int(n)
    p = PAIRS.c
    pairs = [
        PairCounts(int(a), int(b), int(w), int(d), int(lo))
        for a, b, w, d, lo in connection.execute(
            sa.select(p.first_submission_id, p.second_submission_id, p.wins, p.draws, p.losses)
            .where(scope.where(PAIRS))
            .order_by(p.first_submission_id, p.second_submission_id)
        )
        if w or d or lo
    ]
    # A game is one result per pair of its seats with a result: at least its loser's n - 1
    # (two winners have none between themselves, rules-classic.md), at most every pair's.
    results = sum(c.games for c in pairs)
    if not counted * (players - 1) <= results <= counted * (players * (players - 1) // 2):
        return None
    return BoardTallies(counted, pairs, forfeits)
