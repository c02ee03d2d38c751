"""Builders for test records: the referee's one game record and where it belongs."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    series_of_tournament,
    submit,
)
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move

RANKS = "6789TJQKA"
SUITS = "CDHS"
T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
TURN_LIMIT = 500


def deck(seed: int) -> list[str]:
    """A shuffled 36-card deck, reproducible from ``seed``."""
    cards = [r + s for s in SUITS for r in RANKS]
    random.Random(seed).shuffle(cards)
    return cards


def sha(text: str) -> str:
    """A content hash for a made-up submission."""
    return hashlib.sha256(text.encode()).hexdigest()


def new_submission(name: str, version: str = "1.0.0", **kw: object) -> NewSubmission:
    """A valid submission whose hash derives from name and version."""
    return NewSubmission(
        bot_name=name,
        version=version,
        sha256=sha(f"{name}@{version}"),
        submitted_by="tester",
        manifest={"name": name, "version": version, "language": "python", "entry": "bot.py"},
        **kw,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class World:
    """Ids of a minimal tournament: submissions a and b, one series between them."""

    sub_a: int
    sub_b: int
    tournament_id: int
    series_id: int


def build_world(db: Database, games: int = 10) -> World:
    """Two submissions, a tournament with one standard series of ``games`` games."""
    with db.session() as s:
        a = submit(new_submission("alpha"), session=s).submission
        b = submit(new_submission("bravo"), session=s).submission
        assert a.id is not None and b.id is not None
        t = create_tournament(
            TournamentSpec(
                name="cup",
                seed=7,
                config={"games": games},
                series=[SeriesSpec(a.id, b.id, games, 99)],
            ),
            session=s,
        )
        assert t.id is not None
        (series,) = series_of_tournament(t.id, session=s)
        assert series.id is not None
        return World(a.id, b.id, t.id, series.id)


def place(world: World, number: int, *, attempt: int = 1, swap: bool = False) -> GamePlace:
    """Game ``number`` (attempt ``attempt``) of the world's series; ``swap`` seats b first."""
    seats = (world.sub_b, world.sub_a) if swap else (world.sub_a, world.sub_b)
    return GamePlace(world.series_id, number, attempt, seats)


def game(
    world: World,
    number: int,
    *,
    attempt: int = 1,
    dealer: int = 0,
    winner: int | None = 0,
    swap: bool = False,
    **kw: Any,
) -> tuple[GameRecord, GamePlace]:
    """A complete, valid game record of the world's series, and its place.

    A game with a winner ends ``out``; without one, by the turn limit. ``kw`` overrides
    any field of the record (``ending``, ``forfeit``, ``moves``, ``void_reason``...).
    """
    start = T0.timestamp() + 60 * number
    fields: dict[str, Any] = {
        "deck": tuple(deck(number * 1000 + attempt)),
        "dealer": dealer,
        "turn_limit": TURN_LIMIT,
        "moves": moves(1 - dealer),
        "ending": GameEndReason.OUT if winner is not None else GameEndReason.TURN_LIMIT,
        "winner": winner,
        "referee_version": "0.1.0",
        "started": start,
        "finished": start + 3.0,
    }
    record = GameRecord(**(fields | kw))
    return record, place(world, number, attempt=attempt, swap=swap)


def moves(first: int) -> tuple[Move, ...]:
    """Three plausible moves, the first by seat ``first``."""
    return (
        Move(seat=first, action="lead 6C", seconds=0.012),
        Move(seat=1 - first, action="take", seconds=0.5),
        Move(seat=first, action="cover 7C lead 8D", seconds=1.25),
    )


def forfeit_game(
    world: World,
    number: int,
    seat: int,
    reason: GameEndReason = GameEndReason.TIMEOUT,
    *,
    offending_input: str = "b'\\x00garbage'",
    detail: str = "",
) -> tuple[GameRecord, GamePlace]:
    """A game lost by ``seat`` through a forfeit for ``reason``."""
    return game(
        world,
        number,
        winner=1 - seat,
        ending=reason,
        forfeit=Forfeit(seat, reason, offending_input, detail),
    )


def void(
    world: World, number: int, reason: str = "infra", **kw: Any
) -> tuple[GameRecord, GamePlace]:
    """A voided game (a failure on our side): no winner, the ``VOID`` ending, its reason."""
    return game(world, number, winner=None, ending=GameEndReason.VOID, void_reason=reason, **kw)


def table_names(url: str) -> list[str]:
    """The tables of the database at ``url``, sorted, read on an engine of its own."""
    from sqlalchemy import create_engine, inspect

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def replayable(record: GameRecord) -> GameRecord:
    """``record`` with moves the rules replay to its ending (what ``kryt games import`` and
    ``kryt replay --verify`` check): the same deal, dealer, winner, ending and forfeit; the
    recorded times (and CPU times) of its moves are kept in order where there are enough.

    A finished game (``out``) is searched among seeded random games for one its winner
    wins; a forfeit stops where the offender is to move; a void keeps as many legal moves
    as the record had."""
    from referee.replay import verify
    from referee.rules import Game

    def timed(number: int, seat: int, action: str) -> Move:
        if number < len(record.moves):
            old = record.moves[number]
            return Move(seat, action, old.seconds, old.cpu_seconds)
        return Move(seat, action, 0.01)

    for attempt in range(1000):
        rng = random.Random(attempt)
        game = Game.from_deck(list(record.deck), record.dealer, turn_limit=record.turn_limit)
        moves: list[Move] = []
        while not game.over:
            if record.forfeit is not None and game.to_move == record.forfeit.seat:
                break
            if record.ending is GameEndReason.VOID and len(moves) >= len(record.moves):
                break
            seat = game.to_move
            assert seat is not None  # the game is not over
            action = rng.choice(list(game.legal_actions()))
            game.play(action)
            moves.append(timed(len(moves), seat, str(action)))
        final = str(game.final_cover) if game.final_cover else None
        try:
            candidate = dataclasses.replace(record, moves=tuple(moves), final_cover=final)
        except ValueError:  # e.g. a final cover this ending cannot have: not this game
            continue
        if verify(candidate).ok:
            return candidate
    raise AssertionError(f"no legal game found for {record.ending} won by {record.winner}")
