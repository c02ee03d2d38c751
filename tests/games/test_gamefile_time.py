"""Each seat's time control survives the game file (text and JSON) as ``SeatNTime``."""

from __future__ import annotations

import pytest

from leaderboard.gamefile import GameFileError, format_games, from_json, parse_games, to_json
from referee.protocol.messages import GameEndReason, TimeControl
from referee.record import GameRecord, Move
from tests.games.test_gamefile import DECK, entry

CONTROLS = (
    TimeControl(move_ms=1000, bank_ms=10_000, increment_ms=100),
    TimeControl(move_ms=500, bank_ms=0, grace_ms=20, clock="cpu", increment_ms=2500),
)


def timed() -> GameRecord:
    return GameRecord(
        DECK,
        0,
        200,
        (Move(1, "lead 6H", 0.25),),
        GameEndReason.OUT,
        1,
        players=("alpha 1.0", "beta 2.0-rc1"),
        started=1.7e9,
        finished=1.7e9 + 1,
        time_controls=CONTROLS,
    )


def test_time_controls_round_trip_through_text_and_json() -> None:
    text = format_games([entry(timed())])
    assert '[Seat0Time "1+10+0.1 grace=0.05 clock=wall"]' in text
    assert '[Seat1Time "0.5+0+2.5 grace=0.02 clock=cpu"]' in text
    (back,) = parse_games(text)
    assert back.record.time_controls == CONTROLS
    (again,) = from_json(to_json([back]))
    assert again.record == back.record


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1+10+0.1", "Seat0Time: expected 'MOVE\\+BANK\\+INCREMENT grace=G clock=C'"),
        ("1+x grace=0.05 clock=wall", "the bank 'x' is not a number"),
        ("1+10 grace=0.05 clock=sundial", "clock must be one of"),
    ],
)
def test_a_bad_time_header_is_refused_with_its_place(value: str, message: str) -> None:
    text = format_games([entry(timed())])
    text = text.replace("1+10+0.1 grace=0.05 clock=wall", value)
    with pytest.raises(GameFileError, match=message) as caught:
        parse_games(text, source="games.kgn")
    assert "games.kgn" in str(caught.value)
