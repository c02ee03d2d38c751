"""Results review: the BayesElo figures the leaderboard shows for the reference fixture
(tests/ratings/data, a copy of the shared ratings fixture), stored game by game in
a SQLite database through ``record_game`` and read back through ``standings``, against
BayesElo 0057's output in EXPECTED.md, within the tolerances docs/ratings.md states
(ratings 1 Elo, intervals 2, LOS 0.01, advantage and drawelo 0.05)."""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from leaderboard.ratings import PairCounts, fit_bayeselo, read_games_csv
from leaderboard.standings import refit_and_store, standings
from referee.protocol.messages import GameEndReason
from referee.record import GameRecord, Move
from referee.rules import shuffled_deck

DATA = Path(__file__).resolve().parent / "data"
FIXTURE = DATA
NOW = datetime(2026, 12, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Expected:
    rating: float
    interval: int
    los: float | None


def expected() -> tuple[dict[str, Expected], float, float]:
    """EXPECTED.md's table (LOS in per mille, truncated), advantage and drawelo."""
    text = (FIXTURE / "EXPECTED.md").read_text()
    rows: dict[str, Expected] = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\| (\w+) \| (-?[\d.]+) \| (\d+) \|\s*(\d*)\s*\|", line.strip())
        if m:
            los = None if not m.group(4) else int(m.group(4)) / 1000
            rows[m.group(1)] = Expected(float(m.group(2)), int(m.group(3)), los)
    found = re.search(r"advantage ([\d.]+) and drawelo ([\d.]+)", text)
    assert found is not None and len(rows) == 6
    return rows, float(found.group(1)), float(found.group(2))


def fixture_rows() -> list[tuple[str, str, str]]:
    with (FIXTURE / "fixture_games.csv").open() as f:
        return [(r["first"], r["second"], r["result"]) for r in csv.DictReader(f)]


def store_fixture(tmp_path: Path) -> Database:
    """Each fixture game as a stored game: the first mover is the non-dealer."""
    rows = fixture_rows()
    names = sorted({n for first, second, _ in rows for n in (first, second)})
    db = open_database(f"sqlite:///{tmp_path / 'fixture.db'}")
    per_pair = Counter(frozenset((a, b)) for a, b, _ in rows)
    with db.session() as session:
        ids = {}
        for k, name in enumerate(names):
            sub = submit(
                NewSubmission(bot_name=name, version="1", sha256=f"{k:064x}", submitted_by="t"),
                session=session,
            ).submission
            assert sub.id is not None
            ids[name] = sub.id
        pairs = sorted({tuple(sorted(p, key=lambda n: ids[n])) for p in per_pair})
        create_tournament(
            TournamentSpec(
                name="fixture",
                seed=1,
                series=[
                    SeriesSpec(ids[a], ids[b], per_pair[frozenset((a, b))], seed=k)
                    for k, (a, b) in enumerate(pairs)
                ],
            ),
            session=session,
        )
    with db.session() as session:
        series = {
            (s.submission_a_id, s.submission_b_id): s.id
            for s in series_of_tournament(1, session=session)
        }
        numbers: Counter[int] = Counter()
        deck = tuple(str(c) for c in shuffled_deck(1))
        for first, second, result in rows:
            a, b = sorted((ids[first], ids[second]))
            series_id = series[a, b]
            assert series_id is not None
            first_seat = 0 if ids[first] == a else 1
            dealer = 1 - first_seat
            if result == "1/2-1/2":
                winner, ending = None, GameEndReason.TURN_LIMIT
            else:
                winner = first_seat if result == "1-0" else 1 - first_seat
                ending = GameEndReason.OUT
            numbers[series_id] += 1
            record_game(
                GameRecord(
                    deck=deck,
                    dealer=dealer,
                    turn_limit=1000,
                    moves=(Move(first_seat, "lead 6C", 0.01),),
                    ending=ending,
                    winner=winner,
                    referee_version="test",
                    started=NOW.timestamp(),
                    finished=NOW.timestamp(),
                ),
                GamePlace(series_id, numbers[series_id], 1, (a, b)),
                session=session,
            )
    return db


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    return store_fixture(tmp_path_factory.mktemp("fixture"))


def check_against_expected(
    ratings: dict[str, float], intervals: dict[str, float], los: dict[str, float | None],
    advantage: float, drawelo: float,
) -> None:  # fmt: skip
    rows, adv, draw = expected()
    assert abs(advantage - adv) <= 0.05, (advantage, adv)
    assert abs(drawelo - draw) <= 0.05, (drawelo, draw)
    for name, exp in rows.items():
        assert abs(ratings[name] - exp.rating) <= 1.0, (name, ratings[name], exp.rating)
        assert abs(intervals[name] - exp.interval) <= 2.0, (name, intervals[name], exp.interval)
        assert round(intervals[name]) == exp.interval, (name, intervals[name], exp.interval)
        if exp.los is None:
            assert los[name] is None
        else:
            value = los[name]
            assert value is not None and abs(value - exp.los) <= 0.01, (name, value, exp.los)


def test_the_csv_fit_agrees_with_bayeselo() -> None:
    fit = fit_bayeselo(PairCounts.from_games(read_games_csv(FIXTURE / "fixture_games.csv")))
    table = fit.table()
    check_against_expected(
        {r.name: r.rating for r in table},
        {r.name: r.interval for r in table},
        {r.name: r.los_next for r in table},
        fit.advantage,
        fit.drawelo,
    )
    assert [r.name for r in table] == list(expected()[0])


def test_the_leaderboard_of_the_stored_fixture_agrees_with_bayeselo(fixture_db: Database) -> None:
    with fixture_db.read_session() as session:
        board = standings(session=session, reuse=False)
    assert board.fit is not None and board.note == "" and not board.paired
    rows = {r.bot: r for r in board.rows}
    check_against_expected(
        {name: r.rating - 1500.0 for name, r in rows.items() if r.rating is not None},
        {name: r.interval for name, r in rows.items() if r.interval is not None},
        {name: r.los_next for name, r in rows.items()},
        board.fit.advantage,
        board.fit.drawelo,
    )
    assert [r.bot for r in board.rows] == list(expected()[0])


def test_the_leaderboard_counts_of_the_stored_fixture_are_the_files(fixture_db: Database) -> None:
    """W/D/L and games of every bot, counted here from the CSV."""
    wins: Counter[str] = Counter()
    draws: Counter[str] = Counter()
    losses: Counter[str] = Counter()
    for first, second, result in fixture_rows():
        if result == "1-0":
            wins[first] += 1
            losses[second] += 1
        elif result == "0-1":
            wins[second] += 1
            losses[first] += 1
        else:
            draws[first] += 1
            draws[second] += 1
    with fixture_db.read_session() as session:
        board = standings(session=session)
    assert board.games == 840
    for row in board.rows:
        assert (row.wins, row.draws, row.losses) == (
            wins[row.bot],
            draws[row.bot],
            losses[row.bot],
        ), row.bot
        assert row.games == row.wins + row.draws + row.losses
        assert row.score == pytest.approx((row.wins + row.draws / 2) / row.games)


def test_a_stored_snapshot_shows_the_same_board(fixture_db: Database) -> None:
    snapshot = refit_and_store(fixture_db)
    assert snapshot is not None
    with fixture_db.read_session() as session:
        fitted = standings(session=session, reuse=False)
        reused = standings(session=session, reuse=True)
    assert [r.to_dict() for r in reused.rows] == [r.to_dict() for r in fitted.rows]
    assert reused.fit == fitted.fit
