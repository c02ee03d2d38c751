"""Recording games: whole or not at all, idempotent, voided games and their replays."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from sqlmodel import select

import leaderboard.db.games as games_module
from leaderboard.db import (
    ConflictError,
    Database,
    Forfeit,
    Game,
    GameResult,
    InvalidRecordError,
    Move,
    NotFoundError,
    completed_game_numbers,
    game_moves,
    games_of_series,
    get_game,
    get_series,
    next_attempt,
    record_game,
    void_game,
)
from leaderboard.db.records import MAX_OFFENDING_INPUT
from tests.db.helpers import World, deck, forfeit_game, game


def _count_games(db: Database) -> int:
    with db.read_session() as s:
        return len(s.exec(select(Game)).all())


def test_record_and_read_back_every_field(db: Database, world: World) -> None:
    record = forfeit_game(world, 3, seat=1, reason="illegal_action")
    with db.session() as s:
        result = record_game(record, session=s)
        assert result.created and result.game.id is not None
        game_id = result.game.id
    with db.read_session() as s:
        stored = get_game(game_id, session=s)
        assert (stored.series_id, stored.number, stored.attempt) == (world.series_id, 3, 1)
        assert (stored.dealer, stored.first_mover) == (0, 1)
        assert stored.deck == list(record.deck) and len(stored.deck) == 36
        assert game_moves(stored) == list(record.moves)
        assert stored.actions[2] == {
            "seat": 1,
            "action": "cover 7C lead 8D",
            "seconds": 1.25,
            "auto": False,
        }
        assert stored.result == "seat0" and stored.end_reason == "forfeit"
        assert (stored.forfeit_seat, stored.forfeit_reason) == (1, "illegal_action")
        assert stored.forfeit_input == "b'\\x00garbage'"
        assert not stored.voided and stored.void_reason is None
        assert stored.referee_version == "0.1.0"
        assert (stored.seat0_submission_id, stored.seat1_submission_id) == (
            world.sub_a,
            world.sub_b,
        )
        assert stored.started_at == record.started_at
        assert stored.finished_at == record.finished_at
        assert stored.finished_at.tzinfo is not None
        # Recording the first game marks the series as running, in the same transaction.
        assert get_series(world.series_id, session=s).status == "running"


def test_re_recording_is_idempotent(db: Database, world: World) -> None:
    record = game(world, 1)
    with db.session() as s:
        first = record_game(record, session=s)
    # Same game in another time zone representation: still the same game.
    shifted = replace(
        record,
        started_at=record.started_at.astimezone(timezone(timedelta(hours=3))),
        finished_at=record.finished_at.astimezone(timezone(timedelta(hours=-5))),
    )
    for again in (record, shifted):
        with db.session() as s:
            second = record_game(again, session=s)
        assert not second.created and second.game.id == first.game.id
    assert _count_games(db) == 1


def test_different_content_under_same_key_is_a_conflict(db: Database, world: World) -> None:
    with db.session() as s:
        record_game(game(world, 1), session=s)
    with (
        pytest.raises(ConflictError, match=r"different result.*never overwritten"),
        db.session() as s,
    ):
        record_game(game(world, 1, result=GameResult.DRAW), session=s)
    with db.read_session() as s:
        (stored,) = games_of_series(world.series_id, session=s)
        assert stored.result == "seat0"


def test_failure_mid_write_records_nothing(
    db: Database, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("power cut between the game row and the series update")

    # The failure hits after the game row is flushed, before the transaction commits.
    monkeypatch.setattr(games_module, "_mark_series_running", explode)
    with pytest.raises(RuntimeError, match="power cut"), db.session() as s:
        record_game(game(world, 1), session=s)
    assert _count_games(db) == 0
    with db.read_session() as s:
        assert get_series(world.series_id, session=s).status == "pending"
        assert completed_game_numbers(world.series_id, session=s) == set()


def test_caller_failure_rolls_back_the_whole_block(db: Database, world: World) -> None:
    with pytest.raises(KeyError), db.session() as s:
        record_game(game(world, 1), session=s)
        record_game(game(world, 2), session=s)
        raise KeyError("referee crashed before the block ended")
    assert _count_games(db) == 0


def test_voided_game_and_its_replay(db: Database, world: World) -> None:
    with db.session() as s:
        record_game(game(world, 1), session=s)
        voided = game(
            world,
            2,
            result=None,
            end_reason="infrastructure",
            voided=True,
            void_reason="sandbox could not start: docker daemon unreachable",
        )
        record_game(voided, session=s)
    with db.read_session() as s:
        assert completed_game_numbers(world.series_id, session=s) == {1}
        attempt = next_attempt(world.series_id, 2, session=s)
    assert attempt == 2
    replay = game(world, 2, attempt=attempt, deck=deck(2 * 1000 + 1))  # same deal replayed
    with db.session() as s:
        record_game(replay, session=s)
    with db.read_session() as s:
        assert completed_game_numbers(world.series_id, session=s) == {1, 2}
        counted = games_of_series(world.series_id, session=s)
        assert [(g.number, g.attempt) for g in counted] == [(1, 1), (2, 2)]
        everything = games_of_series(world.series_id, session=s, include_voided=True)
        assert [(g.number, g.attempt, g.voided) for g in everything] == [
            (1, 1, False),
            (2, 1, True),
            (2, 2, False),
        ]
        assert everything[1].void_reason.startswith("sandbox could not start")  # type: ignore[union-attr]
        assert everything[1].deck == everything[2].deck


def test_a_game_number_counts_once(db: Database, world: World) -> None:
    with db.session() as s:
        record_game(game(world, 1), session=s)
    with pytest.raises(ConflictError, match="void that one"), db.session() as s:
        record_game(game(world, 1, attempt=2), session=s)


def test_database_allows_one_counted_attempt_only(db: Database, world: World) -> None:
    # Bypass record_game's checks: the partial unique index itself must hold.
    with db.session() as s:
        first = record_game(game(world, 1), session=s).game
    data = first.model_dump(exclude={"id"})
    with pytest.raises(ConflictError, match="constraint"), db.session() as s:
        s.add(Game(**(data | {"attempt": 2})))
    with db.session() as s:  # ...but a voided duplicate is fine
        s.add(Game(**(data | {"attempt": 2, "voided": True, "void_reason": "test"})))
    assert _count_games(db) == 2


def test_void_game_later(db: Database, world: World) -> None:
    with db.session() as s:
        game_id = record_game(game(world, 1), session=s).game.id
    assert game_id is not None
    with db.session() as s:
        void_game(game_id, "referee bug #12 found after the fact", session=s)
    with db.read_session() as s:
        assert completed_game_numbers(world.series_id, session=s) == set()
        assert get_game(game_id, session=s).voided
    with pytest.raises(ConflictError, match="already void"), db.session() as s:
        void_game(game_id, "again", session=s)
    with db.read_session() as s:
        assert get_game(game_id, session=s).void_reason == "referee bug #12 found after the fact"


def test_seats_must_match_the_series(db: Database, world: World) -> None:
    with pytest.raises(InvalidRecordError, match="do not match series"), db.session() as s:
        record_game(game(world, 1, seat_submission_ids=(world.sub_a, 777)), session=s)
    with pytest.raises(NotFoundError, match="no series with id 555"), db.session() as s:
        record_game(game(world, 1, series_id=555), session=s)
    assert _count_games(db) == 0


def test_long_offending_input_is_bounded(db: Database, world: World) -> None:
    record = game(
        world,
        1,
        result=GameResult.SEAT1,
        end_reason="forfeit",
        forfeit=Forfeit(seat=0, reason="malformed_reply", offending_input="x" * 100_000),
    )
    with db.session() as s:
        stored = record_game(record, session=s).game
        assert stored.forfeit_input is not None
        assert stored.forfeit_input.startswith("x" * MAX_OFFENDING_INPUT)
        assert stored.forfeit_input.endswith("[96000 more characters]")
    with db.session() as s:  # and re-recording it is still idempotent
        assert not record_game(record, session=s).created


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"deck": deck(1)[:35]}, "36 cards"),
        ({"deck": [*deck(1)[:35], "10H"]}, "canonical"),
        ({"deck": [*deck(1)[:35], deck(1)[0]]}, "duplicate"),
        ({"dealer": 2, "moves": []}, "dealer must be 0 or 1"),
        ({"number": -1}, "game number"),
        ({"attempt": 0}, "attempt"),
        ({"result": None}, "needs a result"),
        ({"void_reason": "why"}, "not voided"),
        ({"voided": True}, "void_reason"),
        ({"forfeit": Forfeit(0, "timeout")}, "result must be a win for seat 1"),
        ({"started_at": datetime(2026, 1, 1)}, "timezone-aware"),
        ({"end_reason": ""}, "end_reason"),
        ({"seat_submission_ids": (1, 1)}, "two different"),
    ],
)
def test_invalid_game_records(changes: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidRecordError, match=fragment):
        kw = dict(changes)
        number = kw.pop("number", 1)
        game(World(sub_a=1, sub_b=2, tournament_id=3, series_id=4), number, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((2, "take", 0.1), "seat must be 0 or 1"),
        ((0, "", 0.1), "action"),
        ((0, "take", -1.0), "seconds"),
        ((0, "take", float("inf")), "seconds"),
    ],
)
def test_invalid_moves(args: tuple[object, ...], fragment: str) -> None:
    with pytest.raises(InvalidRecordError, match=fragment):
        Move(*args)  # type: ignore[arg-type]


def test_forfeit_reason_must_be_an_identifier() -> None:
    with pytest.raises(InvalidRecordError, match="lowercase identifier"):
        Forfeit(0, "Time Out!")
