"""Mutation review of live Elo kept in the database (arena/db/elo.py) and of how record_game,
void_game and record_games keep it.

The oracle is independent of the stored state: a ledger of what each test itself recorded
(who sat where, who dealt, who won or lost which pair, who forfeited and why, which games
were voided) is replayed from scratch, by game id, with the public Elo arithmetic of
arena/elo.py, and the per-pair W/D/L and forfeits are counted from it by the rules
(docs/ratings.md, rules-classic.md: the first mover of the default game is the seat that does
not deal; at a table each pair with a result counts once, the seat playing earlier first,
winners having no result between themselves). Every board (all tournaments and each
tournament; default, and classic tables of two, three and four seats) must then equal the
replay: ``elo_board``, ``replayed_elo``, ``board_tallies`` and the raw rows of
``elo_scopes`` (games, last game id), after single records, bulk records, voids, records
after voids, and rebuilds of every board or of one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
import sqlalchemy as sa

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    record_game,
    record_games,
    series_of_tournament,
    submit,
    void_game,
)
from arena.db.elo import (
    ALL_TOURNAMENTS,
    FORFEITS,
    PAIRS,
    RATINGS,
    SCOPES,
    EloBoard,
    EloEntry,
    Scope,
    board_tallies,
    elo_board,
    rebuild_elo,
    record_elo,
    replayed_elo,
    scored_game,
    scored_pairs,
)
from arena.db.records import PairCounts
from arena.elo import INITIAL_RATING, NEW_BOT_GAMES, expected_score, k_factor
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.db.helpers import World, deck, game, new_submission

T0 = 1_780_000_000.0
Key = tuple[int, str, int]
"""A board: (tournament id, 0 for all tournaments; ruleset; table size)."""

# ------------------------------------------------------------------------------ the ledger


@dataclass(frozen=True)
class Played:
    """What a test recorded, as the test itself knows it (never read back from the rows)."""

    game_id: int
    tournament_id: int
    ruleset: str
    seats: tuple[int, ...]
    dealer: int
    winner: int | None
    pairwise: tuple[tuple[int, int], ...]
    forfeit: tuple[int, str] | None
    voided: bool

    def boards(self) -> tuple[Key, Key]:
        return (
            (ALL_TOURNAMENTS, self.ruleset, len(self.seats)),
            (self.tournament_id, self.ruleset, len(self.seats)),
        )

    def pairs(self) -> list[tuple[int, int, float]]:
        """(first, second, first's score) in the order the board applies them."""
        if self.ruleset == "default":
            first = 1 - self.dealer  # the seat that does not deal moves first
            score = 0.5 if self.winner is None else float(self.winner == first)
            return [(self.seats[first], self.seats[1 - first], score)]
        n = len(self.seats)
        beat = set(self.pairwise)
        winners = {w for w, _ in self.pairwise}

        def position(seat: int) -> int:  # order of play, from the dealer's left
            return (seat - self.dealer - 1) % n

        out = []
        for a in range(n):
            for b in range(a + 1, n):
                if (a, b) in beat:
                    score = 1.0
                elif (b, a) in beat:
                    score = 0.0
                elif a in winners and b in winners:
                    continue  # two winners: no result between them
                else:
                    score = 0.5
                if position(a) < position(b):
                    out.append((self.seats[a], self.seats[b], score))
                else:
                    out.append((self.seats[b], self.seats[a], 1.0 - score))
        return out


def _played(record: GameRecord, where: GamePlace, tournament_id: int, game_id: int) -> Played:
    forfeit = record.forfeit
    return Played(
        game_id,
        tournament_id,
        record.ruleset,
        tuple(where.seats),
        record.dealer,
        record.winner,
        tuple(record.pairwise),
        None if forfeit is None else (forfeit.seat, forfeit.reason.value),
        record.voided,
    )


def _replay(games: Iterable[Played]) -> dict[int, tuple[float, int]]:
    """From scratch, by id: R += K (S - E), each side its own K (32, then 16 after 30)."""
    state: dict[int, tuple[float, int]] = {}
    for played in sorted(games, key=lambda g: g.game_id):
        for a, b, score in played.pairs():
            ra, na = state.get(a, (INITIAL_RATING, 0))
            rb, nb = state.get(b, (INITIAL_RATING, 0))
            ea, eb = expected_score(ra, rb), expected_score(rb, ra)
            state[a] = (ra + k_factor(na) * (score - ea), na + 1)
            state[b] = (rb + k_factor(nb) * ((1.0 - score) - eb), nb + 1)
    return state


def _pair_counts(games: Iterable[Played]) -> list[PairCounts]:
    counts: dict[tuple[int, int], list[int]] = {}
    for played in games:
        for a, b, score in played.pairs():
            counts.setdefault((a, b), [0, 0, 0])[{1.0: 0, 0.5: 1, 0.0: 2}[score]] += 1
    return [PairCounts(a, b, *counts[a, b]) for a, b in sorted(counts)]


def _forfeit_counts(games: Iterable[Played]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for played in games:
        if played.forfeit is not None:
            seat, reason = played.forfeit
            mine = out.setdefault(played.seats[seat], {})
            mine[reason] = mine.get(reason, 0) + 1
    return out


@dataclass(frozen=True)
class Table:
    """A series of the arena: where its games go."""

    series_id: int
    tournament_id: int
    ruleset: str
    seats: tuple[int, ...]


class Ledger:
    """Records games through the product and remembers them independently."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.games: list[Played] = []
        self.tournaments: set[int] = set()

    def record(
        self, items: Sequence[tuple[GameRecord, GamePlace, Table]], voided_after: str | None = None
    ) -> list[int]:
        ids = []
        with self.db.session() as s:
            for record, where, table in items:
                found = record_game(record, where, session=s, voided_after=voided_after)
                assert found.created and found.game.id is not None
                ids.append(found.game.id)
                entry = _played(record, where, table.tournament_id, found.game.id)
                self.games.append(replace(entry, voided=entry.voided or bool(voided_after)))
        return ids

    def bulk(self, items: Sequence[tuple[GameRecord, GamePlace, Table]]) -> list[int]:
        with self.db.session() as s:
            ids = record_games([(r, w) for r, w, _ in items], session=s)
        for (record, where, table), game_id in zip(items, ids, strict=True):
            self.games.append(_played(record, where, table.tournament_id, game_id))
        return ids

    def void(self, game_id: int) -> None:
        with self.db.session() as s:
            void_game(game_id, "found broken", session=s)
        self.games = [replace(g, voided=g.voided or g.game_id == game_id) for g in self.games]

    def counted(self, key: Key) -> list[Played]:
        return [g for g in self.games if not g.voided and key in g.boards()]

    def boards(self) -> set[Key]:
        return {key for g in self.games for key in g.boards()}


def check(ledger: Ledger) -> None:
    """Every board the ledger's games touch equals the replay of its counted games; no row
    of any table belongs to a board without counted games."""
    with ledger.db.read_session() as s:
        connection = s.connection()
        scope_rows = {
            (int(r.tournament_id), str(r.ruleset), int(r.players)): (
                int(r.games),
                r.last_game_id,
            )
            for r in connection.execute(sa.select(SCOPES))
        }
        for key in sorted(ledger.boards()):
            tid, ruleset, players = key
            counted = ledger.counted(key)
            replay = _replay(counted)
            at = tid or None
            board = elo_board(session=s, tournament_id=at, ruleset=ruleset, players=players)
            assert board.games == len(counted), key
            assert {sid: e.games for sid, e in board.entries.items()} == {
                sid: n for sid, (_, n) in replay.items()
            }, key
            for sid, (rating, _) in replay.items():
                assert board.entries[sid].rating == pytest.approx(rating, abs=1e-9), (key, sid)
            # The slow path applies the same arithmetic in the same order: the same floats.
            assert (
                replayed_elo(session=s, tournament_id=at, ruleset=ruleset, players=players) == board
            ), key
            tallies = board_tallies(session=s, tournament_id=at, ruleset=ruleset, players=players)
            assert tallies is not None, key
            assert tallies.games == len(counted), key
            assert tallies.pairs == _pair_counts(counted), key
            assert tallies.forfeits == _forfeit_counts(counted), key
            if counted:
                last = max(g.game_id for g in counted)
                assert scope_rows[key] == (len(counted), last), key
            else:
                assert scope_rows.get(key, (0, None)) == (0, None), key
        # No board the ledger does not know, and no live rows on a board without games.
        live = {k for k in ledger.boards() if ledger.counted(k)}
        assert {k for k, (n, _) in scope_rows.items() if n} == live
        for table, rows in (
            (RATINGS, sa.select(RATINGS.c.tournament_id, RATINGS.c.ruleset, RATINGS.c.players)),
            (PAIRS, sa.select(PAIRS.c.tournament_id, PAIRS.c.ruleset, PAIRS.c.players)),
            (FORFEITS, sa.select(FORFEITS.c.tournament_id, FORFEITS.c.ruleset, FORFEITS.c.players)),
        ):
            found = {(int(t), str(r), int(p)) for t, r, p in connection.execute(rows)}
            assert found <= live, table.name


# ------------------------------------------------------------------------------ the arena


@dataclass(frozen=True)
class Arena:
    """Five submissions; tournament one with default series (s0-s1, s0-s2) and classic
    tables of two (s3, s4), three (s0, s1, s2) and four (s0..s3) seats; tournament two with
    a default series (s1-s0) and a table of three (s1, s3, s4): boards that share bots."""

    subs: tuple[int, ...]
    one: int
    two: int
    d01: Table
    d02: Table
    c2: Table
    c3: Table
    c4: Table
    d10: Table
    c3b: Table


def build_arena(db: Database) -> Arena:
    with db.session() as s:
        subs = []
        for name in ("s0", "s1", "s2", "s3", "s4"):
            sub = submit(new_submission(name), session=s).submission
            assert sub.id is not None
            subs.append(sub.id)
        s0, s1, s2, s3, s4 = subs

        def spec(seats: tuple[int, ...], ruleset: str = "default") -> SeriesSpec:
            table = seats if ruleset != "default" else ()
            return SeriesSpec(seats[0], seats[1], 60, len(seats), ruleset=ruleset, seats=table)

        layout = {
            "one": [
                spec((s0, s1)),
                spec((s0, s2)),
                spec((s3, s4), "classic"),
                spec((s0, s1, s2), "classic"),
                spec((s0, s1, s2, s3), "classic"),
            ],
            "two": [spec((s1, s0)), spec((s1, s3, s4), "classic")],
        }
        tables: list[Table] = []
        tids = []
        for name, specs in layout.items():
            t = create_tournament(TournamentSpec(name, 5, series=specs), session=s)
            assert t.id is not None
            tids.append(t.id)
            for row, sp in zip(series_of_tournament(t.id, session=s), specs, strict=True):
                assert row.id is not None
                seats = sp.seats or (sp.submission_a_id, sp.submission_b_id)
                tables.append(Table(row.id, t.id, sp.ruleset, seats))
    return Arena(tuple(subs), tids[0], tids[1], *tables)


def dflt(
    table: Table,
    number: int,
    *,
    dealer: int = 0,
    winner: int | None = 0,
    swap: bool = False,
    forfeit: tuple[int, GameEndReason] | None = None,
    void: bool = False,
    attempt: int = 1,
) -> tuple[GameRecord, GamePlace, Table]:
    """A default game of ``table``; ``swap`` seats its b first."""
    world = World(table.seats[0], table.seats[1], table.tournament_id, table.series_id)
    kw: dict[str, Any] = {}
    if forfeit is not None:
        seat, reason = forfeit
        kw = {"winner": 1 - seat, "ending": reason, "forfeit": Forfeit(seat, reason, "", "x")}
    elif void:
        kw = {"winner": None, "ending": GameEndReason.VOID, "void_reason": "infra"}
    else:
        kw = {"winner": winner}
    record, where = game(world, number, attempt=attempt, dealer=dealer, swap=swap, **kw)
    return record, where, table


def classic(
    table: Table,
    number: int,
    ending: GameEndReason,
    *,
    dealer: int = 0,
    loser: int | None = None,
    out: Sequence[int] = (),
    attempt: int = 1,
) -> tuple[GameRecord, GamePlace, Table]:
    """A classic game of ``table``: ``loser`` lost to everyone (the last holder or a
    forfeit's offender), or at the turn limit the seats in ``out`` beat the others."""
    n = len(table.seats)
    forfeit = None
    pairwise: tuple[tuple[int, int], ...] = ()
    winner = None
    if loser is not None:
        pairwise = tuple((s, loser) for s in range(n) if s != loser)
        winner = 1 - loser if n == 2 else None
        if ending.is_forfeit:
            forfeit = Forfeit(loser, ending, "", "x")
    elif ending is GameEndReason.TURN_LIMIT:
        pairwise = tuple((o, h) for o in out for h in range(n) if h not in out)
        winner = pairwise[0][0] if n == 2 and pairwise else None
    start = T0 + 60 * number
    record = GameRecord(
        deck=tuple(deck(number * 10 + attempt)),
        dealer=dealer,
        turn_limit=500,
        moves=(Move((dealer + 1) % n, "lead 6C", 0.01),),
        ending=ending,
        winner=winner,
        forfeit=forfeit,
        void_reason="infra" if ending is GameEndReason.VOID else "",
        players=tuple(f"p{i}" for i in range(n)),
        started=start,
        finished=start + 5,
        ruleset="classic",
        seats=n,
        loser=loser,
        pairwise=pairwise,
    )
    return record, GamePlace(table.series_id, number, attempt, table.seats), table


GE = GameEndReason


def _first_phase(arena: Arena) -> list[tuple[GameRecord, GamePlace, Table]]:
    """Singles, interleaved over both tournaments and every board."""
    a = arena
    return [
        dflt(a.d01, 0, dealer=1, winner=0),
        classic(a.c3, 0, GE.LAST_HOLDER, dealer=0, loser=2),
        dflt(a.d10, 0, dealer=0, winner=1, swap=True),
        dflt(a.d01, 1, dealer=0, winner=None),
        classic(a.c4, 0, GE.LAST_HOLDER, dealer=2, loser=3),
        dflt(a.d01, 2, dealer=0, forfeit=(1, GE.TIMEOUT), swap=True),
        classic(a.c3, 1, GE.TURN_LIMIT, dealer=1, out=(0,)),
        classic(a.c3b, 0, GE.LAST_HOLDER, dealer=2, loser=0),
        dflt(a.d01, 3, void=True),
        classic(a.c4, 1, GE.TURN_LIMIT, dealer=3, out=(1, 2)),
        classic(a.c2, 0, GE.LAST_HOLDER, dealer=1, loser=0),
        dflt(a.d10, 1, dealer=1, forfeit=(0, GE.CRASH)),
        classic(a.c3, 2, GE.ALL_OUT, dealer=2),
        classic(a.c4, 2, GE.CRASH, dealer=1, loser=1),
        dflt(a.d01, 4, dealer=1, forfeit=(0, GE.ILLEGAL_ACTION)),
        classic(a.c3, 3, GE.TIMEOUT, dealer=0, loser=2),
        classic(a.c2, 1, GE.TURN_LIMIT, dealer=0, out=(1,)),
        dflt(a.d01, 5, dealer=0, forfeit=(0, GE.TIMEOUT), swap=True),
        classic(a.c3b, 1, GE.TIMEOUT, dealer=1, loser=1),
        classic(a.c4, 3, GE.ALL_OUT, dealer=0),
    ]


def _bulk_phase(arena: Arena) -> list[tuple[GameRecord, GamePlace, Table]]:
    """31 more games of s0-s1 (both pass their first 30: K 16 from then on), then games of
    a new bot against an established one (each side its own K), tables and a void."""
    a = arena
    items = [
        dflt(a.d01, n, dealer=n % 2, winner=(0, 1, None, 1, 0)[n % 5], swap=n % 3 == 0)
        for n in range(6, 37)
    ]
    items.insert(10, classic(a.c3, 4, GE.LAST_HOLDER, dealer=1, loser=0))
    items.insert(20, dflt(a.d10, 2, dealer=0, winner=0))
    items += [
        dflt(a.d02, 0, dealer=0, winner=1),
        dflt(a.d02, 1, dealer=1, forfeit=(1, GE.MALFORMED_REPLY)),
        dflt(a.d02, 2, void=True),
        # The same bot forfeiting for the same reason again, in one bulk: counted each time.
        dflt(a.d02, 4, dealer=0, forfeit=(1, GE.MALFORMED_REPLY)),
        dflt(a.d02, 5, dealer=1, forfeit=(1, GE.MALFORMED_REPLY), swap=True),
        classic(a.c3b, 2, GE.TURN_LIMIT, dealer=0, out=(2,)),
        classic(a.c4, 4, GE.TIMEOUT, dealer=3, loser=2),
        dflt(a.d02, 3, dealer=1, winner=None, swap=True),
        classic(a.c3b, 3, GE.LAST_HOLDER, dealer=1, loser=2),
    ]
    return items


def _start(db: Database) -> tuple[Arena, Ledger]:
    arena = build_arena(db)
    ledger = Ledger(db)
    ledger.record(_first_phase(arena))
    return arena, ledger


@pytest.fixture
def played(sqlite_db: Database) -> tuple[Arena, Ledger]:
    """The first phase's games on SQLite (the tests of one backend)."""
    return _start(sqlite_db)


# ------------------------------------------------------------------------------ the tests


def test_every_board_equals_a_replay_through_records_bulk_voids_and_rebuilds(db: Database) -> None:
    """On SQLite and PostgreSQL."""
    arena, ledger = _start(db)
    check(ledger)
    # A game voided after it was played, recorded as such: on no board.
    ledger.record([dflt(arena.d10, 3, dealer=1, winner=0)], voided_after="found later")
    check(ledger)
    ledger.bulk(_bulk_phase(arena))
    check(ledger)
    with ledger.db.read_session() as s:
        board = elo_board(session=s, tournament_id=arena.one, ruleset="default", players=2)
    s0, s1, s2 = arena.subs[:3]
    assert not board.entries[s0].provisional and not board.entries[s1].provisional
    assert board.entries[s2].provisional and board.entries[s2].games == 5
    # Voids: a default forfeit, a table forfeit, the last game of a board of tournament two
    # (its last game id moves back), and the only counted game of a 2-seat table's pair.
    by = {(g.tournament_id, g.ruleset, len(g.seats), g.forfeit): g for g in ledger.games}
    ledger.void(by[arena.one, "default", 2, (1, "timeout")].game_id)
    check(ledger)
    ledger.void(by[arena.one, "classic", 4, (1, "crash")].game_id)
    check(ledger)
    last_c3b = max(g.game_id for g in ledger.games if g.seats == arena.c3b.seats)
    ledger.void(last_c3b)
    check(ledger)
    # Records after the rebuilds continue from the rebuilt state: a replayed attempt, a bulk.
    ledger.record(
        [
            classic(arena.c3b, 3, GE.ALL_OUT, dealer=2, attempt=2),
            # A forfeit the boards already count for this bot and reason: added to it.
            dflt(arena.d02, 6, dealer=0, forfeit=(1, GE.MALFORMED_REPLY)),
        ]
    )
    ledger.bulk([dflt(arena.d01, 37, dealer=1, winner=1), classic(arena.c2, 2, GE.ALL_OUT)])
    check(ledger)
    with ledger.db.session() as s:
        rebuild_elo(s.connection())
    check(ledger)


def test_voiding_every_game_of_a_board_empties_it_and_leaves_the_others(
    played: tuple[Arena, Ledger],
) -> None:
    arena, ledger = played
    for played_game in [g for g in ledger.games if g.seats == arena.c2.seats]:
        ledger.void(played_game.game_id)
    check(ledger)
    with ledger.db.read_session() as s:
        assert elo_board(session=s, tournament_id=None, ruleset="classic", players=2) == (
            EloBoard(0, {})
        )


def _rows(db: Database) -> dict[str, set[tuple[Any, ...]]]:
    with db.read_session() as s:
        return {
            t.name: {tuple(r) for r in s.connection().execute(sa.select(t))}
            for t in (SCOPES, RATINGS, PAIRS, FORFEITS)
        }


def _spoil(db: Database, key: Key) -> None:
    """Write wrong figures into every stored row of the board ``key``."""
    scope = Scope(*key)
    with db.session() as s:
        c = s.connection()
        c.execute(RATINGS.update().where(scope.where(RATINGS)).values(rating=1234.5, games=99))
        c.execute(PAIRS.update().where(scope.where(PAIRS)).values(wins=PAIRS.c.wins + 7))
        c.execute(FORFEITS.update().where(scope.where(FORFEITS)).values(games=5))
        c.execute(SCOPES.update().where(scope.where(SCOPES)).values(games=77, last_game_id=1))


def _of(rows: dict[str, set[tuple[Any, ...]]], key: Key, *, inside: bool = True) -> Any:
    """The rows of board ``key`` (of every other board with ``inside=False``)."""
    return {name: {r for r in found if (r[:3] == key) is inside} for name, found in rows.items()}


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("one-default", id="tournament-default"),
        pytest.param("all-classic3", id="all-classic3"),
    ],
)
def test_rebuilding_one_board_repairs_it_and_touches_no_other(
    played: tuple[Arena, Ledger], key: str
) -> None:
    """rebuild_elo of one board replays its games only: another board spoiled by hand stays
    spoiled, every other row stays as it was."""
    arena, ledger = played
    target: Key = (
        (arena.one, "default", 2) if key == "one-default" else (ALL_TOURNAMENTS, "classic", 3)
    )
    spoiled_other: Key = (
        (ALL_TOURNAMENTS, "default", 2) if key == "one-default" else (arena.one, "classic", 3)
    )
    good = _rows(ledger.db)
    _spoil(ledger.db, target)
    _spoil(ledger.db, spoiled_other)
    spoiled = _rows(ledger.db)
    with ledger.db.read_session() as s:
        tid, ruleset, players = spoiled_other
        # A board whose stored count is not its counted games' has no tallies to trust.
        assert board_tallies(session=s, tournament_id=tid, ruleset=ruleset, players=players) is None
    with ledger.db.session() as s:
        rebuild_elo(s.connection(), [Scope(*target), Scope(*target)])
    after = _rows(ledger.db)
    assert _of(after, target) == _of(good, target)
    assert _of(after, target, inside=False) == _of(spoiled, target, inside=False)
    with ledger.db.session() as s:
        rebuild_elo(s.connection(), [Scope(*spoiled_other)])
    check(ledger)


def test_rebuilding_without_tallies_replaces_live_elo_only(played: tuple[Arena, Ledger]) -> None:
    """Migration 0006's rebuild (before the tally tables existed) keeps the tallies as
    they are: they are neither emptied nor counted twice, whether every board is rebuilt or
    one."""
    arena, ledger = played
    spoiled: Key = (arena.two, "classic", 3)
    with ledger.db.session() as s:
        c = s.connection()
        c.execute(RATINGS.delete())
        c.execute(PAIRS.update().where(Scope(*spoiled).where(PAIRS)).values(wins=0))
    with ledger.db.session() as s:
        rebuild_elo(s.connection(), tallies=False)
    with ledger.db.read_session() as s:
        tallies = board_tallies(session=s, tournament_id=arena.two, ruleset="classic", players=3)
    # The tallies spoiled by hand stay so (the count of results is now too low to trust).
    assert tallies is None
    with ledger.db.session() as s:
        rebuild_elo(s.connection(), [Scope(*spoiled)])
    check(ledger)
    for key in [(arena.one, "classic", 4), (ALL_TOURNAMENTS, "default", 2)]:
        with ledger.db.session() as s:
            rebuild_elo(s.connection(), [Scope(*key)], tallies=False)
        check(ledger)


def test_pair_and_forfeit_rows_without_games_are_not_part_of_the_tallies(
    played: tuple[Arena, Ledger],
) -> None:
    """Rows written with zero counts (by hand, or left by an older arena) change nothing."""
    arena, ledger = played
    s3, s4 = arena.subs[3:]
    with ledger.db.session() as s:
        c = s.connection()
        where = {"tournament_id": arena.one, "ruleset": "classic", "players": 4}
        c.execute(
            PAIRS.insert().values(
                **where, first_submission_id=s4, second_submission_id=s3, wins=0, draws=0, losses=0
            )
        )
        c.execute(FORFEITS.insert().values(**where, submission_id=s4, reason="crash", games=0))
    check(ledger)


def test_tallies_whose_board_count_is_off_are_not_trusted(played: tuple[Arena, Ledger]) -> None:
    """The stored count of a board one short of its counted games (as after a game written
    around record_game): its tallies are not used, though they are within bounds."""
    arena, ledger = played
    key: Key = (arena.one, "default", 2)
    n = len(ledger.counted(key))
    with ledger.db.session() as s:
        s.connection().execute(SCOPES.update().where(Scope(*key).where(SCOPES)).values(games=n - 1))
    with ledger.db.read_session() as s:
        assert (
            board_tallies(session=s, tournament_id=arena.one, ruleset="default", players=2) is None
        )
        other = board_tallies(session=s, tournament_id=None, ruleset="default", players=2)
        assert other is not None and other.games == n + len(
            ledger.counted((arena.two, "default", 2))
        )


def test_recording_the_same_game_again_moves_no_board(sqlite_db: Database) -> None:
    db = sqlite_db
    arena = build_arena(db)
    ledger = Ledger(db)
    items = [dflt(arena.d01, 0, dealer=1), classic(arena.c3, 0, GE.TIMEOUT, loser=1)]
    ledger.record(items)
    before = _rows(db)
    with db.session() as s:
        for record, where, _ in items:
            assert not record_game(record, where, session=s).created
    assert _rows(db) == before
    check(ledger)


def test_a_four_seat_table_scores_each_pair_in_order_of_play() -> None:
    """Hand-counted (rules-classic.md), pinning the oracle above: dealer seat 2, so the order
    of play is seats 3, 0, 1, 2; seats 1 and 3 went out at the turn limit; 0 and 2 held."""
    subs = (10, 11, 12, 13)
    pairwise = ((1, 0), (1, 2), (3, 0), (3, 2))
    expected = [(10, 11, 0.0), (10, 12, 0.5), (13, 10, 1.0), (11, 12, 1.0), (13, 12, 1.0)]
    found = scored_pairs(
        ruleset="classic",
        dealer=2,
        first_mover=3,
        result="table",
        seat0=10,
        seat1=11,
        seats=subs,
        pairwise=pairwise,
    )
    assert list(found) == expected
    oracle = Played(1, 1, "classic", subs, 2, None, pairwise, None, False).pairs()
    assert oracle == expected
    # The default game: the dealer's opponent moves first; the result names a seat.
    for dealer, result, want in [
        (0, "seat1", (11, 10, 1.0)),
        (0, "seat0", (11, 10, 0.0)),
        (1, "seat0", (10, 11, 1.0)),
        (1, "draw", (10, 11, 0.5)),
    ]:
        pairs = scored_pairs(
            ruleset="default",
            dealer=dealer,
            first_mover=1 - dealer,
            result=result,
            seat0=10,
            seat1=11,
            seats=None,
            pairwise=None,
        )
        assert pairs == (want,)


def test_live_elo_needs_a_flushed_game_and_skips_a_void(sqlite_db: Database) -> None:
    db = sqlite_db
    arena = build_arena(db)
    ledger = Ledger(db)
    (voided,) = ledger.record([dflt(arena.d01, 0, void=True)])
    (counted,) = ledger.record([classic(arena.c4, 0, GE.STARTUP_FAILURE, dealer=1, loser=3)])
    with db.session() as s:
        with pytest.raises(ValueError, match="flushed"):
            record_elo(None, session=s)
        assert scored_game(voided, s.connection()) is None
        found = scored_game(counted, s.connection())
        assert found is not None
        assert (found.tournament_id, found.ruleset, found.players) == (arena.one, "classic", 4)
        assert (found.forfeiter, found.forfeit_reason) == (arena.c4.seats[3], "startup failure")
        record_elo(voided, session=s)  # a void: nothing to apply
    check(ledger)


def test_elo_entries_are_provisional_for_their_first_30_games() -> None:
    assert EloEntry(1, 1500.0, NEW_BOT_GAMES - 1).provisional
    assert not EloEntry(1, 1500.0, NEW_BOT_GAMES).provisional
