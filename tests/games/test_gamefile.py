"""The game file format: every field of a record survives text and JSON, errors say where."""

from __future__ import annotations

from dataclasses import replace

import pytest

from leaderboard.gamefile import (
    GameEntry,
    GameFileError,
    Seat,
    format_games,
    from_json,
    parse_games,
    to_csv,
    to_json,
)
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import shuffled_deck

DECK = tuple(str(card) for card in shuffled_deck("kryt:test:deal:1"))
SEATS = (Seat("alpha", "1.0", "a" * 64), Seat("beta", "2.0-rc1", "b" * 64))


def entry(record: GameRecord, number: int = 1, **place: object) -> GameEntry:
    values: dict[str, object] = {
        "record": record,
        "seats": SEATS,
        "number": number,
        "attempt": 1,
        "tournament": 'weekly "cup"',
        "tournament_seed": 7,
        "tournament_status": "finished",
        "series_position": 0,
        "series_format": "standard",
        "series_games": 8,
        "series_seed": 123456789012,
        "series_status": "finished",
        "series_a_seat": 0,
        "game_id": number,
        "tournament_id": 1,
        "series_id": 1,
    }
    values.update(place)
    return GameEntry(**values)  # type: ignore[arg-type]


def records() -> list[GameRecord]:
    moves = (Move(0, "lead 6H", 0.012), Move(1, "cover 7H 6H", 1.0 / 3), Move(0, "take", 0.0))
    return [
        GameRecord(DECK, 0, 200, moves, GameEndReason.OUT, 1, started=1.7e9, finished=1.7e9 + 2),
        GameRecord(
            DECK,
            1,
            200,
            moves[:1],
            GameEndReason.CRASH,
            0,
            forfeit=Forfeit(
                1, GameEndReason.CRASH, 'he said "\\n"\x00', "KeyError: 'AS' at bot.py:3"
            ),
            started=1700000000.123456,
            finished=1700000001.5,
        ),
        GameRecord(
            DECK,
            0,
            200,
            moves,
            GameEndReason.DRAW_BY_FINAL_ANSWER,
            None,
            final_cover="AS",
            started=1.7e9,
            finished=1.7e9,
        ),
        GameRecord(
            DECK,
            0,
            200,
            (),
            GameEndReason.VOID,
            None,
            void_reason="docker: engine\nwent away",
            started=1.7e9,
            finished=1.7e9,
        ),
        GameRecord(
            DECK,
            1,
            200,
            (),
            GameEndReason.DOUBLE_FORFEIT,
            None,
            double_forfeit_detail='neither bot could start: a "crashed"; b\ntimed out',
            started=1.7e9,
            finished=1.7e9,
        ),
    ]


def test_text_round_trip_keeps_every_field() -> None:
    entries = [entry(r, n) for n, r in enumerate(records(), start=1)]
    text = format_games(entries)
    back = parse_games(text)
    named = ("alpha 1.0", "beta 2.0-rc1")
    assert back == [entry(replace(r, players=named), n) for n, r in enumerate(records(), start=1)]
    assert format_games(back) == text


def test_the_text_is_readable() -> None:
    text = format_games([entry(records()[1])])
    assert '[Tournament "weekly \\"cup\\""]' in text
    assert '[Result "1-0"]' in text and '[Ending "crash"]' in text
    assert "[ForfeitDetail \"KeyError: 'AS' at bot.py:3\"]" in text
    assert "\n1. 0 lead 6H {0.012}\n1-0\n" in text
    assert "\x00" not in text  # control characters are escaped


def test_json_round_trip_and_csv_rows() -> None:
    entries = [entry(r, n) for n, r in enumerate(records(), start=1)]
    assert format_games(from_json(to_json(entries))) == format_games(entries)
    lines = to_csv(entries).splitlines()
    assert lines[0].startswith("game_id,tournament,")
    assert len(lines) >= 1 + len(entries)
    assert "0:lead 6H;1:cover 7H 6H;0:take" in lines[1]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda t: t.replace('[Result "0-1"]', '[Result "2-0"]'), "differs from the Result header"),
        (lambda t: t.replace("2. 1 cover", "5. 1 cover"), "out of order"),
        (lambda t: t.replace("\n0-1\n", "\n"), "no result line"),
        (lambda t: t.replace('[KrytGameFile "1"]', '[KrytGameFile "9"]'), "version"),
        (lambda t: t.replace('[Dealer "0"]\n', ""), "missing header Dealer"),
        (lambda t: t.replace("lead 6H {0.012}", "lead 6H"), "expected 'N. SEAT"),
        (lambda t: t.replace('[Ending "out"]', '[Ending "won"]'), "unknown Ending"),
    ],
)
def test_a_damaged_file_is_refused_with_its_place(damage: object, message: str) -> None:
    text = format_games([entry(records()[0])])
    assert callable(damage)
    with pytest.raises(GameFileError, match=message) as caught:
        parse_games(damage(text), source="games.kgn")
    assert "games.kgn" in str(caught.value)


def test_inconsistent_records_are_refused() -> None:
    text = format_games([entry(records()[0])]).replace('[Result "0-1"]', '[Result "1/2-1/2"]')
    text = text.replace("\n0-1\n", "\n1/2-1/2\n")
    with pytest.raises(GameFileError, match="winner"):
        parse_games(text)


def test_a_tournament_name_with_a_control_character_is_refused() -> None:
    """A game file is text people read and databases store: a NUL (which PostgreSQL cannot
    store) or an escape sequence in the tournament's name is refused, naming the line."""
    for bad in ("cup\x00", "cup\x1b[2J"):
        text = format_games([entry(replace(records()[0], players=("alpha 1.0", "beta 2.0-rc1")))])
        text = text.replace(
            '[Tournament "weekly \\"cup\\""]',
            f'[Tournament "{bad}"]'.replace("\x00", "\\u0000").replace("\x1b", "\\u001b"),
        )
        with pytest.raises(GameFileError, match="Tournament must be a non-empty name"):
            parse_games(text)
