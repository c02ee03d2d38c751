"""Tests from a mutation review of the wire protocol's serde (``referee.protocol.wire``,
``fast_encode``, ``messages``): each kills a mutant the suite let live.

What they pin, from docs/protocol.md and rules.md (expected values are worked out here from
those pages, never read back from the encoder):

- ``BotError`` is cut to its first 4,000 characters: one of exactly 4,000 travels whole.
- Seats are 0 and 1 in the default game: a ``winner`` of 2 (in ``GameEnd`` or in a view) is
  a malformed message.
- A ``TableView`` has one entry per seat in ``hand_sizes``, ``out`` and ``known``.
- ``GameEnd.loser`` (field 9) is the seat that lost a table game, seat 0 included.
- An ending the SDK does not know, in a final view too, is "the game is over", not an error.
- A clock's ``bank_ms`` is the bank left, told exactly, by the fast encoder too; and the fast
  encoder writes a per-seat count of 128 or more as protobuf reads it.
- The table's endings travel as ``END_REASON_LAST_HOLDER`` (4) and ``END_REASON_ALL_OUT`` (5);
  the other bot's score swaps wins and losses; a time in seconds is the nearest millisecond.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest

from kryt_proto.v1 import bot_pb2 as pb
from referee.protocol import wire
from referee.protocol.fast_encode import encode_decision_request
from referee.protocol.messages import (
    BotError,
    Clock,
    DecisionRequest,
    GameEnd,
    GameEndReason,
    SeriesScore,
    TimeControl,
)
from referee.rules import ClassicEndReason, ClassicGame, ClassicView, Game, View

LIMIT = 4000
"""protocol.md, BotError: the SDK sends the exception's text cut to its first 4,000
characters."""


def _finished_game(seed: int) -> Game:
    rng = random.Random(seed)
    game = Game.new(seed=seed, dealer=seed % 2)
    while not game.over:
        game.play(rng.choice(game.legal_actions()))
    return game


def _finished_table(seed: int, players: int) -> ClassicGame:
    rng = random.Random(seed)
    game = ClassicGame.new(seed=seed, dealer=seed % players, players=players)
    while not game.over:
        game.play(rng.choice(game.legal_actions()))
    return game


# ---------------------------------------------------------------------------- BotError bound


def test_a_bot_error_of_exactly_the_limit_travels_whole_and_one_more_is_cut() -> None:
    whole = "e" * LIMIT
    decoded = wire.decode_bot_message(wire.encode_bot_message(BotError(whole)))
    assert decoded == BotError(whole)

    longer = "e" * LIMIT + "Z"
    cut = wire.decode_bot_message(wire.encode_bot_message(BotError(longer)))
    assert isinstance(cut, BotError)
    assert cut.message.startswith(whole)
    assert "Z" not in cut.message  # the 4,001st character is not sent


# ---------------------------------------------------------------------------- GameEnd seats


def _game_end_bytes(**fields: object) -> bytes:
    end = pb.GameEnd(game_number=1, reason=pb.END_REASON_OUT)
    for name, value in fields.items():
        setattr(end, name, value)
    return pb.RefereeMessage(game_end=end).SerializeToString()


@pytest.mark.parametrize("winner", [2, 7, 2**31])
def test_a_game_end_naming_a_winner_outside_the_two_seats_is_malformed(winner: int) -> None:
    with pytest.raises(wire.MalformedMessageError, match=re.escape("game_end.winner")):
        wire.decode_referee_message(_game_end_bytes(winner=winner))


@pytest.mark.parametrize("winner", [0, 1])
def test_a_game_end_naming_either_seat_is_read(winner: int) -> None:
    decoded = wire.decode_referee_message(_game_end_bytes(winner=winner))
    assert isinstance(decoded, GameEnd) and decoded.winner == winner


def test_a_table_game_end_carries_the_loser_whichever_seat_it_is() -> None:
    losers: set[int] = set()
    for seed in range(200):
        game = _finished_table(seed, players=3)
        final = game.view(0)
        # rules-classic: the game is lost by the one seat that still holds cards.
        holding = [s for s in range(3) if not final.out[s]]
        if len(holding) != 1 or holding[0] in losers:
            continue
        loser = holding[0]
        losers.add(loser)
        end = GameEnd(
            game_number=seed + 1,
            winner=None,
            reason=GameEndReason.LAST_HOLDER,
            detail="",
            view=final,
            deck=(),
            score=SeriesScore(wins=1),
            loser=loser,
        )
        decoded = wire.decode_referee_message(wire.encode_referee_message(end))
        assert isinstance(decoded, GameEnd)
        assert decoded.loser == loser, seed
        assert decoded == end
        if losers == {0, 1, 2}:
            break
    assert 0 in losers and len(losers) >= 2  # seat 0, the value proto3 would omit, included


# ---------------------------------------------------------------------------- table views


def _table_request(view: ClassicView, edit: str) -> bytes:
    message = pb.RefereeMessage()
    request = message.decision_request
    request.request_id = 1
    request.table_view.CopyFrom(wire.table_view_to_pb(view))
    field = getattr(request.table_view, edit)
    del field[-1]
    return message.SerializeToString()


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("name", ["hand_sizes", "out", "known"])
def test_a_table_view_without_one_entry_per_seat_is_malformed(players: int, name: str) -> None:
    view = ClassicGame.new(seed=11, dealer=0, players=players).view(1)
    assert len(getattr(view, name)) == players
    with pytest.raises(wire.MalformedMessageError, match=re.escape(f"table_view.{name}")):
        wire.decode_referee_message(_table_request(view, name))


def _request_with_winner(winner: int) -> bytes:
    message = pb.RefereeMessage()
    request = message.decision_request
    request.request_id = 1
    request.view.CopyFrom(wire.view_to_pb(_finished_game(3).view(0)))
    request.view.winner = winner
    return message.SerializeToString()


@pytest.mark.parametrize("winner", [2, 9])
def test_a_view_naming_a_winner_outside_the_two_seats_is_malformed(winner: int) -> None:
    with pytest.raises(wire.MalformedMessageError, match=re.escape("view.winner")):
        wire.decode_referee_message(_request_with_winner(winner))
    # The SDK's lazy view says so when the field is first read.
    lazy = wire.decode_referee_message(_request_with_winner(winner), lazy=True)
    assert isinstance(lazy, DecisionRequest) and isinstance(lazy.view, View)
    with pytest.raises(wire.MalformedMessageError, match=re.escape("view.winner")):
        _ = lazy.view.outcome


# ---------------------------------------------------------------------------- unknown endings


def test_an_unknown_ending_in_the_final_view_is_the_end_of_the_game() -> None:
    final = _finished_game(5).view(1)
    assert final.over
    end = pb.GameEnd(game_number=3, reason=99)  # type: ignore[arg-type]  # a newer referee's
    end.view.CopyFrom(wire.view_to_pb(final))
    end.view.reason = 99  # type: ignore[assignment]
    decoded = wire.decode_referee_message(pb.RefereeMessage(game_end=end).SerializeToString())
    assert isinstance(decoded, GameEnd) and decoded.reason is None
    assert isinstance(decoded.view, View)
    assert decoded.view.over and decoded.view.reason is None
    assert decoded.view.hand == final.hand and decoded.view.history == final.history


def test_an_unknown_ending_in_a_final_table_view_is_the_end_of_the_game() -> None:
    final = _finished_table(4, players=3).view(2)
    assert final.over
    end = pb.GameEnd(game_number=3, reason=99)  # type: ignore[arg-type]
    end.table_view.CopyFrom(wire.table_view_to_pb(final))
    end.table_view.reason = 99  # type: ignore[assignment]
    decoded = wire.decode_referee_message(pb.RefereeMessage(game_end=end).SerializeToString())
    assert isinstance(decoded, GameEnd) and decoded.reason is None
    assert isinstance(decoded.view, ClassicView)
    assert decoded.view.over and decoded.view.reason is None
    assert decoded.view.history == final.history and decoded.view.movers == final.movers


# ---------------------------------------------------------------------------- clocks


def test_the_fast_encoder_tells_each_request_its_own_bank() -> None:
    view = Game.new(seed=9, dealer=0).view(1)
    # The bank shrinks by less than a second from one move to the next, and may grow by an
    # increment: every value must reach the bot as it is.
    for bank_ms in (10_000, 9_999, 9_001, 9_000, 8_999, 8_000, 8_400, 0, 1):
        data = encode_decision_request(1234, 2, view, Clock(move_ms=1000, bank_ms=bank_ms))
        decoded = wire.decode_referee_message(data)
        assert isinstance(decoded, DecisionRequest)
        assert decoded.clock == Clock(move_ms=1000, bank_ms=bank_ms)
        assert decoded.view == view


@pytest.mark.parametrize("size", [127, 128, 200, 255, 300])
def test_the_fast_encoder_writes_any_per_seat_count_as_protobuf_reads_it(size: int) -> None:
    # A varint of 128 or more takes two bytes: a count written as one byte would reach the
    # bot as another number (or break the message).
    view = replace(ClassicGame.new(seed=6, dealer=0, players=3).view(0), hand_sizes=(size, 1, 2))
    data = encode_decision_request(5, 1, view, Clock(move_ms=1000, bank_ms=1000))
    sent = pb.RefereeMessage.FromString(data).decision_request.table_view
    assert list(sent.hand_sizes) == [size, 1, 2]
    assert list(sent.out) == [False, False, False]
    assert [list(k.cards) for k in sent.known] == [[], [], []]


# ---------------------------------------------------------------------------- messages


def test_the_other_bots_score_swaps_wins_and_losses_and_keeps_draws() -> None:
    # protocol.md: a score is wins, draws and losses "from your point of view": the other
    # bot's wins are my losses, a draw is a draw for both.
    mine = SeriesScore(wins=5, draws=2, losses=3)
    assert mine.flipped() == SeriesScore(wins=3, draws=2, losses=5)
    assert mine.flipped().flipped() == mine


def test_the_tables_endings_have_their_own_wire_values() -> None:
    # protocol.md (the classic table): END_REASON_LAST_HOLDER is 4 (one player still holds
    # cards; he lost), END_REASON_ALL_OUT is 5 (nobody holds cards, a draw).
    assert pb.END_REASON_LAST_HOLDER == 4 and pb.END_REASON_ALL_OUT == 5
    assert GameEndReason.from_rules(ClassicEndReason.LAST_HOLDER) is GameEndReason.LAST_HOLDER
    assert GameEndReason.from_rules(ClassicEndReason.ALL_OUT) is GameEndReason.ALL_OUT
    view = ClassicGame.new(seed=2, dealer=0, players=3).view(1)
    for reason, value in ((ClassicEndReason.LAST_HOLDER, 4), (ClassicEndReason.ALL_OUT, 5)):
        final = replace(view, over=True, to_move=None, legal_actions=(), reason=reason)
        assert wire.table_view_to_pb(final).reason == value
        data = encode_decision_request(1, 1, final, Clock(move_ms=1000, bank_ms=0))
        assert pb.RefereeMessage.FromString(data).decision_request.table_view.reason == value
        sent = wire.table_view_to_pb(view)
        sent.reason = value  # type: ignore[assignment]
        assert wire.table_view_from_pb(sent).reason is reason
        end = GameEnd(1, None, GameEndReason.from_rules(reason), "", final, (), SeriesScore())
        assert pb.RefereeMessage.FromString(wire.encode_referee_message(end)).game_end.reason == (
            value
        )


def test_a_time_in_seconds_is_the_nearest_whole_millisecond() -> None:
    # 1.001 s is 1001 ms; as a float times 1000 it is 1000.9999999999999.
    control = TimeControl.from_seconds(1.001, 2.3, increment=0.0029)
    assert (control.move_ms, control.bank_ms, control.increment_ms) == (1001, 2300, 3)
