"""Mutation review of arena/db/table_results.py, arena/db/bulk.py and arena/db/ratings.py.

Two oracles, neither read back from the code under test:

* **Bulk equals one by one.** The same arena is built in two SQLite databases and the same
  games (default games with both seatings, draws and forfeits at either seat; classic tables
  of two, three and four seats with a loser, the turn limit, a draw for everyone, forfeits,
  a game several seats could not start; voided attempts replayed; a board whose only game is
  voided) are stored with ``record_games`` in one (in chunks of 3 rows, so several INSERTs
  and several series reads) and with ``record_game`` one at a time in the other. Every stored
  row (games, series, live Elo, its boards' tallies), the standings of every board and the
  ids must be identical (docs/database.md: "the same validation and rows").
* **The rules.** A ledger of what the test recorded is scored by rules-classic.md by hand
  (each winner beats the loser, winners have no result between themselves, the seats still
  holding cards at the turn limit draw with each other, a drawn game is a draw for every
  pair; the first of a pair is the seat playing earlier, clockwise from the dealer's left)
  and must equal ``table_games`` / ``table_pair_counts`` / ``table_forfeit_counts`` /
  ``table_outcomes`` and the classic standings: voided games, other rulesets, other table
  sizes, other tournaments and other series left out; a forfeit counted for the seat that
  forfeited (seat 0 too).

Then what bulk recording promises when it fails (all or nothing: a collision in a later
chunk leaves no row of the earlier ones; refused seatings and unknown series store
nothing; the caller's transaction stays usable without the bulk after a ConflictError:
the savepoint was never emitted before this review, since the inserts used a connection
taken before it began), what it does to series (pending ones start, a running one
keeps its start, the caller's session sees it), and what stored ratings return (the newest
snapshot of a model and scope only, ties on the clock broken by id, history in order, lines
best rank first).
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import Session, col, select

from arena.db import (
    ConflictError,
    Database,
    GamePlace,
    InvalidRecordError,
    NewRatingSnapshot,
    NotFoundError,
    RatingLine,
    Series,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    get_series,
    latest_rating_snapshot,
    load_rating_snapshot,
    open_database,
    rating_history,
    record_game,
    record_games,
    save_rating_snapshot,
    series_of_tournament,
    submit,
)
from arena.db import bulk as bulk_module
from arena.db.elo import FORFEITS, PAIRS, RATINGS, SCOPES, elo_board
from arena.db.models import Game, RatingEntry, RatingSnapshot
from arena.db.records import PairCounts
from arena.db.table_results import (
    TableGame,
    table_forfeit_counts,
    table_games,
    table_outcomes,
    table_pair_counts,
)
from leaderboard.standings import standings
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.db.helpers import World, deck, forfeit_game, game, new_submission

GE = GameEndReason
T0 = 1_785_000_000.0
Item = tuple[GameRecord, GamePlace]

# ------------------------------------------------------------------------------ the arena


@dataclass(frozen=True)
class Table:
    """A series: its id, tournament and seats (seat 0 first)."""

    series_id: int
    tournament_id: int
    seats: tuple[int, ...]


@dataclass(frozen=True)
class Arena:
    """Six submissions. Tournament one: a default series (s0-s1), tables of two (s3, s4),
    three (s0, s1, s2) and four (s0..s3). Tournament two: a table of three (s2, s4, s0), one
    of two (s1, s5) whose only game is voided, and a table of three that stays pending."""

    subs: tuple[int, ...]
    one: int
    two: int
    d01: Table
    c2: Table
    c3: Table
    c4: Table
    c3b: Table
    c2v: Table
    idle: Table


def build_arena(db: Database) -> Arena:
    """The same arena (the same ids) in every fresh database."""
    with db.session() as s:
        subs = []
        for name in ("s0", "s1", "s2", "s3", "s4", "s5"):
            sub = submit(new_submission(name), session=s).submission
            assert sub.id is not None
            subs.append(sub.id)
        s0, s1, s2, s3, s4, s5 = subs

        def spec(seats: tuple[int, ...], ruleset: str = "classic") -> SeriesSpec:
            table = seats if ruleset == "classic" else ()
            return SeriesSpec(seats[0], seats[1], 40, len(seats), ruleset=ruleset, seats=table)

        layout = {
            "one": [
                spec((s0, s1), "default"),
                spec((s3, s4)),
                spec((s0, s1, s2)),
                spec((s0, s1, s2, s3)),
            ],
            "two": [spec((s2, s4, s0)), spec((s1, s5)), spec((s3, s4, s5))],
        }
        tables: list[Table] = []
        tids = []
        for name, specs in layout.items():
            t = create_tournament(TournamentSpec(name, 11, series=specs), session=s)
            assert t.id is not None
            tids.append(t.id)
            for row, sp in zip(series_of_tournament(t.id, session=s), specs, strict=True):
                assert row.id is not None
                tables.append(
                    Table(row.id, t.id, sp.seats or (sp.submission_a_id, sp.submission_b_id))
                )
    return Arena(tuple(subs), tids[0], tids[1], *tables)


def dflt(table: Table, number: int, **kw: Any) -> Item:
    """A default game of ``table`` (see tests.db.helpers.game)."""
    world = World(table.seats[0], table.seats[1], table.tournament_id, table.series_id)
    return game(world, number, **kw)


def classic(
    table: Table,
    number: int,
    ending: GameEndReason,
    *,
    dealer: int = 0,
    loser: int | None = None,
    out: Sequence[int] = (),
    not_started: Sequence[int] = (),
    attempt: int = 1,
    finished: float | None = None,
) -> Item:
    """A classic game of ``table``: ``loser`` lost to everyone (the last holder or a forfeit's
    offender); at the turn limit the seats in ``out`` beat the others; ``not_started``: those
    seats could not start (the first in the order of play is ``loser``), the others beat
    them."""
    n = len(table.seats)
    pairwise: tuple[tuple[int, int], ...] = ()
    winner = None
    forfeit = None
    moves: tuple[Move, ...] = (Move((dealer + 1) % n, "lead 6C", 0.01),)
    if not_started:
        assert loser is not None
        pairwise = tuple((s, x) for x in not_started for s in range(n) if s not in not_started)
        forfeit = Forfeit(loser, ending, "", "could not start")
        moves = ()
    elif loser is not None:
        pairwise = tuple((s, loser) for s in range(n) if s != loser)
        winner = 1 - loser if n == 2 else None
        if ending.is_forfeit:
            forfeit = Forfeit(loser, ending, "", "x")
    elif ending is GE.TURN_LIMIT:
        pairwise = tuple((o, h) for o in out for h in range(n) if h not in out)
        winner = pairwise[0][0] if n == 2 and pairwise else None
    start = T0 + 60 * number
    record = GameRecord(
        deck=tuple(deck(number * 10 + attempt + 100 * n)),
        dealer=dealer,
        turn_limit=500,
        moves=moves,
        ending=ending,
        winner=winner,
        forfeit=forfeit,
        void_reason="infra" if ending is GE.VOID else "",
        players=tuple(f"p{i}" for i in range(n)),
        started=start,
        finished=start + 5 if finished is None else finished,
        ruleset="classic",
        seats=n,
        loser=loser,
        pairwise=pairwise,
    )
    return record, GamePlace(table.series_id, number, attempt, table.seats)


def games_of(a: Arena) -> list[Item]:
    """Every kind of game, interleaved over boards and tournaments; finish times out of the
    order of recording."""
    return [
        dflt(a.d01, 1, dealer=1, winner=0),
        classic(a.c3, 1, GE.LAST_HOLDER, dealer=0, loser=2, finished=T0 + 9000),
        dflt(a.d01, 2, winner=None, swap=True),
        classic(a.c4, 1, GE.LAST_HOLDER, dealer=2, loser=3),
        forfeit_game(World(a.d01.seats[0], a.d01.seats[1], a.one, a.d01.series_id), 3, 0),
        classic(a.c3, 2, GE.TURN_LIMIT, dealer=1, out=(0,)),
        classic(a.c2v, 1, GE.VOID),
        classic(a.c3b, 1, GE.LAST_HOLDER, dealer=2, loser=0, finished=T0 + 50),
        classic(a.c3, 3, GE.ALL_OUT, dealer=2),
        classic(a.c3, 4, GE.VOID, dealer=0),
        classic(a.c3, 4, GE.TIMEOUT, dealer=0, loser=0, attempt=2),
        classic(a.c4, 2, GE.TURN_LIMIT, dealer=3, out=(1, 2)),
        classic(a.c2, 1, GE.LAST_HOLDER, dealer=1, loser=0),
        classic(a.c3, 5, GE.TIMEOUT, dealer=2, loser=1),
        classic(a.c4, 3, GE.ILLEGAL_ACTION, dealer=1, loser=2),
        dflt(a.d01, 4, dealer=1, swap=True, winner=1),
        classic(a.c2, 2, GE.TURN_LIMIT, dealer=0, out=(1,)),
        classic(a.c4, 4, GE.STARTUP_FAILURE, dealer=0, loser=1, not_started=(1, 3)),
        classic(a.c3, 6, GE.TIMEOUT, dealer=1, loser=1),
        classic(a.c3b, 2, GE.TURN_LIMIT, dealer=0, out=(2,)),
        classic(a.c3b, 3, GE.CRASH, dealer=1, loser=0),
        classic(a.c4, 5, GE.ALL_OUT, dealer=1),
    ]


# ----------------------------------------------------------------- the rules, by hand


@dataclass(frozen=True)
class Scored:
    """A recorded table game as the test knows it."""

    series_id: int
    tournament_id: int
    seats: tuple[int, ...]
    dealer: int
    pairwise: tuple[tuple[int, int], ...]
    forfeit: tuple[int, str] | None
    voided: bool
    finished: float

    def pairs(self) -> list[tuple[int, int, float]]:
        """(first submission, second, first's score) by rules-classic.md."""
        n = len(self.seats)
        beaten = set(self.pairwise)
        winners = {w for w, _ in self.pairwise}
        out = []
        for a in range(n):
            for b in range(n):
                order_a, order_b = (a - self.dealer - 1) % n, (b - self.dealer - 1) % n
                if order_a >= order_b:
                    continue  # each pair once, the seat playing earlier first
                if (a, b) in beaten:
                    score = 1.0
                elif (b, a) in beaten:
                    score = 0.0
                elif a in winners and b in winners:
                    continue
                else:
                    score = 0.5
                out.append((self.seats[a], self.seats[b], score))
        return out


def ledger(arena: Arena, items: Sequence[Item]) -> list[Scored]:
    """The classic games of ``items`` (in recording order)."""
    tournament = {
        t.series_id: t.tournament_id
        for t in (arena.c2, arena.c3, arena.c4, arena.c3b, arena.c2v, arena.idle)
    }
    return [
        Scored(
            where.series_id,
            tournament[where.series_id],
            tuple(where.seats),
            record.dealer,
            tuple(record.pairwise),
            None if record.forfeit is None else (record.forfeit.seat, record.forfeit.reason.value),
            record.voided,
            record.finished,
        )
        for record, where in items
        if record.ruleset == "classic"
    ]


def expected_counts(games: Sequence[Scored]) -> list[PairCounts]:
    counts: dict[tuple[int, int], list[int]] = {}
    for g in games:
        for first, second, score in g.pairs():
            counts.setdefault((first, second), [0, 0, 0])[(1.0, 0.5, 0.0).index(score)] += 1
    return [PairCounts(f, s, *counts[f, s]) for f, s in sorted(counts)]


def expected_forfeits(games: Sequence[Scored]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for g in games:
        if g.forfeit is not None:
            mine = out.setdefault(g.seats[g.forfeit[0]], {})
            mine[g.forfeit[1]] = mine.get(g.forfeit[1], 0) + 1
    return out


def counted(
    games: Sequence[Scored], players: int, tournament_id: int | None = None
) -> list[Scored]:
    return [
        g
        for g in games
        if not g.voided and len(g.seats) == players and tournament_id in (None, g.tournament_id)
    ]


# ------------------------------------------------------------------------ the databases


@dataclass(frozen=True)
class Recorded:
    """The same games recorded in bulk in one database and one by one in another."""

    bulk: Database
    single: Database
    arena: Arena
    items: list[Item]
    bulk_ids: list[int]
    single_ids: list[int]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    folder = tmp_path_factory.mktemp("bulk-vs-single")
    bulk = open_database(f"sqlite:///{folder / 'bulk.db'}")
    single = open_database(f"sqlite:///{folder / 'single.db'}")
    try:
        arena = build_arena(bulk)
        assert build_arena(single) == arena
        items = games_of(arena)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bulk_module, "CHUNK", 3)  # several INSERTs and series reads
            with bulk.session() as s:
                bulk_ids = record_games(items, session=s)
        single_ids = []
        with single.session() as s:
            for record, where in items:
                found = record_game(record, where, session=s)
                assert found.created and found.game.id is not None
                single_ids.append(found.game.id)
        yield Recorded(bulk, single, arena, items, bulk_ids, single_ids)
    finally:
        bulk.close()
        single.close()


def _rows(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the recording writes, in key order (times of writing left out)."""
    games = Game.__table__  # type: ignore[attr-defined]
    series = Series.__table__  # type: ignore[attr-defined]
    out: dict[str, list[tuple[Any, ...]]] = {}
    with db.engine.connect() as c:
        cols = [x for x in games.c if x.name != "recorded_at"]
        out["games"] = [tuple(r) for r in c.execute(sa.select(*cols).order_by(games.c.id))]
        out["series"] = [
            (r.id, r.status, r.started_at is not None)
            for r in c.execute(sa.select(series).order_by(series.c.id))
        ]
        for table in (SCOPES, RATINGS, PAIRS, FORFEITS):
            out[table.name] = [tuple(r) for r in c.execute(sa.select(table).order_by(*table.c))]
    return out


BOARDS = [("default", 2), ("classic", 2), ("classic", 3), ("classic", 4)]


def _standings(db: Database, arena: Arena) -> list[Any]:
    found = []
    with db.read_session() as s:
        for tournament_id in (None, arena.one, arena.two):
            for ruleset, players in BOARDS:
                board = standings(
                    session=s, tournament_id=tournament_id, ruleset=ruleset, table_size=players
                )
                found.append(
                    (
                        tournament_id,
                        ruleset,
                        players,
                        board.games,
                        [
                            (r.submission_id, r.wins, r.draws, r.losses, r.forfeits, r.elo)
                            for r in board.rows
                        ],
                    )
                )
    return found


# ------------------------------------------------------------------ bulk == one by one


def test_bulk_stores_exactly_what_recording_one_by_one_stores(recorded: Recorded) -> None:
    assert recorded.bulk_ids == recorded.single_ids
    assert recorded.bulk_ids == sorted(recorded.bulk_ids)  # ids in the order given
    bulk, single = _rows(recorded.bulk), _rows(recorded.single)
    assert len(bulk["games"]) == len(recorded.items)
    for table in single:
        assert bulk[table] == single[table], table
    # Every series that got a game started; the one without games is still pending.
    status = {sid: (st, started) for sid, st, started in bulk["series"]}
    assert status[recorded.arena.idle.series_id] == ("pending", False)
    assert status[recorded.arena.c2v.series_id] == ("running", True)  # a voided game too
    # A board whose only game is voided has no row anywhere.
    c2v_board = (recorded.arena.two, "classic", 2)
    assert all(tuple(r[:3]) != c2v_board for r in bulk["elo_scopes"])


def test_bulk_gives_the_same_standings_as_one_by_one(recorded: Recorded) -> None:
    bulk = _standings(recorded.bulk, recorded.arena)
    assert bulk == _standings(recorded.single, recorded.arena)
    assert sum(games for *_, games, _ in bulk) > 0


# ------------------------------------------------------------- the standings of tables


@pytest.mark.parametrize("players", [2, 3, 4])
def test_table_games_and_their_counts_follow_the_rules(recorded: Recorded, players: int) -> None:
    arena = recorded.arena
    known = ledger(arena, recorded.items)
    with recorded.bulk.read_session() as s:
        for tournament_id in (None, arena.one, arena.two):
            want = counted(known, players, tournament_id)
            got = table_games(
                session=s, ruleset="classic", players=players, tournament_id=tournament_id
            )
            # Counted games only, of this table size and tournament, in the order recorded.
            assert [(g.series_id, g.seats, g.dealer) for g in got] == [
                (g.series_id, g.seats, g.dealer) for g in want
            ], tournament_id
            assert [g.game_id for g in got] == sorted(g.game_id for g in got)
            assert table_pair_counts(got) == expected_counts(want), tournament_id
            assert table_forfeit_counts(got) == expected_forfeits(want), tournament_id
            assert [g.forfeit_seat for g in got] == [
                None if g.forfeit is None else g.forfeit[0] for g in want
            ]


def test_table_standings_count_each_pair_by_the_rules(recorded: Recorded) -> None:
    """The classic standings of three seats: W/D/L and forfeits of each submission by hand."""
    arena = recorded.arena
    known = ledger(arena, recorded.items)
    for tournament_id in (None, arena.one, arena.two):
        want = counted(known, 3, tournament_id)
        wdl: dict[int, list[int]] = {}
        for g in want:
            for first, second, score in g.pairs():
                wdl.setdefault(first, [0, 0, 0])[(1.0, 0.5, 0.0).index(score)] += 1
                wdl.setdefault(second, [0, 0, 0])[(0.0, 0.5, 1.0).index(score)] += 1
        forfeits = expected_forfeits(want)
        with recorded.bulk.read_session() as s:
            board = standings(
                session=s, tournament_id=tournament_id, ruleset="classic", table_size=3
            )
        assert board.games == len(want)
        assert {r.submission_id: [r.wins, r.draws, r.losses] for r in board.rows} == wdl
        assert {r.submission_id: r.forfeits for r in board.rows if r.forfeits} == forfeits


def test_a_forfeit_at_seat_zero_is_the_offenders_and_counted_each_time(
    recorded: Recorded,
) -> None:
    a = recorded.arena
    s0, s1, s2, s3 = a.subs[:4]
    with recorded.bulk.read_session() as s:
        three = table_games(session=s, ruleset="classic", players=3, tournament_id=a.one)
        four = table_games(session=s, ruleset="classic", players=4)
        two = table_games(session=s, ruleset="classic", players=2, tournament_id=a.two)
    # Table of three, tournament one: seat 0 (s0) timed out once, seat 1 (s1) twice.
    assert table_forfeit_counts(three) == {s0: {"timeout": 1}, s1: {"timeout": 2}}
    # Table of four: seat 2 (s2) illegal action; s1 and s3 could not start, s1 (first in
    # the order of play after dealer 0) holds the forfeit.
    assert table_forfeit_counts(four) == {s2: {"illegal action": 1}, s1: {"startup failure": 1}}
    not_started = [g for g in four if g.end_reason == "startup failure"]
    assert len(not_started) == 1
    assert sorted(not_started[0].pair_scores()) == sorted(
        # s0 and s2 beat both; s0-s2 winners: no result; s1-s3 both offenders: a draw.
        [(s1, s0, 0.0), (s1, s2, 0.0), (s1, s3, 0.5), (s3, s0, 0.0), (s2, s3, 1.0)]
    )
    assert two == []  # the table of two of tournament two has only a voided game


def test_table_games_of_some_series_only(recorded: Recorded) -> None:
    a = recorded.arena
    known = ledger(a, recorded.items)
    with recorded.bulk.read_session() as s:
        mine = sa.select(col(Series.id)).where(col(Series.id).in_([a.c3b.series_id]))
        for tournament_id in (None, a.two):
            got = table_games(
                session=s,
                ruleset="classic",
                players=3,
                tournament_id=tournament_id,
                series_ids=mine,
            )
            assert {g.series_id for g in got} == {a.c3b.series_id}
            want = [g for g in counted(known, 3) if g.series_id == a.c3b.series_id]
            assert table_pair_counts(got) == expected_counts(want)
        # The series of another tournament: none of them.
        assert (
            table_games(
                session=s, ruleset="classic", players=3, tournament_id=a.one, series_ids=mine
            )
            == []
        )


def test_classic_tables_of_two_leave_out_default_games(recorded: Recorded) -> None:
    a = recorded.arena
    with recorded.bulk.read_session() as s:
        got = table_games(session=s, ruleset="classic", players=2)
    assert {g.series_id for g in got} == {a.c2.series_id}
    s3, s4 = a.subs[3], a.subs[4]
    # Game 1: dealer seat 1, seat 0 (s3) loses: s3 plays first. Game 2: dealer seat 0, seat 1
    # (s4) went out at the turn limit: s4 plays first and wins.
    assert table_pair_counts(got) == [PairCounts(s3, s4, 0, 0, 1), PairCounts(s4, s3, 1, 0, 0)]


# ------------------------------------------------------------ table games, no database

_AT = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)


def _tg(gid: int, dealer: int, seats: tuple[int, ...], pairwise: Any, minutes: int) -> TableGame:
    return TableGame(
        gid,
        7,
        gid,
        dealer,
        seats,
        tuple(pairwise),
        None,
        "out",
        _AT + dt.timedelta(minutes=minutes),
    )


def test_table_outcomes_give_each_pair_from_the_earlier_seat_in_the_games_order() -> None:
    # Game 1 finished after game 2: outcomes follow the games' order (ids, as live Elo).
    one = _tg(1, 2, (10, 11, 12), [(0, 2), (1, 2)], minutes=5)
    two = _tg(2, 0, (10, 11, 12), [(1, 0), (2, 0)], minutes=1)
    got = [
        (o.game_id, o.number, o.first_submission_id, o.second_submission_id, o.first_score)
        for o in table_outcomes([one, two])
    ]
    # Dealer seat 2: order of play 0, 1, 2. Dealer seat 0: order 1, 2, 0.
    assert got == [
        (1, 1, 10, 12, 1.0),
        (1, 1, 11, 12, 1.0),
        (2, 2, 11, 10, 1.0),
        (2, 2, 12, 10, 1.0),
    ]
    assert [o.finished_at for o in table_outcomes([one, two])] == [one.finished_at] * 2 + [
        two.finished_at
    ] * 2
    assert all(o.series_id == 7 for o in table_outcomes([one]))


def test_the_order_of_play_starts_at_the_dealers_left() -> None:
    game = _tg(1, 2, (10, 11, 12, 13), [], minutes=0)
    assert [game.order(seat) for seat in range(4)] == [1, 2, 3, 0]
    assert _tg(1, 3, (10, 11, 12, 13), [], 0).order(0) == 0


def test_pair_counts_are_sorted_by_first_then_second() -> None:
    games = [
        _tg(1, 1, (30, 20, 10), [(0, 1), (2, 1)], 0),  # order 2, 0, 1: 10 before 30 before 20
        _tg(2, 0, (30, 20, 10), [], 0),  # order 1, 2, 0: 20, 10, 30: every pair draws
    ]
    # Game 1: 30 beat 20, 10 beat 20, no result between the winners 10 and 30. Game 2: every
    # pair draws, found in the order (20, 30), (10, 30), (20, 10): not sorted.
    assert table_pair_counts(games) == [
        PairCounts(10, 20, 1, 0, 0),
        PairCounts(10, 30, 0, 1, 0),
        PairCounts(20, 10, 0, 1, 0),
        PairCounts(20, 30, 0, 1, 0),
        PairCounts(30, 20, 1, 0, 0),
    ]


# ------------------------------------------------------------------- bulk failures


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Arena]:
    """A migrated SQLite file holding the arena and no game, copied by each test."""
    path = tmp_path_factory.mktemp("template") / "arena.db"
    db = open_database(f"sqlite:///{path}")
    try:
        return path, build_arena(db)
    finally:
        db.close()


@pytest.fixture
def fresh(template: tuple[Path, Arena], tmp_path: Path) -> Iterator[tuple[Database, Arena]]:
    """The arena without games, in a database of this test's own."""
    shutil.copyfile(template[0], tmp_path / "fresh.db")
    db = open_database(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        yield db, template[1]
    finally:
        db.close()


def _count(db: Database, table: Any) -> int:
    with db.engine.connect() as c:
        return int(c.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _places(db: Database) -> list[tuple[int, int, int]]:
    table = Game.__table__  # type: ignore[attr-defined]
    with db.engine.connect() as c:
        query = sa.select(table.c.series_id, table.c.number, table.c.attempt)
        return [(int(a), int(b), int(n)) for a, b, n in c.execute(query.order_by(table.c.id))]


def _collide(db: Database, a: Arena, monkeypatch: pytest.MonkeyPatch) -> list[Item]:
    """Store game 1 of the default series; return a bulk of three games of the table of
    four (chunk 1, two rows a chunk) and that stored game (chunk 2)."""
    stored = dflt(a.d01, 1)
    with db.session() as s:
        record_game(*stored, session=s)
    monkeypatch.setattr(bulk_module, "CHUNK", 2)
    return [
        classic(a.c4, 1, GE.LAST_HOLDER, loser=0),
        classic(a.c4, 2, GE.LAST_HOLDER, loser=1),
        classic(a.c4, 3, GE.ALL_OUT),
        stored,
    ]


def test_a_collision_in_a_later_chunk_stores_nothing_of_the_bulk(
    fresh: tuple[Database, Arena], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, a = fresh
    items = _collide(db, a, monkeypatch)
    before = _rows(db)
    with pytest.raises(ConflictError, match="collides"), db.session() as s:
        record_games(items, session=s)
    after = _rows(db)
    for table in ("games", "series", RATINGS.name, PAIRS.name, FORFEITS.name):
        assert after[table] == before[table], table  # the table of four is still pending
    with db.read_session() as s:
        assert elo_board(session=s, tournament_id=None, ruleset="classic", players=4).games == 0


def test_after_a_collision_the_callers_transaction_goes_on_without_the_bulk(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On both backends: the savepoint around the INSERTs is what makes ConflictError
    leave the caller's transaction usable and free of the bulk (as record_game's does)."""
    a = build_arena(db)
    items = _collide(db, a, monkeypatch)
    with db.session() as s:
        with pytest.raises(ConflictError, match="collides"):
            record_games(items, session=s)
        # The caller goes on in its transaction: one game by one, then commits.
        record_game(*classic(a.c3, 1, GE.ALL_OUT), session=s)
    assert _places(db) == [(a.d01.series_id, 1, 1), (a.c3.series_id, 1, 1)]
    with db.read_session() as s:
        assert elo_board(session=s, tournament_id=None, ruleset="classic", players=4).games == 0


@pytest.mark.parametrize(
    "items",
    [
        pytest.param(
            lambda a: [dflt(a.d01, 1), classic(a.c3, 1, GE.ALL_OUT), dflt(a.d01, 1)],
            id="a place twice",
        ),
        pytest.param(
            lambda a: [dflt(a.d01, 2), dflt(a.d01, 2, attempt=2, winner=1)],
            id="two counted attempts",
        ),
    ],
)
def test_a_bulk_that_repeats_itself_is_a_conflict_and_stores_nothing(
    fresh: tuple[Database, Arena], items: Any
) -> None:
    db, a = fresh
    with pytest.raises(ConflictError), db.session() as s:
        record_games(items(a), session=s)
    assert _count(db, Game.__table__) == 0  # type: ignore[attr-defined]
    assert _count(db, RATINGS) == 0


def test_a_table_seated_otherwise_or_a_stranger_is_refused(fresh: tuple[Database, Arena]) -> None:
    db, a = fresh
    record, where = classic(a.c3, 1, GE.LAST_HOLDER, loser=2)
    s0, s1, s2 = a.c3.seats
    rotated = GamePlace(where.series_id, 1, 1, (s1, s2, s0))  # the same three, another order
    stranger = dflt(a.d01, 1)[0], GamePlace(a.d01.series_id, 1, 1, (a.subs[0], a.subs[5]))
    for bad in [(record, rotated), stranger]:
        with pytest.raises(InvalidRecordError, match="do not match series"), db.session() as s:
            record_games([dflt(a.d01, 2), bad], session=s)
        # record_game refuses the same
        with pytest.raises(InvalidRecordError), db.session() as s:
            record_game(*bad, session=s)
    assert _count(db, Game.__table__) == 0  # type: ignore[attr-defined]
    # Two seats either way round are fine, as for record_game.
    with db.session() as s:
        record_games([dflt(a.d01, 3, swap=True)], session=s)
    assert _count(db, Game.__table__) == 1  # type: ignore[attr-defined]


def test_an_unknown_series_is_not_found(fresh: tuple[Database, Arena]) -> None:
    db, a = fresh
    record, where = dflt(a.d01, 1)
    lost = GamePlace(9999, 1, 1, where.seats)
    with pytest.raises(NotFoundError, match="9999"), db.session() as s:
        record_games([(record, where), (record, lost)], session=s)
    assert _count(db, Game.__table__) == 0  # type: ignore[attr-defined]


def test_bulk_starts_pending_series_keeps_a_running_ones_start_and_the_session_sees_it(
    fresh: tuple[Database, Arena],
) -> None:
    db, a = fresh
    with db.session() as s:
        record_game(*dflt(a.d01, 1), session=s)
    with db.read_session() as s:
        started = get_series(a.d01.series_id, session=s).started_at
    assert started is not None
    with db.session() as s:
        assert get_series(a.c3.series_id, session=s).status == "pending"
        record_games([dflt(a.d01, 2), classic(a.c3, 1, GE.ALL_OUT)], session=s)
        # The caller's session reads the update, not the rows it had loaded before.
        assert get_series(a.c3.series_id, session=s).status == "running"
        assert get_series(a.c3.series_id, session=s).started_at is not None
    with db.read_session() as s:
        running = get_series(a.d01.series_id, session=s)
        assert (running.status, running.started_at) == ("running", started)
        assert get_series(a.c3.series_id, session=s).status == "running"
        assert get_series(a.c4.series_id, session=s).status == "pending"


# --------------------------------------------------------------------- stored ratings


def _line(sub: int, rank: int, rating: float) -> RatingLine:
    return RatingLine(
        sub,
        rank,
        rating,
        4,
        3,
        0,
        1,
        0.75,
        error=10.0,
        ci_low=rating - 10.0,
        ci_high=rating + 10.0,
        extra={"los_next": 0.5 + rank / 10},
    )


def _save(s: Session, model: str, lines: list[RatingLine], tournament_id: int | None = None) -> int:
    stored = save_rating_snapshot(
        NewRatingSnapshot(model, lines, {}, tournament_id=tournament_id), session=s
    )
    assert stored.snapshot.id is not None
    return stored.snapshot.id


def test_the_latest_snapshot_is_of_its_model_and_scope_only(fresh: tuple[Database, Arena]) -> None:
    db, a = fresh
    s0 = a.subs[0]
    with db.session() as s:
        glob = _save(s, "bayeselo", [_line(s0, 1, 1.0)])
        one = _save(s, "bayeselo", [_line(s0, 1, 2.0)], a.one)
        two = _save(s, "bayeselo", [_line(s0, 1, 3.0)], a.two)
        _save(s, "elo", [_line(s0, 1, 4.0)])  # newest of all, another model
        _save(s, "elo", [_line(s0, 1, 5.0)], a.one)
    with db.read_session() as s:
        for tournament_id, want in ((None, glob), (a.one, one), (a.two, two)):
            latest = latest_rating_snapshot(
                session=s, model="bayeselo", tournament_id=tournament_id
            )
            assert latest is not None and latest.snapshot.id == want, tournament_id
        # A submission's history, per scope and model, oldest first.
        assert [e.rating for _, e in rating_history(s0, session=s, model="bayeselo")] == [1.0]
        assert [
            e.rating
            for _, e in rating_history(s0, session=s, model="bayeselo", tournament_id=a.one)
        ] == [2.0]
        assert [
            e.rating for _, e in rating_history(s0, session=s, model="elo", tournament_id=a.two)
        ] == []


def test_the_newest_snapshot_wins_by_time_then_by_id(fresh: tuple[Database, Arena]) -> None:
    db, a = fresh
    s0, s1 = a.subs[:2]
    with db.session() as s:
        ids = [_save(s, "bayeselo", [_line(s0, 1, float(k)), _line(s1, 2, -1.0)]) for k in range(3)]
    table = RatingSnapshot.__table__  # type: ignore[attr-defined]
    same = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    with db.engine.begin() as c:
        # Snapshots 0 and 1 on the same clock tick, snapshot 2 older (a clock set back).
        c.execute(table.update().where(table.c.id.in_(ids[:2])).values(created_at=same))
        c.execute(
            table.update()
            .where(table.c.id == ids[2])
            .values(created_at=same - dt.timedelta(hours=1))
        )
    with db.read_session() as s:
        latest = latest_rating_snapshot(session=s, model="bayeselo")
        assert latest is not None and latest.snapshot.id == ids[1]
        history = rating_history(s0, session=s, model="bayeselo")
        assert [e.rating for _, e in history] == [2.0, 0.0, 1.0]


def test_saved_and_loaded_lines_come_best_rank_first(fresh: tuple[Database, Arena]) -> None:
    db, a = fresh
    s0, s1, s2, s3 = a.subs[:4]
    # Two lines tie on rank 2: the lower submission id first, as the leaderboard orders ties.
    lines = [_line(s0, 3, -5.0), _line(s3, 2, 0.0), _line(s2, 1, 9.0), _line(s1, 2, 0.0)]
    with db.session() as s:
        saved = save_rating_snapshot(NewRatingSnapshot("bayeselo", lines), session=s)
        order = [(e.rank, e.submission_id) for e in saved.entries]
        assert saved.snapshot.id is not None
        snapshot_id = saved.snapshot.id
    assert order == [(1, s2), (2, s1), (2, s3), (3, s0)]
    with db.read_session() as s:
        loaded = load_rating_snapshot(snapshot_id, session=s)
        assert [(e.rank, e.submission_id) for e in loaded.entries] == order
        entry = loaded.entries[0]
        assert (entry.error, entry.ci_low, entry.ci_high, entry.extra) == (
            10.0,
            -1.0,
            19.0,
            {"los_next": 0.6},
        )
        assert (entry.games, entry.wins, entry.draws, entry.losses) == (4, 3, 0, 1)


def test_a_snapshot_of_an_unknown_tournament_is_refused_whole(
    fresh: tuple[Database, Arena],
) -> None:
    db, a = fresh
    with pytest.raises(NotFoundError, match="tournament"), db.session() as s:
        _save(s, "bayeselo", [_line(a.subs[0], 1, 0.0)], tournament_id=4242)
    assert _count(db, RatingSnapshot.__table__) == 0  # type: ignore[attr-defined]
    assert _count(db, RatingEntry.__table__) == 0  # type: ignore[attr-defined]
    with db.read_session() as s:
        assert list(s.exec(select(RatingSnapshot))) == []
