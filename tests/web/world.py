"""A small results database for the leaderboard tests, filled through ``arena.db``.

Games are real: they are played with the rules engine (seeded random moves), so the replay
viewer can step through them. The world has a won game, a draw by final answer (with the
referee's automatic cover stored in its own ``final_cover`` column), a forfeit, a voided attempt, a
finished tournament with a stored rating snapshot and a second tournament half played.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    record_game,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    submit,
)
from arena.db.enums import SeriesStatus
from arena.db.leases import LeaseHolder, acquire_lease
from leaderboard.standings import refit_and_store
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import EndReason, Game

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
BOTS = ("alpha", "bravo", "charlie")
RUNNING_NAME = "summer <cup> & co"
"""Markup in a name: pages must show it escaped."""

RUNNING_HOLDER = LeaseHolder("webrun01", "another-host", 4242, None)
"""The run that plays the second tournament of the world."""


@dataclass(frozen=True)
class PlayedGame:
    """A game played with the engine, in the record's form, plus what the tests check.

    ``ending`` is ``None`` for a game cut short (``stop_after``): it has no rules ending yet.
    """

    deck: list[str]
    dealer: int
    moves: list[Move]
    winner: int | None
    ending: GameEndReason | None
    final_cover: str | None = None


def play(seed: int, dealer: int, *, stop_after: int | None = None) -> PlayedGame:
    """A game of seeded random moves; ``stop_after`` cuts it short (for forfeits, voids)."""
    game = Game.new(seed=seed, dealer=dealer)
    rng = random.Random(seed)
    moves: list[Move] = []
    while not game.over and (stop_after is None or len(moves) < stop_after):
        seat = game.to_move
        assert seat is not None
        action = game.play_random(rng)
        moves.append(Move(seat, str(action), 0.001 * (len(moves) % 7)))
    if not game.over:
        return PlayedGame([str(c) for c in game.deck or ()], dealer, moves, None, None)
    assert game.reason is not None
    # The referee's automatic final cover of a drawn game is not a move: it has a field.
    final = game.final_cover
    return PlayedGame(
        [str(c) for c in game.deck or ()],
        dealer,
        moves,
        game.outcome,
        GameEndReason.from_rules(game.reason),
        None if final is None else str(final),
    )


def drawn_by_final_answer() -> tuple[int, int]:
    """A (seed, dealer) whose random game ends in a draw by final answer."""
    for seed in range(5000):
        dealer = seed % 2
        game = Game.new(seed=seed, dealer=dealer)
        rng = random.Random(seed)
        while not game.over:
            game.play_random(rng)
        if game.reason is EndReason.DRAW_BY_FINAL_ANSWER:
            return seed, dealer
    raise AssertionError("no drawn game among 5000 seeds")


@dataclass
class World:
    """Ids of everything the tests look at."""

    submissions: dict[str, int]
    finished_tournament: int
    running_tournament: int
    series: list[int]
    won_game: int = 0
    drawn_game: int = 0
    forfeit_game: int = 0
    voided_game: int = 0
    game_ids: list[int] = field(default_factory=list)
    planned_running: int = 0
    played_running: int = 0


def _record(
    db: Database,
    series_id: int,
    number: int,
    seats: tuple[int, int],
    played: PlayedGame,
    *,
    at: datetime,
    forfeit: Forfeit | None = None,
    voided: bool = False,
    attempt: int = 1,
) -> int:
    winner, ending = played.winner, played.ending
    if forfeit is not None:
        winner, ending = 1 - forfeit.seat, forfeit.reason
    if voided:
        winner, ending = None, GameEndReason.VOID
    assert ending is not None, "a game cut short needs a forfeit or a void"
    started = at.timestamp()
    record = GameRecord(
        deck=tuple(played.deck),
        dealer=played.dealer,
        turn_limit=1000,
        moves=tuple(played.moves),
        ending=ending,
        winner=winner,
        forfeit=forfeit,
        final_cover=played.final_cover,
        void_reason="the sandbox host went away" if voided else "",
        referee_version="test-referee 1",
        started=started,
        finished=started + 2.0,
    )
    where = GamePlace(series_id, number, attempt, seats)
    with db.session() as session:
        game = record_game(record, where, session=session).game
        assert game.id is not None
        return game.id


def build_world(db: Database) -> World:
    """Fill ``db``: see the module docstring."""
    with db.session() as s:
        subs = {}
        for name in BOTS:
            new = NewSubmission(
                bot_name=name,
                version="1.0.0",
                sha256=hashlib.sha256(name.encode()).hexdigest(),
                submitted_by="tester",
                manifest={"name": name, "description": f"the {name} test bot"},
            )
            row = submit(new, session=s).submission
            assert row.id is not None
            subs[name] = row.id
        a, b, c = (subs[n] for n in BOTS)
        done = create_tournament(
            TournamentSpec(
                name="spring cup",
                seed=11,
                config={"turn_limit": 1000},
                series=[SeriesSpec(a, b, 5, 1), SeriesSpec(a, c, 5, 2), SeriesSpec(b, c, 5, 3)],
            ),
            session=s,
        )
        running = create_tournament(
            TournamentSpec(name=RUNNING_NAME, seed=12, config={}, series=[SeriesSpec(b, c, 6, 4)]),
            session=s,
        )
        assert done.id is not None and running.id is not None
        series = [x.id for x in series_of_tournament(done.id, session=s) if x.id is not None]
        (running_series,) = series_of_tournament(running.id, session=s)
        assert running_series.id is not None
    world = World(subs, done.id, running.id, series)
    pairs = [(a, b), (a, c), (b, c)]
    at = T0
    seed = 100
    for series_id, (x, y) in zip(series, pairs, strict=True):
        for number in range(4):
            seats = (x, y) if number % 2 == 0 else (y, x)
            at += timedelta(minutes=1)
            seed += 1
            world.game_ids.append(
                _record(db, series_id, number, seats, play(seed, number % 2), at=at)
            )
    world.won_game = world.game_ids[0]
    # A drawn game by final answer, as an extra game of the first series.
    draw_seed, draw_dealer = drawn_by_final_answer()
    at += timedelta(minutes=1)
    world.drawn_game = _record(db, series[0], 4, (a, b), play(draw_seed, draw_dealer), at=at)
    # charlie times out in the middle of a game: the actions stop where it failed to answer.
    partial = play(999, 0, stop_after=9)
    offender = partial.moves[-1].seat if partial.moves else 0
    offender = 1 - offender
    at += timedelta(minutes=1)
    world.forfeit_game = _record(
        db,
        series[2],
        4,
        (b, c) if offender == 1 else (c, b),
        partial,
        at=at,
        forfeit=Forfeit(offender, GameEndReason.TIMEOUT, detail="no reply within 2.0 s"),
    )
    # A voided attempt, replayed and counted as attempt 2.
    at += timedelta(minutes=1)
    world.voided_game = _record(
        db, series[1], 4, (a, c), play(555, 0, stop_after=5), at=at, voided=True
    )
    at += timedelta(minutes=1)
    world.game_ids.append(_record(db, series[1], 4, (a, c), play(555, 0), at=at, attempt=2))
    with db.session() as s:
        for series_id in series:
            set_series_status(series_id, SeriesStatus.FINISHED, session=s)
        set_tournament_status(done.id, TournamentStatus.FINISHED, session=s)
    refit_and_store(db, tournament_id=done.id)
    refit_and_store(db)
    # The second tournament: 3 of 6 games played so far.
    for number in range(3):
        at += timedelta(minutes=1)
        seats = (b, c) if number % 2 == 0 else (c, b)
        _record(db, running_series.id, number, seats, play(700 + number, number % 2), at=at)
    with db.session() as s:
        set_tournament_status(running.id, TournamentStatus.RUNNING, session=s)
        # A live run plays it (on another host, so nothing here can judge it dead): without
        # one, the pages show it stopped, as `kryt tournament status` does.
        acquire_lease(running.id, RUNNING_HOLDER, ttl=timedelta(days=1), session=s)
    world.planned_running, world.played_running = 6, 3
    return world
