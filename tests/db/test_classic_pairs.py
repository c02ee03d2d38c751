"""A classic table's pairwise record (rules-classic.md): each winner beats the loser and
winners have no result between themselves; at the turn limit the seats that are out beat the
seats still holding cards, which draw with each other; in a drawn game every pair draws.

Checked on games the rules core plays, on the board a tournament's games make (live Elo,
tallies, W/D/L, on SQLite and PostgreSQL), and through migration 0011, which rebuilds the
classic boards the arena scored before (every pair without a result a draw, winners too).
"""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa
from alembic import command

from arena.db import (
    Database,
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    record_game,
    series_of_tournament,
    submit,
)
from arena.db.elo import PAIRS, RATINGS, board_tallies, elo_board, replayed_elo
from arena.db.migrate import alembic_config, head_revision, upgrade_engine
from arena.db.table_results import table_pair_scores
from leaderboard.standings import standings
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import ClassicGame, ClassicView
from tests.db.helpers import deck, new_submission


def _ended_game(players: int, want: str, out_at_limit: int = 0) -> ClassicGame:
    """A game the rules core played to the ending ``want`` ("loser", or "limit": the turn
    limit with ``out_at_limit`` seats out and two or more holding cards), found by seeded
    search."""
    for seed in range(2000):
        rng = random.Random(seed)
        limit = 10_000 if want == "loser" else rng.randrange(20, 90)
        dealt = ClassicGame.new(seed=seed, dealer=seed % players, players=players).deck
        assert dealt is not None
        game = ClassicGame.from_deck(dealt, seed % players, players=players, turn_limit=limit)
        while not game.over:
            game.play(rng.choice(game.legal_actions()))
        if want == "loser" and game.loser is not None:
            return game
        view: ClassicView = game.view(0)
        if want == "limit" and game.loser is None and sum(view.out) == out_at_limit:
            return game
    raise AssertionError(f"no {want} game found")


def _scores(game: ClassicGame) -> dict[frozenset[int], float]:
    """Each pair of seats with a result -> the lower seat's score."""
    seats = tuple(range(game.players))
    scored = table_pair_scores(game.dealer, seats, game.pairwise_results())
    return {frozenset((a, b)): s if a < b else 1.0 - s for a, b, s in scored}


@pytest.mark.parametrize("players", [3, 4])
def test_winners_have_no_result_between_themselves(players: int) -> None:
    game = _ended_game(players, "loser")
    loser = game.loser
    assert loser is not None
    scores = _scores(game)
    # Exactly the loser's pairs: every other seat beat him.
    assert set(scores) == {frozenset((s, loser)) for s in range(players) if s != loser}
    for pair, score in scores.items():
        assert score == (0.0 if min(pair) == loser else 1.0)


@pytest.mark.parametrize(("players", "out_at_limit"), [(3, 1), (4, 1), (4, 2)])
def test_at_the_turn_limit_holders_draw_and_seats_out_have_no_result(
    players: int, out_at_limit: int
) -> None:
    # Two seats out at a table of three would leave one holder: that ends the game.
    game = _ended_game(players, "limit", out_at_limit)
    assert game.reason is not None and game.reason.value == "turn limit"
    out = set(s for s, gone in enumerate(game.view(0).out) if gone)
    holders = set(range(players)) - out
    scores = _scores(game)
    expected: dict[frozenset[int], float] = {}
    for a in range(players):
        for b in range(a + 1, players):
            if a in out and b in out:
                continue  # two winners: no result
            if a in holders and b in holders:
                expected[frozenset((a, b))] = 0.5
            else:
                expected[frozenset((a, b))] = 1.0 if a in out else 0.0
    assert scores == expected
    assert len(scores) == players * (players - 1) // 2 - out_at_limit * (out_at_limit - 1) // 2


def test_a_drawn_game_is_a_draw_for_every_pair_and_two_seats_are_unchanged() -> None:
    # The dealer (seat 0, submission 10) plays last: he is second in each of his pairs.
    assert sorted(table_pair_scores(0, (10, 11, 12), ())) == [
        (11, 10, 0.5),
        (11, 12, 0.5),
        (12, 10, 0.5),
    ]
    assert table_pair_scores(0, (10, 11), ((0, 1),)) == [(11, 10, 0.0)]
    assert table_pair_scores(1, (10, 11), ()) == [(10, 11, 0.5)]


# ---------------------------------------------------------------------------- the board

T0 = 1_780_000_000.0


def _table(db: Database, seats: int = 3) -> tuple[int, tuple[int, ...]]:
    with db.session() as s:
        ids = []
        for seat in range(seats):
            row = submit(new_submission(f"seat{seat}"), session=s).submission
            assert row.id is not None
            ids.append(row.id)
        spec = SeriesSpec(ids[0], ids[1], 8, 5, ruleset="classic", seats=tuple(ids))
        tournament = create_tournament(TournamentSpec("table", 3, series=[spec]), session=s)
        assert tournament.id is not None
        (series,) = series_of_tournament(tournament.id, session=s)
        assert series.id is not None
        return series.id, tuple(ids)


def _record(
    ending: GameEndReason,
    *,
    loser: int | None = None,
    pairwise: tuple[tuple[int, int], ...] = (),
    forfeit: Forfeit | None = None,
) -> GameRecord:
    return GameRecord(
        deck=tuple(deck(7)),
        dealer=0,
        turn_limit=500,
        moves=(Move(1, "lead 6C", 0.01),),
        ending=ending,
        winner=None,
        forfeit=forfeit,
        players=("a", "b", "c"),
        started=T0,
        finished=T0 + 5,
        ruleset="classic",
        seats=3,
        loser=loser,
        pairwise=pairwise,
    )


def _play_table(db: Database) -> tuple[int, tuple[int, ...]]:
    """Four games at a table of three: seat 2 loses, a turn limit with seat 0 out, a draw
    for everyone, seat 1 forfeits."""
    series_id, ids = _table(db)
    records = [
        _record(GameEndReason.LAST_HOLDER, loser=2, pairwise=((0, 2), (1, 2))),
        _record(GameEndReason.TURN_LIMIT, pairwise=((0, 1), (0, 2))),
        _record(GameEndReason.ALL_OUT),
        _record(
            GameEndReason.TIMEOUT,
            loser=1,
            pairwise=((0, 1), (2, 1)),
            forfeit=Forfeit(1, GameEndReason.TIMEOUT, "", "slow"),
        ),
    ]
    with db.session() as s:
        for number, record in enumerate(records, start=1):
            record_game(record, GamePlace(series_id, number, 1, ids), session=s)
    return series_id, ids


def _wdl(db: Database) -> dict[int, tuple[int, int, int]]:
    with db.read_session() as s:
        board = standings(session=s, ruleset="classic", table_size=3)
    return {row.submission_id: (row.wins, row.draws, row.losses) for row in board.rows}


def test_the_board_counts_no_result_between_winners(db: Database) -> None:
    _, (a, b, c) = _play_table(db)
    # a: beats c (game 1), b and c (game 2), draws both (game 3), beats b (game 4).
    # b: beats c (game 1), loses to a and draws c (game 2), draws twice (game 3), loses to a
    #    and c (game 4). c: loses to a and b (game 1), loses to a and draws b (game 2), draws twice
    #    (game 3), beats b (game 4). No pair between two winners: a-b in game 1, a-c in game 4.
    assert _wdl(db) == {a: (4, 2, 0), b: (1, 3, 3), c: (1, 3, 3)}
    with db.read_session() as s:
        tallies = board_tallies(session=s, tournament_id=None, ruleset="classic", players=3)
        assert tallies is not None
        assert tallies.games == 4
        assert sum(p.games for p in tallies.pairs) == 2 + 3 + 3 + 2  # not 3 a game
        assert elo_board(session=s, tournament_id=None, ruleset="classic", players=3) == (
            replayed_elo(session=s, tournament_id=None, ruleset="classic", players=3)
        )


def test_migration_0011_rebuilds_the_classic_boards_of_three_or_four_seats(db: Database) -> None:
    _play_table(db)
    with db.read_session() as s:
        expected = elo_board(session=s, tournament_id=None, ruleset="classic", players=3)
    wdl = _wdl(db)
    with db.engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0010")
        # What the arena stored before: different ratings and a draw between winners.
        connection.execute(RATINGS.update().values(rating=1234.5))
        connection.execute(PAIRS.update().values(draws=PAIRS.c.draws + 1))
    assert upgrade_engine(db.engine, where="the test database") == head_revision()
    with db.read_session() as s:
        assert elo_board(session=s, tournament_id=None, ruleset="classic", players=3) == expected
    assert _wdl(db) == wdl
    with db.engine.connect() as connection:
        draws = connection.execute(sa.select(sa.func.sum(PAIRS.c.draws))).scalar_one()
    # b-c in game 2, every pair in game 3; on the board of all tournaments and the tournament's
    assert draws == 2 * 4
