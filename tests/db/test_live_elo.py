"""Live Elo in the database (migration 0006), on SQLite and PostgreSQL: kept up to date by
record_game, rebuilt when a game is voided, backfilled by the migration, and safe under
concurrent writers (no lost update, and games applied in the order of their ids)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from alembic import command
from sqlalchemy import event, text

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    find_games,
    open_database,
    record_game,
    record_games,
    series_of_tournament,
    void_game,
)
from arena.db.elo import EloBoard, board_tallies, elo_board, replayed_elo
from arena.db.migrate import alembic_config, current_revision, head_revision, upgrade_engine
from leaderboard.ratings import EloTracker, Game, Outcome
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit
from tests.db.helpers import World, build_world, game


def _board(db: Database, tournament_id: int | None = None) -> EloBoard:
    with db.read_session() as session:
        return elo_board(session=session, tournament_id=tournament_id, ruleset="default", players=2)


def _play(db: Database, world: World) -> None:
    """Ten games: both seatings, draws, a forfeit, a voided attempt replayed."""
    with db.session() as s:
        for number in range(10):
            kw: dict[str, Any] = {}
            if number == 3:
                kw = {"winner": None}
            if number == 5:
                kw = {
                    "winner": 0,
                    "ending": GameEndReason.TIMEOUT,
                    "forfeit": Forfeit(1, GameEndReason.TIMEOUT, "", "slow"),
                }
            record, where = game(world, number, swap=number % 3 == 0, dealer=number % 2, **kw)
            record_game(record, where, session=s)


def _replayed(db: Database) -> dict[int, tuple[float, int]]:
    """EloTracker (the leaderboard's Elo) over the counted games in id order."""
    tracker = EloTracker()
    with db.read_session() as s:
        for g in find_games(session=s, include_voided=False):
            seats = (g.seat0_submission_id, g.seat1_submission_id)
            first, second = seats[g.first_mover], seats[1 - g.first_mover]
            won = {"seat0": 0, "seat1": 1}.get(g.result or "")
            score = 0.5 if won is None else float(won == g.first_mover)
            tracker.update(Game(str(first), str(second), Outcome.from_score(score)))
    return {int(r.name): (r.rating, r.games) for r in tracker.ratings()}


def test_recording_keeps_live_elo_equal_to_a_replay(db: Database, world: World) -> None:
    _play(db, world)
    board = _board(db)
    assert board.games == 10
    assert _as_pairs(board) == _replayed(db)
    assert _board(db, world.tournament_id) == board  # one tournament: the same board
    assert board.entries[world.sub_a].rating != 1500.0


def test_voiding_a_counted_game_rebuilds_its_boards(db: Database, world: World) -> None:
    _play(db, world)
    with db.session() as s:
        (first, *_) = find_games(session=s, include_voided=False)
        assert first.id is not None
        void_game(first.id, "found broken", session=s)
    board = _board(db)
    assert board.games == 9
    assert _as_pairs(board) == _replayed(db)
    with db.read_session() as s:
        assert replayed_elo(session=s, tournament_id=None, ruleset="default", players=2) == board


def test_migration_0006_backfills_and_drops_the_state(db: Database, world: World) -> None:
    _play(db, world)
    before = _board(db), _board(db, world.tournament_id)
    with db.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0005")
    with db.engine.connect() as connection:
        assert current_revision(connection) == "0005"
        assert not {"elo_scopes", "elo_ratings"} & set(
            connection.dialect.get_table_names(connection)
        )
    assert upgrade_engine(db.engine, where="the test database") == head_revision()
    assert (_board(db), _board(db, world.tournament_id)) == before


def test_concurrent_writers_lose_no_update(db: Database, world: World) -> None:
    with db.session() as s:
        t = create_tournament(
            TournamentSpec(
                name="second",
                seed=3,
                series=[SeriesSpec(world.sub_a, world.sub_b, 10, k) for k in range(2)],
            ),
            session=s,
        )
        assert t.id is not None
        series = [x.id for x in series_of_tournament(t.id, session=s)]
    errors: list[BaseException] = []

    def writer(series_id: int | None) -> None:
        assert series_id is not None
        where = World(world.sub_a, world.sub_b, world.tournament_id, series_id)
        try:
            for number in range(10):
                record, place = game(where, number, winner=number % 2)
                with db.session() as s:
                    record_game(record, place, session=s)
        except BaseException as exc:  # reported below: a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(sid,)) for sid in series]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors
    board = _board(db)
    assert board.games == 20
    # Every game moved both bots' counts: a lost update would leave fewer.
    assert sorted(e.games for e in board.entries.values()) == [20, 20]
    assert _board(db, t.id).games == 20
    # Applied in the order of their ids, as a replay by id applies them (lock_boards).
    assert _as_pairs(board) == _replayed(db)
    # The per-pair tallies are updated under the same lock: none lost either.
    with db.read_session() as s:
        tallies = board_tallies(session=s, tournament_id=t.id, ruleset="default", players=2)
    assert tallies is not None
    assert sum(c.games for c in tallies.pairs) == 20


def test_a_counted_game_locks_each_of_its_boards_once(db: Database, world: World) -> None:
    """record_game and record_games lock a counted game's two boards before its row (id
    order, above); applying it then reuses those locks instead of taking them again (each
    lock is an upsert and a ``SELECT ... FOR UPDATE`` of the board's row). A voided game
    locks none."""
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        statements.append(" ".join(statement.split()))

    def board_locks() -> int:
        return sum(s.startswith("INSERT INTO elo_scopes") and "DO NOTHING" in s for s in statements)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        with db.session() as s:
            record_game(*game(world, 0), session=s)
        assert board_locks() == 2, statements
        statements.clear()
        with db.session() as s:
            record_games([game(world, n, winner=n % 2) for n in range(1, 6)], session=s)
        assert board_locks() == 2, statements
        statements.clear()
        with db.session() as s:
            record_game(
                *game(world, 6, ending=GameEndReason.VOID, winner=None, void_reason="ours"),
                session=s,
            )
        assert board_locks() == 0, statements
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    assert _board(db).games == 6
    assert _as_pairs(_board(db)) == _replayed(db)


def _as_pairs(board: EloBoard) -> dict[int, tuple[float, int]]:
    return {sid: (e.rating, e.games) for sid, e in board.entries.items()}


@pytest.fixture
def postgres_db(postgres_url: str) -> Iterator[Database]:
    database = open_database(postgres_url)
    try:
        yield database
    finally:
        database.close()


@pytest.mark.postgres
def test_a_game_waiting_for_its_board_on_postgresql_has_drawn_no_id(
    postgres_db: Database,
) -> None:
    """PostgreSQL draws a game's id when its row is inserted: a writer must hold the game's
    boards before that, or a game inserted later could commit (and be applied) first, and
    live Elo would differ from its replay by id (docs/database.md)."""
    db = postgres_db
    world = build_world(db)
    outcome: dict[str, Any] = {}

    def second_writer(record: Any, where: GamePlace) -> None:
        try:
            with db.session() as s:
                outcome["id"] = record_game(record, where, session=s).game.id
        except BaseException as exc:  # reported below: a thread cannot fail the test itself
            outcome["error"] = exc

    with db.engine.connect() as watcher, db.session() as first:
        watcher.execution_options(isolation_level="AUTOCOMMIT")
        first_id = record_game(*game(world, 0), session=first).game.id
        thread = threading.Thread(target=second_writer, args=game(world, 1, winner=1))
        thread.start()
        deadline = time.monotonic() + 120
        while not watcher.execute(text("SELECT count(*) FROM pg_locks WHERE NOT granted")).scalar():
            assert time.monotonic() < deadline, "the second writer never waited for the first"
            assert thread.is_alive(), outcome
            time.sleep(0.05)
        drawn = watcher.execute(
            text("SELECT last_value FROM pg_sequences WHERE sequencename = :name"),
            {
                "name": watcher.execute(text("SELECT pg_get_serial_sequence('games', 'id')"))
                .scalar_one()
                .split(".")[-1]
                .strip('"')
            },
        ).scalar_one()
        # The first writer still holds the board: the second has not inserted its row.
        assert drawn == first_id
    thread.join(timeout=120)
    assert "error" not in outcome, outcome
    assert outcome["id"] > first_id
    assert _as_pairs(_board(db)) == _replayed(db)
