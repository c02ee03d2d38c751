"""Tests from a mutation review of ``leaderboard/standings.py``: each one kills a small
change to the code that the existing tests let through. Expected values are worked out here
from docs/leaderboard.md and docs/ratings.md (live Elo by its formula, the paired interval
as ``C M C`` by hand), never by asking the code under test.

What they pin down: a row's JSON keeps each field under its own name; a tournament's
settings give the board's table size; boards are listed default game first; ``--table-size``
alone picks the only board of that size; a board whose only game was voided says so (in
the singular) and shows no bot; without a fit the rows follow live Elo, ties by submission
id; equal ratings (to a millionth of an Elo) rank by submission id, whatever the rounding
noise or the bots' names; a duplicate board's intervals are the paired ones; the fit's
inputs key changes with every input (offset, board, deal pairs' counts, singles' results);
a stored snapshot is reused only when it holds every bot with an interval.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from arena.db import Game as GameRow
from arena.db import (
    NewRatingSnapshot,
    RatingLine,
    SeriesFormat,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    games_of_series,
    save_rating_snapshot,
    series_of_tournament,
    void_game,
)
from arena.db.results import DealPairKind, DealUnits, SingleGameKind
from leaderboard.ratings import Game, Outcome, PairCounts, fit_bayeselo
from leaderboard.standings import (
    SNAPSHOTS_CHECKED,
    Standing,
    boards_with_games,
    fit_inputs_key,
    refit_and_store,
    resolve_board_kind,
)
from tests.ratings.test_match_stats_duplicate_mutation_review import _sandwich_by_hand
from tests.standings.test_board_choice import board, table_tournament
from tests.standings.test_standings import play, setup
from tests.standings.test_stored_fit import MARK, mark_snapshot


def test_a_rows_json_keeps_each_field_under_its_own_name() -> None:
    row = Standing(
        rank=2,
        submission_id=7,
        bot="bot",
        version="1.2",
        rating=1512.5,
        interval=40.25,
        elo=1490.0,
        elo_provisional=True,
        games=10,
        wins=6,
        draws=1,
        losses=3,
        score=0.65,
        los_next=0.875,
        forfeits={"timeout": 1},
    )
    assert row.to_dict() == {
        "rank": 2,
        "submission_id": 7,
        "bot": "bot",
        "version": "1.2",
        "rating": 1512.5,
        "interval": 40.25,
        "elo": 1490.0,
        "elo_provisional": True,
        "games": 10,
        "wins": 6,
        "draws": 1,
        "losses": 3,
        "score": 0.65,
        "los_next": 0.875,
        "forfeits": {"timeout": 1},
    }


def test_a_tournaments_settings_give_the_table_size() -> None:
    config = {"ruleset": "classic", "table_size": 3}
    assert resolve_board_kind(None, None, config) == ("classic", 3)
    assert resolve_board_kind(None, 4, config) == ("classic", 4)  # asked wins
    assert resolve_board_kind(None, None, None) == ("default", 2)


def test_boards_are_listed_default_game_first(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "bravo", "charlie"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "draw"])
    table_tournament(db, "tables of 3", ids, 2)
    with db.read_session() as session:
        found = boards_with_games(session=session)
    # "classic" sorts before "default": the default game comes first all the same.
    assert [(b.ruleset, b.table_size, b.games) for b in found] == [
        ("default", 2, 2),
        ("classic", 3, 2),
    ]
    # docs/leaderboard.md: one of the few newest snapshots of any scope with the board's
    # digest serves it. Tournament 1 holds every default game, so its snapshot serves the
    # global default board even with tournament 2's (tables of three) stored after it.
    stored = refit_and_store(db, tournament_id=1)
    assert stored is not None and stored.snapshot.id is not None
    mark_snapshot(db, stored.snapshot.id)
    assert refit_and_store(db, tournament_id=2) is not None
    assert board(db).rows[0].rating == MARK
    db.close()


def test_a_table_size_alone_picks_the_only_board_of_that_size(tmp_path: Path) -> None:
    db, ids, _ = setup(tmp_path, ["alpha", "bravo", "charlie"])
    table_tournament(db, "tables of 2", ids[:2], 2)
    table_tournament(db, "tables of 3", ids, 3)
    shown = board(db, table_size=2)  # ruleset left open: of the size-2 boards, one has games
    assert (shown.ruleset, shown.table_size, shown.games) == ("classic", 2, 2)
    assert [r.bot for r in shown.rows] == ["alpha", "bravo"]
    # A tournament's own settings choose its board (tournament 3: the tables of three).
    of_tournament = board(db, tournament_id=3)
    assert (of_tournament.ruleset, of_tournament.table_size, of_tournament.games) == (
        "classic",
        3,
        3,
    )
    db.close()


def test_a_board_whose_only_game_was_voided_says_so_in_the_singular(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "bravo"])
    play(db, series[0], (ids[0], ids[1]), ["seat0"])
    with db.session() as session:
        (game,) = games_of_series(series[0], session=session)
        assert game.id is not None
        void_game(game.id, reason="test", session=session)
    shown = board(db)
    assert shown.rows == [] and shown.fit is None
    assert shown.note == "no counted games: the 1 game recorded on this board was voided"
    db.close()


def _elo_after_wins(wins: int) -> tuple[float, float]:
    """Live Elo of a bot winning ``wins`` games in a row against one opponent, both new
    (K = 32, start 1500): E = 1 / (1 + 10^((R' - R) / 400)), each side moves by K (S - E)."""
    winner = loser = 1500.0
    for _ in range(wins):
        expected = 1 / (1 + 10 ** ((loser - winner) / 400))
        winner, loser = winner + 32 * (1 - expected), loser - 32 * (1 - expected)
    return winner, loser


def test_without_a_fit_rows_follow_live_elo_then_submission_id(tmp_path: Path) -> None:
    # Two groups that never met: no rating fit, so live Elo orders the rows; the drawn
    # pair is level at 1500 and goes by submission id.
    db, ids, series = setup(tmp_path, ["alpha", "bravo", "charlie", "delta"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat0"])  # alpha beats bravo twice
    play(db, series[5], (ids[2], ids[3]), ["draw"])  # charlie and delta draw
    shown = board(db)
    assert shown.fit is None and shown.note.startswith("no rating fit")
    assert [r.bot for r in shown.rows] == ["alpha", "charlie", "delta", "bravo"]
    winner, loser = _elo_after_wins(2)
    elo = {r.bot: r.elo for r in shown.rows}
    assert elo["alpha"] == pytest.approx(winner, abs=1e-6)
    assert elo["bravo"] == pytest.approx(loser, abs=1e-6)
    assert elo["charlie"] == elo["delta"] == pytest.approx(1500.0)
    db.close()


def test_games_stored_around_record_game_count_in_the_live_elo(tmp_path: Path) -> None:
    """A counted game the live Elo's stored state does not know (written by hand, not by
    record_game): the board replays the games for the Elo column rather than show a live
    Elo that leaves it out."""
    db, ids, series = setup(tmp_path, ["alpha", "bravo"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat0"])  # alpha wins twice
    with db.session() as session:
        row = session.get(GameRow, 1)
        assert row is not None
        copy = {c.name: getattr(row, c.name) for c in GameRow.__table__.columns}  # type: ignore[attr-defined]
        session.add(GameRow(**(copy | {"id": None, "number": 3})))  # a third win, by hand
    shown = board(db)
    rows = {r.bot: r for r in shown.rows}
    assert (rows["alpha"].wins, rows["bravo"].losses) == (3, 3)
    winner, loser = _elo_after_wins(3)
    assert rows["alpha"].elo == pytest.approx(winner, abs=1e-6)
    assert rows["bravo"].elo == pytest.approx(loser, abs=1e-6)
    db.close()


def test_equal_ratings_rank_by_submission_id_not_by_name(tmp_path: Path) -> None:
    # Three bots in a ring of draws, submitted in reverse alphabetical order.
    db, ids, series = setup(tmp_path, ["zulu", "yankee", "xray"])
    for k, seats in enumerate([(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2])]):
        play(db, series[k], seats, ["draw", "draw"])
    shown = board(db)
    assert shown.fit is not None
    assert len({round(r.rating or 0.0, 6) for r in shown.rows}) == 1
    assert [r.bot for r in shown.rows] == ["zulu", "yankee", "xray"]
    db.close()


@pytest.mark.parametrize("tied_first", [True, False])
def test_ratings_equal_to_a_millionth_rank_by_submission_id(
    tmp_path: Path, tied_first: bool
) -> None:
    """The bot "tie" played only "peer" (a win each and two draws), so the two are level up
    to the fit's rounding noise; whichever was submitted first ranks first (the noise favours
    one of them, so one of the two orders of submission tells noise from ids)."""
    names = ["tie", "peer", "other", "strong"] if tied_first else ["peer", "tie", "other", "strong"]
    db, ids, series = setup(tmp_path, names)
    sid = dict(zip(names, ids, strict=True))
    index = {
        frozenset((a, b)): k
        for k, (a, b) in enumerate((a, b) for i, a in enumerate(names) for b in names[i + 1 :])
    }

    def games(a: str, b: str, results: list[str]) -> None:
        play(db, series[index[frozenset((a, b))]], (sid[a], sid[b]), results)

    games("tie", "peer", ["seat0", "seat1", "draw", "draw"])  # each wins as first mover
    games("peer", "strong", ["seat1", "seat0", "seat1", "draw", "seat1"])
    games("other", "strong", ["seat1", "seat1", "seat0", "seat1", "draw"])
    shown = board(db)
    assert shown.fit is not None
    rows = {r.bot: r for r in shown.rows}
    assert rows["tie"].rating == pytest.approx(rows["peer"].rating, abs=1e-6)
    order = [r.bot for r in shown.rows if r.bot in ("tie", "peer")]
    assert order == names[:2]
    db.close()


def test_a_duplicate_boards_intervals_are_the_paired_ones(tmp_path: Path) -> None:
    """The rows' intervals are ``z sqrt(V_ii)`` of the paired covariance ``C M C`` (not the
    per-game ones); games 2 and 4 of alpha-beta are voided, so games 1 and 3 (same seats,
    same result: one kind counted twice) are units of their own, one each."""
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"], SeriesFormat.DUPLICATE)
    results = {
        0: ["seat0", "seat0", "seat0", "seat1", "seat0", "draw"] * 2,
        1: ["seat0", "seat1", "draw", "seat0", "seat1", "seat1"] * 2,
        2: ["seat1", "seat0", "seat0", "seat0", "draw", "seat1"] * 2,
    }
    seats = {0: (ids[0], ids[1]), 1: (ids[0], ids[2]), 2: (ids[1], ids[2])}
    for k, moves in results.items():
        play(db, series[k], seats[k], moves)
    voided = {2, 4}
    with db.session() as session:
        for game in games_of_series(series[0], session=session):
            if game.number in voided:
                assert game.id is not None
                void_game(game.id, reason="test", session=session)
    shown = board(db)
    assert shown.paired and shown.fit is not None and shown.single_games == 2
    # The games as the fit sees them (play(): game n has seat 1 - n % 2 moving first).
    label = {ids[0]: "alpha 1", ids[1]: "beta 1", ids[2]: "gamma 1"}
    units: list[tuple[list[Game], int]] = []
    for k, moves in results.items():
        played: dict[int, Game] = {}
        for number, result in enumerate(moves, start=1):
            first = 1 - number % 2
            mover, other = label[seats[k][first]], label[seats[k][1 - first]]
            if result == "draw":
                outcome = Outcome.DRAW
            elif {"seat0": 0, "seat1": 1}[result] == first:
                outcome = Outcome.FIRST_WINS
            else:
                outcome = Outcome.SECOND_WINS
            if k != 0 or number not in voided:
                played[number] = Game(mover, other, outcome)
        for number in range(1, len(moves) + 1, 2):
            deal = [played[n] for n in (number, number + 1) if n in played]
            units.append((deal, 1))
    tally: dict[tuple[str, str], list[int]] = {}
    column = {Outcome.FIRST_WINS: 0, Outcome.DRAW: 1, Outcome.SECOND_WINS: 2}
    for unit, _ in units:
        for g in unit:
            tally.setdefault((g.first, g.second), [0, 0, 0])[column[g.outcome]] += 1
    fit = fit_bayeselo(
        PairCounts.from_mapping({k: (w, d, lo) for k, (w, d, lo) in tally.items()}),
        offset=1500.0,
    )
    _, paired = _sandwich_by_hand(fit, units, 0.95)
    for row in shown.rows:
        k = fit.index(label[row.submission_id])
        assert row.rating == pytest.approx(fit.ratings[k], abs=1e-6)
        assert row.interval == pytest.approx(paired[k], rel=1e-6)
        assert not math.isclose(row.interval or 0.0, fit.intervals[k], rel_tol=1e-3)
    db.close()


def test_the_fit_inputs_key_changes_with_every_input() -> None:
    mapping = {("1", "2"): (3, 1, 2), ("2", "1"): (2, 0, 1)}
    pair = DealPairKind(1, 2, 1.0, 2, 1, 0.0, 2)
    single = SingleGameKind(1, 2, 1.0, 1)
    units = DealUnits([pair], [single])
    base = fit_inputs_key(("default", 2), mapping, units, 1500.0)
    assert base == fit_inputs_key(("default", 2), dict(mapping), units, 1500.0)
    others = [
        fit_inputs_key(("default", 2), mapping, units, 0.0),  # the display offset
        fit_inputs_key(("classic", 2), mapping, units, 1500.0),  # the board
        fit_inputs_key(  # how many deal pairs of that kind
            ("default", 2),
            mapping,
            DealUnits([DealPairKind(1, 2, 1.0, 2, 1, 0.0, 3)], [single]),
            1500.0,
        ),
        fit_inputs_key(
            ("default", 2), mapping, DealUnits([pair], [SingleGameKind(1, 2, 0.0, 1)]), 1500.0
        ),  # a single game's result
        fit_inputs_key(("default", 2), {**mapping, ("1", "2"): (3, 2, 1)}, units, 1500.0),
        fit_inputs_key(("default", 2), mapping, None, 1500.0),
    ]
    assert len({base, *others}) == len(others) + 1


@pytest.mark.parametrize("damage", ["a bot left out", "an interval missing"])
def test_a_snapshot_missing_a_bot_or_an_interval_is_not_reused(tmp_path: Path, damage: str) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat0", "seat1", "draw"])
    play(db, series[1], (ids[0], ids[2]), ["seat0", "seat1", "draw", "seat0"])
    play(db, series[2], (ids[1], ids[2]), ["seat1", "seat0", "seat0", "draw"])
    fitted = board(db, reuse=False)
    assert fitted.fit is not None
    rows = fitted.rows[:-1] if damage == "a bot left out" else fitted.rows
    lines = [
        RatingLine(
            submission_id=row.submission_id,
            rank=row.rank,
            rating=12345.0,
            games=row.games,
            wins=row.wins,
            draws=row.draws,
            losses=row.losses,
            score=row.score,
            error=None if damage == "an interval missing" and k == 0 else row.interval,
            extra={"los_next": row.los_next},
        )
        for k, row in enumerate(rows)
    ]
    with db.session() as session:
        save_rating_snapshot(
            NewRatingSnapshot(
                model="bayeselo",
                parameters={**fitted.fit.to_dict(), "inputs": fitted.inputs},
                entries=lines,
            ),
            session=session,
        )
    shown = board(db)
    assert all(row.rating != 12345.0 for row in shown.rows)
    assert shown == fitted
    assert np.isfinite([row.rating or 0.0 for row in shown.rows]).all()
    db.close()


def test_the_own_scopes_snapshot_is_found_behind_newer_ones_and_stores_its_bounds(
    tmp_path: Path,
) -> None:
    """docs/leaderboard.md: the newest snapshot of the board's scope is checked besides the
    few newest of any scope. Tournament 1's snapshot is older than eight snapshots of the
    whole database (other inputs: tournament 2 has games too), and still serves its board.
    A stored line keeps its interval's bounds, rating - interval and rating + interval."""
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat0", "seat1", "draw"])
    play(db, series[1], (ids[0], ids[2]), ["seat0", "seat1", "draw", "seat0"])
    play(db, series[2], (ids[1], ids[2]), ["seat1", "seat0", "seat0", "draw"])
    with db.session() as session:
        other = create_tournament(
            TournamentSpec(name="t2", seed=2, series=[SeriesSpec(ids[0], ids[1], 40, 9)]),
            session=session,
        )
        assert other.id is not None
        other_series = series_of_tournament(other.id, session=session)[0].id
        assert other_series is not None
    play(db, other_series, (ids[0], ids[1]), ["seat1", "seat1"])
    stored = refit_and_store(db, tournament_id=1)
    assert stored is not None and stored.snapshot.id is not None
    for entry in stored.entries:
        assert entry.error is not None and entry.error > 0
        assert entry.ci_low == pytest.approx(entry.rating - entry.error)
        assert entry.ci_high == pytest.approx(entry.rating + entry.error)
    mark_snapshot(db, stored.snapshot.id)
    for _ in range(SNAPSHOTS_CHECKED):
        assert refit_and_store(db) is not None  # the whole database: other inputs
    shown = board(db, tournament_id=1)
    assert shown.rows[0].rating == MARK
    db.close()


def test_the_newest_snapshot_of_the_scope_is_the_one_checked(tmp_path: Path) -> None:
    """More stale snapshots of the same scope than are checked, then one of the games as
    they are now: that newest one is shown."""
    db, ids, series = setup(tmp_path, ["alpha", "beta"])
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "draw"])
    for _ in range(SNAPSHOTS_CHECKED + 1):
        assert refit_and_store(db) is not None
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "draw", "seat1"])  # a 4th game
    stored = refit_and_store(db)
    assert stored is not None and stored.snapshot.id is not None
    mark_snapshot(db, stored.snapshot.id)
    assert board(db).rows[0].rating == MARK
    db.close()
