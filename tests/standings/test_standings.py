"""Leaderboard numbers from the database: W/D/L, score, forfeits, ratings and their fallbacks."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesFormat,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    games_of_series,
    open_database,
    record_game,
    submit,
    void_game,
)
from leaderboard.standings import refit_and_store, standings
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import shuffled_deck

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def setup(
    tmp_path: Path, names: list[str], fmt: SeriesFormat = SeriesFormat.STANDARD
) -> tuple[Database, list[int], list[int]]:
    db = open_database(f"sqlite:///{tmp_path / 'k.db'}")
    ids = []
    with db.session() as session:
        for i, name in enumerate(names):
            row = submit(
                NewSubmission(bot_name=name, version="1", sha256=f"{i:064x}", submitted_by="test"),
                session=session,
            ).submission
            assert row.id is not None
            ids.append(row.id)
        pairs = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]]
        tournament = create_tournament(
            TournamentSpec(
                name="t",
                seed=1,
                series=[
                    SeriesSpec(a, b, games_planned=40, seed=k, format=fmt)
                    for k, (a, b) in enumerate(pairs)
                ],
            ),
            session=session,
        )
        assert tournament.id is not None
    return db, ids, list(range(1, len(pairs) + 1))


def play(db: Database, series_id: int, seats: tuple[int, int], results: list[str]) -> None:
    deck = tuple(str(c) for c in shuffled_deck(1))
    with db.session() as session:
        for number, result in enumerate(results, start=1):
            forfeit = None
            ending = GameEndReason.OUT
            if result.startswith("forfeit"):
                loser = int(result[-1])
                ending = GameEndReason.TIMEOUT
                forfeit = Forfeit(seat=loser, reason=ending)
                winner: int | None = 1 - loser
            elif result == "draw":
                winner, ending = None, GameEndReason.TURN_LIMIT
            else:
                winner = {"seat0": 0, "seat1": 1}[result]
            record_game(
                GameRecord(
                    deck=deck,
                    dealer=number % 2,
                    turn_limit=1000,
                    moves=(Move(1 - number % 2, "lead 6C", 0.01),),
                    ending=ending,
                    winner=winner,
                    forfeit=forfeit,
                    referee_version="test",
                    started=NOW.timestamp(),
                    finished=NOW.timestamp(),
                ),
                GamePlace(series_id, number, 1, seats),
                session=session,
            )


def test_counts_scores_and_forfeits(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"])
    play(db, series[0], (ids[0], ids[1]), ["seat0"] * 6 + ["seat1"] * 2 + ["draw"] * 2)
    play(db, series[1], (ids[0], ids[2]), ["seat0"] * 5 + ["seat1"] * 4 + ["forfeit1"])
    play(db, series[2], (ids[1], ids[2]), ["seat0"] * 5 + ["seat1"] * 5)
    with db.read_session() as session:
        board = standings(session=session)
    rows = {r.bot: r for r in board.rows}
    assert (rows["alpha"].wins, rows["alpha"].draws, rows["alpha"].losses) == (12, 2, 6)
    assert (rows["beta"].wins, rows["beta"].draws, rows["beta"].losses) == (7, 2, 11)
    assert (rows["gamma"].wins, rows["gamma"].draws, rows["gamma"].losses) == (9, 0, 11)
    assert rows["alpha"].score == (12 + 1) / 20
    assert rows["gamma"].forfeits == {"timeout": 1} and rows["alpha"].forfeits == {}
    assert board.rows[0].bot == "alpha" and board.rows[0].rank == 1
    assert board.fit is not None and board.note == ""
    assert all(r.rating is not None and r.interval is not None for r in board.rows)
    assert board.rows[0].los_next is not None and board.rows[-1].los_next is None
    assert rows["alpha"].elo > 1500 > rows["beta"].elo
    snapshot = refit_and_store(db)
    assert snapshot is not None


def test_a_clean_sweep_still_gets_finite_ratings_with_default_parameters(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["strong", "weak"])
    play(db, series[0], (ids[0], ids[1]), ["seat0"] * 6)
    with db.read_session() as session:
        board = standings(session=session)
    assert board.fit is not None and "defaults" in board.note
    strong, weak = board.rows
    assert strong.bot == "strong" and strong.rating is not None and weak.rating is not None
    assert strong.rating > weak.rating


def test_an_empty_database_has_an_empty_board(tmp_path: Path) -> None:
    db, _, _ = setup(tmp_path, ["a", "b"])
    with db.read_session() as session:
        board = standings(session=session)
    assert board.rows == [] and board.fit is None and "no games" in board.note
    assert refit_and_store(db) is None


def test_duplicate_deal_pairs_give_pentanomials_and_paired_intervals(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"], SeriesFormat.DUPLICATE)
    # Seat 0 is always the first bot of the pair; each deal is two games in a row.
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat0", "seat0", "seat1"] * 3)
    play(db, series[1], (ids[0], ids[2]), ["seat0", "seat1", "draw", "seat0"] * 3)
    play(db, series[2], (ids[1], ids[2]), ["seat1", "seat0", "seat0", "seat0"] * 3)
    with db.read_session() as session:
        board = standings(session=session)
    assert board.paired
    counts = {(p.bot, p.opponent): p.counts for p in board.pentanomials}
    # alpha v beta: pairs (W, W) = 2 points and (W, L) = 1 point, three of each.
    assert counts[("alpha 1", "beta 1")] == (0, 0, 3, 0, 3)
    # alpha v gamma: (W, L) = 1 and (D, W) = 1.5.
    assert counts[("alpha 1", "gamma 1")] == (0, 0, 3, 3, 0)
    assert sum(sum(c) for c in counts.values()) == 18
    assert all(r.interval is not None and r.interval > 0 for r in board.rows)
    assert board.to_dict()["intervals"] == "per deal pair"


def test_an_unfinished_deal_keeps_the_board_paired_and_counts_alone(tmp_path: Path) -> None:
    # Five games: deals 1+2 and 3+4 are complete, game 5 waits for its partner. The board
    # stays paired (it used to switch every interval to per game until game 6 was played)
    # and game 5 is a unit of its own, in the fit and in the intervals.
    db, ids, series = setup(tmp_path, ["alpha", "beta"], SeriesFormat.DUPLICATE)
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "seat0", "draw", "seat0"])
    with db.read_session() as session:
        board = standings(session=session)
    assert board.paired and board.single_games == 1 and board.games == 5
    assert "1 game of unfinished deals counted as units of their own" in board.note
    assert [p.counts for p in board.pentanomials] == [(0, 0, 1, 1, 0)]  # complete deals only
    data = board.to_dict()
    assert data["intervals"] == "per deal pair" and data["single_games"] == 1
    assert board.fit is not None and sum(r.games for r in board.rows) == 2 * 5


def test_a_game_whose_deal_partner_was_voided_counts_alone(tmp_path: Path) -> None:
    # Game 1 of the second deal voided after the fact (not replayed yet): game 4 is alone.
    db, ids, series = setup(tmp_path, ["alpha", "beta"], SeriesFormat.DUPLICATE)
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "seat0", "draw", "seat1", "seat0"])
    with db.session() as session:
        third = next(g for g in games_of_series(series[0], session=session) if g.number == 3)
        assert third.id is not None
        void_game(third.id, "found broken", session=session)
    with db.read_session() as session:
        board = standings(session=session)
    assert board.paired and board.single_games == 1 and board.games == 5
    assert sum(sum(p.counts) for p in board.pentanomials) == 2  # deals 1+2 and 5+6


def test_a_stored_fit_of_a_board_with_an_unfinished_deal_is_reused_as_is(tmp_path: Path) -> None:
    db, ids, series = setup(tmp_path, ["alpha", "beta", "gamma"], SeriesFormat.DUPLICATE)
    play(db, series[0], (ids[0], ids[1]), ["seat0", "seat1", "seat0"])
    play(db, series[1], (ids[0], ids[2]), ["draw", "seat1", "seat0", "seat0"])
    play(db, series[2], (ids[1], ids[2]), ["seat1", "seat0", "seat1"])
    with db.read_session() as session:
        fitted = standings(session=session, reuse=False)
    assert fitted.single_games == 2
    assert refit_and_store(db) is not None
    with db.read_session() as session:
        reused = standings(session=session)
    assert reused == fitted
