"""Mutation review of how games are recorded, counted and rated in the database.

Every expected figure is counted here from the records the test itself wrote (who sat where,
who dealt, who won, who forfeited, which game was voided), with the rules of docs/ratings.md,
docs/leaderboard.md and docs/games-format.md: the first mover is the seat that does not
deal; a draw is half a point; a voided game never counts; a forfeit counts for its offender.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import Session

from arena.db import (
    Database,
    GamePlace,
    NewRatingSnapshot,
    RatingLine,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    find_games,
    forfeit_counts,
    latest_rating_snapshot,
    load_rating_snapshot,
    pair_counts,
    record_game,
    save_rating_snapshot,
    series_of_tournament,
    series_tallies,
    submit,
    void_game,
)
from arena.db.elo import apply_pairs, elo_board
from arena.db.results import aggregated_forfeit_counts, aggregated_pair_counts
from leaderboard.standings import refit_and_store, standings
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, seat_outcome, table_losers
from tests.db.helpers import World, game, new_submission

# ----------------------------------------------------------------------------- helpers


def _own_elo(games: list[tuple[int, int, float]]) -> dict[int, tuple[float, int]]:
    """docs/ratings.md: E = 1 / (1 + 10^((R' - R) / 400)), K 32 for a bot's first 30
    games then 16 (each side its own), start 1500, in the order the games were recorded."""
    state: dict[int, tuple[float, int]] = {}
    for a, b, score in games:
        ra, na = state.get(a, (1500.0, 0))
        rb, nb = state.get(b, (1500.0, 0))
        ea = 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0))
        ka = 32.0 if na < 30 else 16.0
        kb = 32.0 if nb < 30 else 16.0
        state[a] = (ra + ka * (score - ea), na + 1)
        state[b] = (rb + kb * ((1.0 - score) - (1.0 - ea)), nb + 1)
    return state


def _played(world: World) -> list[tuple[GameRecord, GamePlace]]:
    """Ten games of alpha and bravo: both seatings, both dealers, wins of each seat, draws,
    forfeits of each seat (different reasons), and one game the referee voided."""
    plan: list[dict[str, Any]] = [
        {"winner": 0, "dealer": 1},
        {"winner": 1, "dealer": 0, "swap": True},
        {"winner": None, "dealer": 0},
        {"winner": 0, "dealer": 0, "swap": True},
        {
            "winner": 0,
            "dealer": 1,
            "ending": GameEndReason.TIMEOUT,
            "forfeit": Forfeit(1, GameEndReason.TIMEOUT, "", "slow"),
        },
        {"winner": None, "dealer": 1, "swap": True},
        {
            "winner": 1,
            "dealer": 0,
            "swap": True,
            "ending": GameEndReason.CRASH,
            "forfeit": Forfeit(0, GameEndReason.CRASH, "", "boom"),
        },
        {"winner": None, "ending": GameEndReason.VOID, "void_reason": "infra", "dealer": 1},
        {"winner": 1, "dealer": 1},
        {
            "winner": 1,
            "dealer": 0,
            "ending": GameEndReason.ILLEGAL_ACTION,
            "forfeit": Forfeit(0, GameEndReason.ILLEGAL_ACTION, "lead XX", "no"),
        },
    ]
    return [game(world, number, **kw) for number, kw in enumerate(plan, start=1)]


def _seats(where: GamePlace) -> tuple[int, int]:
    return int(where.seats[0]), int(where.seats[1])


def _first_second_score(record: GameRecord, where: GamePlace) -> tuple[int, int, float]:
    """The first mover (the seat that does not deal), the second, and the first's score."""
    seats = _seats(where)
    first_seat = 1 - record.dealer
    score = 0.5 if record.winner is None else float(record.winner == first_seat)
    return seats[first_seat], seats[1 - first_seat], score


def _expected_pairs(
    played: list[tuple[GameRecord, GamePlace]],
) -> dict[tuple[int, int], tuple[int, int, int]]:
    out: dict[tuple[int, int], list[int]] = {}
    for record, where in played:
        if record.voided:
            continue
        first, second, score = _first_second_score(record, where)
        out.setdefault((first, second), [0, 0, 0])[{1.0: 0, 0.5: 1, 0.0: 2}[score]] += 1
    return {pair: (w, d, lo) for pair, (w, d, lo) in out.items()}


def _expected_forfeits(played: list[tuple[GameRecord, GamePlace]]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for record, where in played:
        if record.forfeit is None or record.voided:
            continue
        who = _seats(where)[record.forfeit.seat]
        reason = record.forfeit.reason.value
        out.setdefault(who, {})[reason] = out.setdefault(who, {}).get(reason, 0) + 1
    return out


def _pairs(found: Any) -> dict[tuple[int, int], tuple[int, int, int]]:
    return {
        (c.first_submission_id, c.second_submission_id): (c.wins, c.draws, c.losses)
        for c in found
        if c.wins or c.draws or c.losses
    }


def _record_all(db: Database, played: list[tuple[GameRecord, GamePlace]]) -> None:
    with db.session() as s:
        for record, where in played:
            record_game(record, where, session=s)


# ------------------------------------------------------------- per-pair tallies and forfeits


def test_pair_counts_and_forfeits_count_the_first_mover_draws_and_offenders(
    db: Database, world: World
) -> None:
    """Per ordered pair (first mover, second): W/D/L from the first mover's side, a draw in
    the draw column, a voided game nowhere; forfeits for the seat that forfeited, by reason.
    The stored tallies and the aggregation over the games agree with a count by hand."""
    played = _played(world)
    _record_all(db, played)
    pairs, forfeits = _expected_pairs(played), _expected_forfeits(played)
    assert sum(sum(v) for v in pairs.values()) == 9  # one of ten voided
    assert set(pairs) == {(world.sub_a, world.sub_b), (world.sub_b, world.sub_a)}
    with db.read_session() as s:
        for tid in (None, world.tournament_id):
            assert _pairs(pair_counts(session=s, tournament_id=tid)) == pairs
            assert _pairs(aggregated_pair_counts(session=s, tournament_id=tid)) == pairs
            assert forfeit_counts(session=s, tournament_id=tid) == forfeits
            assert aggregated_forfeit_counts(session=s, tournament_id=tid) == forfeits


def test_a_game_voided_after_recording_leaves_the_counts_and_live_elo(
    db: Database, world: World
) -> None:
    """void_game: the game stops counting in the tallies (both paths) and in live Elo, which
    equals the documented Elo over the remaining counted games in the order recorded."""
    played = _played(world)
    _record_all(db, played)
    with db.session() as s:
        stored = find_games(session=s, include_voided=False)
        target = next(g for g in stored if g.number == 4)  # a decisive game
        assert target.id is not None
        void_game(target.id, "found broken", session=s)
    kept = [(r, w) for r, w in played if not r.voided and w.number != 4]
    with db.read_session() as s:
        for tid in (None, world.tournament_id):
            assert _pairs(pair_counts(session=s, tournament_id=tid)) == _expected_pairs(kept)
            assert _pairs(aggregated_pair_counts(session=s, tournament_id=tid)) == (
                _expected_pairs(kept)
            )
            assert forfeit_counts(session=s, tournament_id=tid) == _expected_forfeits(kept)
            board = elo_board(session=s, tournament_id=tid, ruleset="default", players=2)
            own = _own_elo([_first_second_score(r, w) for r, w in kept])
            assert board.games == len(kept)
            assert {k: e.games for k, e in board.entries.items()} == {
                k: n for k, (_, n) in own.items()
            }
            for sid, (rating, _) in own.items():
                assert board.entries[sid].rating == pytest.approx(rating, abs=1e-9)


def test_live_elo_of_recorded_games_is_the_documented_arithmetic(
    db: Database, world: World
) -> None:
    """Recording applies each counted game (the referee's void not at all) to live Elo."""
    played = _played(world)
    _record_all(db, played)
    own = _own_elo([_first_second_score(r, w) for r, w in played if not r.voided])
    with db.read_session() as s:
        board = elo_board(session=s, tournament_id=None, ruleset="default", players=2)
    assert board.games == 9
    for sid, (rating, games) in own.items():
        assert board.entries[sid].rating == pytest.approx(rating, abs=1e-9)
        assert board.entries[sid].games == games
        assert board.entries[sid].provisional is (games < 30)


def test_apply_pairs_gives_each_side_its_own_k() -> None:
    """An established bot (30 games) against a new one: 16 (S - E) and 32 (S - E)."""
    state = {1: (1600.0, 30), 2: (1500.0, 0)}
    apply_pairs(state, [(1, 2, 0.5)])
    e1 = 1.0 / (1.0 + 10.0 ** ((1500.0 - 1600.0) / 400.0))
    assert state[1] == pytest.approx((1600.0 + 16.0 * (0.5 - e1), 31))
    assert state[2] == pytest.approx((1500.0 + 32.0 * (0.5 - (1.0 - e1)), 1))


def test_series_tallies_count_from_bot_a_side(db: Database, world: World) -> None:
    """A series' A wins, draws, B wins and forfeits over its counted games, whatever seat
    A sat in (`kryt tournament status`)."""
    played = _played(world)
    _record_all(db, played)
    a_wins = draws = b_wins = forfeits = 0
    for record, where in played:
        if record.voided:
            continue
        if record.winner is None:
            draws += 1
        elif _seats(where)[record.winner] == world.sub_a:
            a_wins += 1
        else:
            b_wins += 1
        forfeits += record.forfeit is not None
    with db.read_session() as s:
        (tally,) = series_tallies(world.tournament_id, session=s)
    assert (tally.played, tally.a_wins, tally.draws, tally.b_wins, tally.forfeits) == (
        9,
        a_wins,
        draws,
        b_wins,
        forfeits,
    )
    assert (a_wins, draws, b_wins, forfeits) == (4, 2, 3, 3)


def test_standings_rows_count_each_bot_over_both_colours(db: Database, world: World) -> None:
    """docs/leaderboard.md: W/D/L and Score% over counted games (a draw half a point), Elo
    the live Elo; ratings centred on 0 and shown +1500, so they average 1500."""
    played = _played(world)
    _record_all(db, played)
    totals: dict[int, list[int]] = {world.sub_a: [0, 0, 0], world.sub_b: [0, 0, 0]}
    for record, where in played:
        if record.voided:
            continue
        for seat, sid in enumerate(_seats(where)):
            column = 1 if record.winner is None else (0 if record.winner == seat else 2)
            totals[sid][column] += 1
    own = _own_elo([_first_second_score(r, w) for r, w in played if not r.voided])
    with db.read_session() as s:
        board = standings(session=s, reuse=False)
    assert board.games == 9
    assert {r.submission_id for r in board.rows} == set(totals)
    for row in board.rows:
        w, d, lo = totals[row.submission_id]
        assert (row.wins, row.draws, row.losses, row.games) == (w, d, lo, w + d + lo)
        assert row.score == pytest.approx((w + d / 2) / (w + d + lo))
        assert row.elo == pytest.approx(own[row.submission_id][0], abs=1e-9)
    ratings = [row.rating for row in board.rows]
    assert None not in ratings
    assert sum(r for r in ratings if r is not None) / len(ratings) == pytest.approx(1500.0)
    assert board.rows[0].rating is not None and board.rows[1].rating is not None
    assert board.rows[0].rating >= board.rows[1].rating


# ------------------------------------------------------------------------- standings order


def _tournament(db: Database, names: list[str], pairs: list[tuple[int, int]]) -> list[int]:
    """Submissions named ``names`` (ids in that order) and one finished-or-not tournament
    with a series per pair of indices; returns the series ids."""
    with db.session() as s:
        sids = []
        for name in names:
            sub = submit(new_submission(name), session=s).submission
            assert sub.id is not None
            sids.append(sub.id)
        t = create_tournament(
            TournamentSpec(
                name="cup",
                seed=3,
                config={"games": 2},
                series=[SeriesSpec(sids[a], sids[b], 2, 5) for a, b in pairs],
            ),
            session=s,
        )
        assert t.id is not None
        series = series_of_tournament(t.id, session=s)
        out = []
        for row in series:
            assert row.id is not None
            out.append(row.id)
        return [*sids, *out]


def _world(sids: list[int], series_id: int, a: int, b: int) -> World:
    return World(sids[a], sids[b], 1, series_id)


def test_equal_ratings_are_ranked_by_submission_id_not_by_name(db: Database) -> None:
    """docs/leaderboard.md: equal ratings are ranked by submission id, as numbers. zulu
    (submitted first) and alpha each win the game they move first in: equal ratings."""
    zulu, alpha, series = _tournament(db, ["zulu", "alpha"], [(0, 1)])
    w = World(zulu, alpha, 1, series)
    with db.session() as s:
        record_game(*game(w, 1, winner=1, dealer=0), session=s)  # alpha (seat 1) first, wins
        record_game(*game(w, 2, winner=0, dealer=1), session=s)  # zulu (seat 0) first, wins
    with db.read_session() as s:
        board = standings(session=s, reuse=False)
    assert [r.submission_id for r in board.rows] == [zulu, alpha]
    assert board.rows[0].rating == pytest.approx(board.rows[1].rating, abs=1e-6)


def test_without_a_fit_live_elo_orders_the_rows_ties_by_submission_id(db: Database) -> None:
    """Two groups that never met: no fit; all live Elo 1500 after draws, so the rows are
    in submission id order."""
    ids = _tournament(db, ["delta", "charlie", "bravo", "alpha"], [(0, 1), (2, 3)])
    sids, series = ids[:4], ids[4:]
    with db.session() as s:
        for k, (a, b) in enumerate([(0, 1), (2, 3)]):
            w = World(sids[a], sids[b], 1, series[k])
            record_game(*game(w, 1, winner=None), session=s)
    with db.read_session() as s:
        board = standings(session=s, reuse=False)
    assert board.fit is None
    assert [r.submission_id for r in board.rows] == sorted(sids)
    assert all(r.elo == 1500.0 for r in board.rows)


def test_a_board_of_voided_games_only_says_how_many_were_voided(db: Database, world: World) -> None:
    with db.session() as s:
        for number in (1, 2):
            record_game(
                *game(world, number, winner=None, ending=GameEndReason.VOID, void_reason="x"),
                session=s,
            )
    with db.read_session() as s:
        board = standings(session=s, reuse=False)
    assert board.rows == []
    assert board.note == "no counted games: the 2 games recorded on this board were voided"


# ------------------------------------------------------------------------ rating snapshots


def test_stored_snapshot_interval_bounds_are_rating_minus_and_plus_interval(
    db: Database, world: World
) -> None:
    _record_all(db, _played(world))
    stored = refit_and_store(db)
    assert stored is not None
    for entry in stored.entries:
        assert entry.error is not None and entry.error > 0
        assert entry.ci_low == pytest.approx(entry.rating - entry.error)
        assert entry.ci_high == pytest.approx(entry.rating + entry.error)
        assert entry.ci_low is not None and entry.ci_high is not None
        assert entry.ci_low < entry.rating < entry.ci_high


def _line(sid: int, rank: int, rating: float) -> RatingLine:
    return RatingLine(sid, rank, rating, 1, 1, 0, 0, 1.0, error=10.0)


def _snapshot(s: Session, lines: list[RatingLine]) -> int:
    stored = save_rating_snapshot(
        NewRatingSnapshot(model="bayeselo", tournament_id=None, parameters={}, entries=lines),
        session=s,
    )
    assert stored.snapshot.id is not None
    return stored.snapshot.id


def test_latest_snapshot_is_the_newest_and_lines_come_best_rank_first(
    db: Database, world: World
) -> None:
    with db.session() as s:
        _snapshot(s, [_line(world.sub_a, 1, 1600.0), _line(world.sub_b, 2, 1400.0)])
    with db.session() as s:
        # bravo ranked first now: the lower submission id is not the better rank
        newest = _snapshot(s, [_line(world.sub_a, 2, 1450.0), _line(world.sub_b, 1, 1550.0)])
    with db.read_session() as s:
        latest = latest_rating_snapshot(session=s, model="bayeselo")
        assert latest is not None
        assert latest.snapshot.id == newest
        assert [e.submission_id for e in latest.entries] == [world.sub_b, world.sub_a]
        loaded = load_rating_snapshot(newest, session=s)
        assert [(e.rank, e.submission_id) for e in loaded.entries] == [
            (1, world.sub_b),
            (2, world.sub_a),
        ]


# ------------------------------------------------------------- a table game's outcomes


def test_a_table_seat_that_beat_one_and_lost_to_another_lost() -> None:
    """docs/games-format.md: a table game is a loss for a bot that lost to any seat and a
    win for one that beat someone and lost to nobody; no result at all is a draw."""
    # Seats 0 and 3 could not start: 1 and 2 beat both; at the turn limit, 0 beat 1.
    assert seat_outcome([(1, 0), (2, 0), (1, 3), (2, 3)], 1) == "win"
    assert seat_outcome([(1, 0), (2, 0), (1, 3), (2, 3)], 3) == "loss"
    assert seat_outcome([(0, 1), (1, 2)], 1) == "loss"
    assert seat_outcome([(0, 1), (1, 2)], 0) == "win"
    assert seat_outcome([(0, 1)], 2) == "draw"
    assert seat_outcome([], 0) == "draw"


def test_table_losers_name_each_losing_seat_once_the_loser_first() -> None:
    assert table_losers(3, [(0, 3), (1, 3), (2, 3)]) == [3]
    assert table_losers(2, [(0, 2), (0, 1), (3, 2), (3, 1)]) == [2, 1]
    assert table_losers(1, [(0, 1), (2, 1), (0, 3), (2, 3)]) == [1, 3]
