"""Builders for test records."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from leaderboard.db import (
    Database,
    Forfeit,
    GameRecord,
    GameResult,
    Move,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    series_of_tournament,
    submit,
)

RANKS = "6789TJQKA"
SUITS = "CDHS"
T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


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


def game(
    world: World,
    number: int,
    *,
    attempt: int = 1,
    dealer: int = 0,
    result: GameResult | None = GameResult.SEAT0,
    swap: bool = False,
    **kw: object,
) -> GameRecord:
    """A complete, valid game record of the world's series."""
    seats = (world.sub_b, world.sub_a) if swap else (world.sub_a, world.sub_b)
    fields: dict[str, Any] = {
        "series_id": world.series_id,
        "number": number,
        "attempt": attempt,
        "dealer": dealer,
        "deck": deck(number * 1000 + attempt),
        "moves": kw.pop("moves") if "moves" in kw else _moves(1 - dealer),
        "result": result,
        "end_reason": "out",
        "seat_submission_ids": seats,
        "referee_version": "0.1.0",
        "started_at": T0 + timedelta(minutes=number),
        "finished_at": T0 + timedelta(minutes=number, seconds=3),
    }
    return GameRecord(**(fields | kw))


def _moves(first: int) -> list[Move]:
    return [
        Move(seat=first, action="lead 6C", seconds=0.012),
        Move(seat=1 - first, action="take", seconds=0.5),
        Move(seat=first, action="cover 7C lead 8D", seconds=1.25, auto=False),
    ]


def forfeit_game(world: World, number: int, seat: int, reason: str = "timeout") -> GameRecord:
    """A game lost by ``seat`` through a forfeit."""
    return game(
        world,
        number,
        result=GameResult.win_for(1 - seat),
        end_reason="forfeit",
        forfeit=Forfeit(seat=seat, reason=reason, offending_input="b'\\x00garbage'"),
    )
