"""Recording games: whole or not at all, idempotent, voided games and their replays."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlmodel import select

import arena.db.games as games_module
from arena.db import (
    ConflictError,
    Database,
    Game,
    GamePlace,
    InvalidRecordError,
    NotFoundError,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    completed_game_numbers,
    counted_games,
    counted_numbers,
    create_tournament,
    games_of_series,
    get_game,
    get_series,
    next_attempt,
    record_game,
    running_counted_numbers,
    series_of_tournament,
    set_series_status,
    stored_record,
    void_game,
)
from referee.protocol.messages import GameEndReason
from referee.record import MAX_TEXT, Forfeit, GameRecord, Move
from tests.db.helpers import TURN_LIMIT, World, deck, forfeit_game, game, void


def _count_games(db: Database) -> int:
    with db.read_session() as s:
        return len(s.exec(select(Game)).all())


def test_record_and_read_back_every_field(db: Database, world: World) -> None:
    record, where = forfeit_game(
        world,
        3,
        seat=1,
        reason=GameEndReason.ILLEGAL_ACTION,
        offending_input="lead 6D",
        detail="6D is not in seat 1's hand",
    )
    with db.session() as s:
        result = record_game(record, where, session=s)
        assert result.created and result.game.id is not None
        game_id = result.game.id
    with db.read_session() as s:
        stored = get_game(game_id, session=s)
        assert (stored.series_id, stored.number, stored.attempt) == (world.series_id, 3, 1)
        assert (stored.dealer, stored.first_mover, stored.turn_limit) == (0, 1, TURN_LIMIT)
        assert stored.deck == list(record.deck) and len(stored.deck) == 36
        # Only what the bots played, in the one shape: no "auto" marker any more.
        assert stored.actions == [
            {"seat": 1, "action": "lead 6C", "seconds": 0.012},
            {"seat": 0, "action": "take", "seconds": 0.5},
            {"seat": 1, "action": "cover 7C lead 8D", "seconds": 1.25},
        ]
        assert stored.result == "seat0" and stored.end_reason == "illegal action"
        # The offending input and the referee's explanation are separate columns.
        assert stored.forfeit_seat == 1
        assert stored.forfeit_input == "lead 6D"
        assert stored.forfeit_detail == "6D is not in seat 1's hand"
        assert stored.final_cover is None
        assert not stored.voided and stored.void_reason is None
        assert stored.referee_version == "0.1.0"
        assert (stored.seat0_submission_id, stored.seat1_submission_id) == (
            world.sub_a,
            world.sub_b,
        )
        assert stored.started_at == datetime.fromtimestamp(record.started, tz=UTC)
        assert stored.finished_at == datetime.fromtimestamp(record.finished, tz=UTC)
        assert stored.finished_at.tzinfo is not None
        # Recording the first game marks the series as running, in the same transaction.
        assert get_series(world.series_id, session=s).status == "running"
        # Read back, it is the very record the referee wrote.
        back = stored_record(stored, ("alpha 1.0.0", "bravo 1.0.0"))
    assert back == replace(record, players=("alpha 1.0.0", "bravo 1.0.0"))
    assert back.forfeit == Forfeit(
        1, GameEndReason.ILLEGAL_ACTION, "lead 6D", "6D is not in seat 1's hand"
    )


def test_the_final_cover_is_a_column_not_a_move(db: Database, world: World) -> None:
    record, where = game(
        world, 2, winner=None, ending=GameEndReason.DRAW_BY_FINAL_ANSWER, final_cover="9H"
    )
    with db.session() as s:
        game_id = record_game(record, where, session=s).game.id
    assert game_id is not None
    with db.read_session() as s:
        stored = get_game(game_id, session=s)
        assert stored.final_cover == "9H" and stored.result == "draw"
        assert stored.end_reason == "draw by final answer"
        assert [a["action"] for a in stored.actions] == [m.action for m in record.moves]
        assert all(set(a) == {"seat", "action", "seconds"} for a in stored.actions)
        assert stored_record(stored) == record


def test_re_recording_is_idempotent(db: Database, world: World) -> None:
    record, where = game(world, 1)
    with db.session() as s:
        first = record_game(record, where, session=s)
        # What a resumed run reads back records as the same game (timestamps survive).
        read_back = stored_record(first.game)
    for again in (record, read_back):
        with db.session() as s:
            second = record_game(again, where, session=s)
        assert not second.created and second.game.id == first.game.id
    assert _count_games(db) == 1


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"winner": None}, "different end_reason, result;"),
        (
            {"winner": None, "ending": GameEndReason.DRAW_BY_FINAL_ANSWER, "final_cover": "9H"},
            "different end_reason, final_cover, result;",
        ),
        ({"turn_limit": TURN_LIMIT + 1}, "different turn_limit;"),
        ({"moves": ()}, "different actions;"),
    ],
)
def test_different_content_under_same_key_is_a_conflict(
    db: Database, world: World, changes: dict[str, Any], fragment: str
) -> None:
    with db.session() as s:
        record_game(*game(world, 1), session=s)
    with (
        pytest.raises(ConflictError, match=f"{fragment} recorded games are never overwritten"),
        db.session() as s,
    ):
        record_game(*game(world, 1, **changes), session=s)
    with db.read_session() as s:
        (stored,) = games_of_series(world.series_id, session=s)
        assert stored.result == "seat0" and stored.final_cover is None
        assert stored.turn_limit == TURN_LIMIT and len(stored.actions) == 3


def test_a_different_forfeit_detail_is_a_conflict(db: Database, world: World) -> None:
    with db.session() as s:
        record_game(*forfeit_game(world, 1, seat=0, detail="no reply in 2 s"), session=s)
    with pytest.raises(ConflictError, match="different forfeit_detail;"), db.session() as s:
        record_game(*forfeit_game(world, 1, seat=0, detail="no reply in 3 s"), session=s)


def test_failure_mid_write_records_nothing(
    db: Database, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("power cut between the game row and the series update")

    # The failure hits after the game row is flushed, before the transaction commits.
    monkeypatch.setattr(games_module, "_mark_series_running", explode)
    with pytest.raises(RuntimeError, match="power cut"), db.session() as s:
        record_game(*game(world, 1), session=s)
    assert _count_games(db) == 0
    with db.read_session() as s:
        assert get_series(world.series_id, session=s).status == "pending"
        assert completed_game_numbers(world.series_id, session=s) == set()


def test_caller_failure_rolls_back_the_whole_block(db: Database, world: World) -> None:
    with pytest.raises(KeyError), db.session() as s:
        record_game(*game(world, 1), session=s)
        record_game(*game(world, 2), session=s)
        raise KeyError("referee crashed before the block ended")
    assert _count_games(db) == 0


def test_voided_game_and_its_replay(db: Database, world: World) -> None:
    why = "sandbox could not start: docker daemon unreachable"
    with db.session() as s:
        record_game(*game(world, 1), session=s)
        record_game(*void(world, 2, why), session=s)
    with db.read_session() as s:
        assert completed_game_numbers(world.series_id, session=s) == {1}
        attempt = next_attempt(world.series_id, 2, session=s)
    assert attempt == 2
    # The same deal replayed.
    replay = game(world, 2, attempt=attempt, deck=tuple(deck(2 * 1000 + 1)))
    with db.session() as s:
        record_game(*replay, session=s)
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
        voided = everything[1]
        assert (voided.end_reason, voided.result, voided.void_reason) == ("void", None, why)
        assert voided.deck == everything[2].deck
        back = stored_record(voided)
    assert back.voided and back.void_reason == why and back.winner is None


def test_a_game_number_counts_once(db: Database, world: World) -> None:
    with db.session() as s:
        record_game(*game(world, 1), session=s)
    with pytest.raises(ConflictError, match="void that one"), db.session() as s:
        record_game(*game(world, 1, attempt=2), session=s)


def test_database_allows_one_counted_attempt_only(db: Database, world: World) -> None:
    # Bypass record_game's checks: the partial unique index itself must hold.
    with db.session() as s:
        first = record_game(*game(world, 1), session=s).game
    data = first.model_dump(exclude={"id"})
    with pytest.raises(ConflictError, match="constraint"), db.session() as s:
        s.add(Game(**(data | {"attempt": 2})))
    with db.session() as s:  # ...but a voided duplicate is fine
        s.add(Game(**(data | {"attempt": 2, "voided": True, "void_reason": "test"})))
    assert _count_games(db) == 2


def test_void_game_later(db: Database, world: World) -> None:
    record, where = game(world, 1)
    with db.session() as s:
        game_id = record_game(record, where, session=s).game.id
    assert game_id is not None
    with db.session() as s:
        void_game(game_id, "referee bug #12 found after the fact", session=s)
    with db.read_session() as s:
        assert completed_game_numbers(world.series_id, session=s) == set()
        stored = get_game(game_id, session=s)
        assert stored.voided
        # Read back, it is void with its reason; the deal and the moves are kept.
        back = stored_record(stored)
    assert back.ending is GameEndReason.VOID and back.winner is None
    assert back.void_reason == "referee bug #12 found after the fact"
    assert (back.deck, back.moves) == (record.deck, record.moves)
    with pytest.raises(ConflictError, match="already void"), db.session() as s:
        void_game(game_id, "again", session=s)
    with db.read_session() as s:
        assert get_game(game_id, session=s).void_reason == "referee bug #12 found after the fact"


def test_seats_must_match_the_series(db: Database, world: World) -> None:
    record, _ = game(world, 1)
    with pytest.raises(InvalidRecordError, match="do not match series"), db.session() as s:
        record_game(record, GamePlace(world.series_id, 1, 1, (world.sub_a, 777)), session=s)
    with pytest.raises(NotFoundError, match="no series with id 555"), db.session() as s:
        record_game(record, GamePlace(555, 1, 1, (world.sub_a, world.sub_b)), session=s)
    assert _count_games(db) == 0


def test_long_forfeit_texts_are_bounded(db: Database, world: World) -> None:
    record, where = forfeit_game(
        world,
        1,
        seat=0,
        reason=GameEndReason.MALFORMED_REPLY,
        offending_input="x" * 100_000,
        detail="y" * (MAX_TEXT + 5),
    )
    with db.session() as s:
        stored = record_game(record, where, session=s).game
        assert stored.forfeit_input == "x" * MAX_TEXT + "…[96000 more characters]"
        assert stored.forfeit_detail == "y" * MAX_TEXT + "…[5 more characters]"
        assert stored.end_reason == "malformed reply" and stored.result == "seat1"
        back = stored_record(stored)
    assert back.forfeit is not None and back.forfeit.offending_input.startswith("x" * MAX_TEXT)
    with db.session() as s:  # and re-recording it is still idempotent
        assert not record_game(record, where, session=s).created


def test_a_short_forfeit_text_is_kept_whole(db: Database, world: World) -> None:
    exact = "z" * MAX_TEXT
    with db.session() as s:
        stored = record_game(*forfeit_game(world, 1, seat=1, offending_input=exact), session=s)
        assert stored.game.forfeit_input == exact and stored.game.forfeit_detail is None


def test_counted_numbers_per_series_and_of_running_series(db: Database, world: World) -> None:
    with db.session() as s:
        other_t = create_tournament(
            TournamentSpec("other", 1, {}, [SeriesSpec(world.sub_a, world.sub_b, 4, 5)]),
            session=s,
        )
        assert other_t.id is not None
        (other_series,) = series_of_tournament(other_t.id, session=s)
        assert other_series.id is not None
        other = World(world.sub_a, world.sub_b, other_t.id, other_series.id)
        for number in (1, 3):
            record_game(*game(world, number), session=s)
        record_game(*void(world, 2), session=s)
        record_game(*game(other, 1), session=s)
    with db.read_session() as s:
        # More ids than one IN list holds: the lookup is chunked, and unknown ids are absent.
        many = [*range(10_000, 10_000 + 2 * games_module.IN_CHUNK), other.series_id]
        assert counted_numbers([world.series_id, *many], session=s) == {
            world.series_id: {1, 3},
            other.series_id: {1},
        }
        assert running_counted_numbers([world.tournament_id], session=s) == {
            world.series_id: {1, 3}
        }
        found = counted_games(world.series_id, [3, 2, 1, 7], session=s)
        assert [(g.number, g.attempt, g.voided) for g in found] == [(1, 1, False), (3, 1, False)]
    with db.session() as s:
        set_series_status(world.series_id, SeriesStatus.FINISHED, session=s)
    with db.read_session() as s:
        tournaments = [world.tournament_id, other.tournament_id]
        assert running_counted_numbers(tournaments, session=s) == {other.series_id: {1}}


_BAD_MOVE = Move(0, "take", 0.1)


@pytest.mark.parametrize(
    ("record_changes", "place_changes", "fragment"),
    [
        ({"deck": tuple(deck(1)[:35])}, {}, "36 cards"),
        ({"deck": (*deck(1)[:35], "10H")}, {}, "canonical"),
        ({"deck": (*deck(1)[:35], deck(1)[0])}, {}, "duplicate"),
        ({"dealer": 2}, {}, "dealer must be 0 or 1"),
        ({"turn_limit": 0}, {}, "turn_limit must be a positive integer"),
        ({"winner": 2}, {}, "winner must be 0, 1 or None"),
        ({"winner": True}, {}, "winner must be 0, 1 or None"),
        (
            {"winner": None, "ending": GameEndReason.DRAW_BY_FINAL_ANSWER, "final_cover": "10H"},
            {},
            "final_cover must be a card",
        ),
        ({"referee_version": ""}, {}, "referee_version"),
        ({"started": math.nan}, {}, "finite timestamps"),
        ({"moves": (replace(_BAD_MOVE, seat=2),)}, {}, "move seat must be 0 or 1"),
        ({"moves": (replace(_BAD_MOVE, action=""),)}, {}, "move action"),
        ({"moves": (replace(_BAD_MOVE, action="x" * 201),)}, {}, "move action"),
        ({"moves": (replace(_BAD_MOVE, seconds=-1.0),)}, {}, "move seconds"),
        ({"moves": (replace(_BAD_MOVE, seconds=math.inf),)}, {}, "move seconds"),
        ({}, {"number": -1}, "number must be"),
        ({}, {"attempt": 0}, "attempt must be"),
        ({}, {"seats": (1, 1)}, "two different"),
        (
            {"winner": None, "ending": GameEndReason.VOID, "void_reason": "cut \ud800"},
            {},
            "void_reason must be text UTF-8 can hold",
        ),
        (
            {
                "winner": 1,
                "ending": GameEndReason.CRASH,
                "forfeit": Forfeit(0, GameEndReason.CRASH, "", "bad \udcff"),
            },
            {},
            "forfeit detail must be text UTF-8 can hold",
        ),
    ],
)
def test_invalid_game_records_store_nothing(
    db: Database,
    world: World,
    record_changes: dict[str, Any],
    place_changes: dict[str, Any],
    fragment: str,
) -> None:
    record, where = game(world, 1, **record_changes)
    with pytest.raises(InvalidRecordError, match=fragment), db.session() as s:
        record_game(record, replace(where, **place_changes), session=s)
    assert _count_games(db) == 0


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"ending": GameEndReason.TIMEOUT}, "with forfeit None"),
        (
            {"forfeit": Forfeit(1, GameEndReason.CRASH), "ending": GameEndReason.TIMEOUT},
            "forfeit 'crash' but 'timeout'",
        ),
        ({"ending": GameEndReason.VOID, "winner": None}, "with void reason ''"),
        ({"void_reason": "why"}, "with void reason 'why'"),
    ],
)
def test_an_inconsistent_record_cannot_be_made(fields: dict[str, Any], fragment: str) -> None:
    base: dict[str, Any] = {
        "deck": tuple(deck(1)),
        "dealer": 0,
        "turn_limit": TURN_LIMIT,
        "moves": (),
        "ending": GameEndReason.OUT,
        "winner": 0,
    }
    with pytest.raises(ValueError, match=fragment):
        GameRecord(**(base | fields))
    with pytest.raises(ValueError, match="'out' is not a forfeit reason"):
        Forfeit(0, GameEndReason.OUT)


def test_a_nul_a_bot_wrote_is_stored_on_both_databases(db: Database, world: World) -> None:
    """PostgreSQL's text cannot hold NUL: what a bot sent or wrote is kept with U+FFFD there
    and on SQLite alike, instead of failing the game's recording again and again."""
    from arena.db.ladder import store_game_log

    record, where = forfeit_game(
        world,
        4,
        seat=0,
        reason=GameEndReason.CRASH,
        offending_input="take\x00",
        detail="bot reported an error: boom\x00\x00",
    )
    voided, voided_where = void(world, 5, reason="engine said \x00")
    with db.session() as s:
        game_id = record_game(record, where, session=s).game.id
        voided_id = record_game(voided, voided_where, session=s).game.id
        assert game_id is not None and voided_id is not None
        store_game_log(game_id, 0, world.sub_a, "out\x00put", session=s, limit=100)
    with db.read_session() as s:
        stored = get_game(game_id, session=s)
        assert stored.forfeit_input == "take\ufffd"
        assert stored.forfeit_detail == "bot reported an error: boom\ufffd\ufffd"
        assert get_game(voided_id, session=s).void_reason == "engine said \ufffd"
        back = stored_record(stored)
        assert back.forfeit is not None and back.forfeit.offending_input == "take\ufffd"
    with db.read_session() as s:
        from arena.db.models import GameLog

        (log,) = s.exec(select(GameLog).where(GameLog.game_id == game_id)).all()
        assert log.text == "out\ufffdput"
