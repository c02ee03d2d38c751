"""The game file against hostile text (audit of the records, second round): a move's action
cannot smuggle lines or escape sequences into a file, a header value cannot split its line,
CPU times and games voided after they were recorded survive a round trip, JSON imports are
typed strictly, a game twice in one file is named with both lines, and the CSV is safe to
open in a spreadsheet."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from leaderboard.gamefile import (
    GameEntry,
    GameFieldError,
    GameFileError,
    Seat,
    csv_cell,
    format_games,
    from_json,
    json_text,
    parse_games,
    to_csv,
    to_json,
)
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from referee.rules import shuffled_deck

DECK = tuple(str(card) for card in shuffled_deck("kryt:test:records:1"))
SEATS = (Seat("alpha", "1.0", "a" * 64), Seat("beta", "2.0", "b" * 64))
NAMES = (SEATS[0].label, SEATS[1].label)
MOVES = (Move(0, "lead 6H", 0.012), Move(1, "take", 0.5))


def entry(
    moves: tuple[Move, ...] = MOVES, number: int = 1, attempt: int = 1, **fields: object
) -> GameEntry:
    record = GameRecord(
        DECK,
        0,
        200,
        moves,
        GameEndReason.OUT,
        1,
        players=NAMES,
        started=1.7e9,
        finished=1.7e9 + 2,
    )
    values: dict[str, object] = {
        "record": record,
        "seats": SEATS,
        "number": number,
        "attempt": attempt,
        "tournament": "cup",
        "tournament_seed": 7,
        "tournament_status": "finished",
        "series_position": 0,
        "series_format": "standard",
        "series_games": 4,
        "series_seed": 99,
        "series_status": "finished",
        "series_a_seat": 0,
    }
    return GameEntry(**(values | fields))  # type: ignore[arg-type]


def json_with(change: object) -> str:
    """The JSON export of one game, changed by ``change(game)`` (in place)."""
    games = json.loads(to_json([entry()]))
    assert callable(change)
    change(games[0])
    return json.dumps(games)


# -- actions ------------------------------------------------------------------------------


HOSTILE_ACTIONS = [
    ('lead 9S\n1-0\n\n[KrytGameFile "1"]', "U+000A"),  # a fake record after a fake result
    ("lead \x1b]0;PWNED\x07\x1b[31m9S", "U+001B"),  # retitles and recolours a terminal
    ("lead 9S\r", "U+000D"),
    ("lead \u202e9S", "U+202E"),  # reverses the rest of the line on screen
    ("lead\u20289S", "U+2028"),  # a line separator to str.splitlines
    ("lead\x859S", "U+0085"),
    ("lead\t9S", "U+0009"),
]


@pytest.mark.parametrize(("action", "code"), HOSTILE_ACTIONS)
def test_a_json_action_with_a_control_character_is_refused(action: str, code: str) -> None:
    text = json_with(lambda g: g["Moves"][1].update(action=action))
    with pytest.raises(GameFieldError) as caught:
        from_json(text, source="games.json")
    message = str(caught.value)
    assert message.startswith("games.json[0]: move 2: a move's action") and code in message
    assert "\n" not in message and "\x1b" not in message and "\u202e" not in message


@pytest.mark.parametrize(("action", "code"), HOSTILE_ACTIONS)
def test_such_an_action_already_stored_exports_to_one_line_that_import_refuses(
    action: str, code: str
) -> None:
    """A database filled by an older import may hold such a move: its export stays a valid
    file of one record (the action is a JSON string on its line), whose import refuses the
    action naming the line, instead of reading a fake record or a broken line."""
    text = format_games([entry((MOVES[0], Move(1, action, 0.5)))])
    lines = text.splitlines()
    assert lines.count("0-1") == 1 and sum(ln.startswith("[KrytGameFile") for ln in lines) == 1
    assert not any(char in text for char in "\x1b\r\u202e\u2028\x85\t")
    line = next(n for n, ln in enumerate(lines, start=1) if ln.startswith("2. 1 "))
    with pytest.raises(GameFieldError) as caught:
        parse_games(text, source="old.kgn")
    assert str(caught.value).startswith(f"old.kgn:{line}: move 2: a move's action")
    assert code in str(caught.value)


def test_a_raw_control_character_in_a_move_line_is_refused() -> None:
    """A file an older export wrote with the bot's bytes as they were."""
    text = format_games([entry()]).replace("2. 1 take {0.5}", "2. 1 take\x1b[2J {0.5}")
    line = text.splitlines().index("2. 1 take\x1b[2J {0.5}") + 1
    with pytest.raises(GameFieldError) as caught:
        parse_games(text, source="raw.kgn")
    assert str(caught.value) == (
        f"raw.kgn:{line}: move 2: a move's action may not hold control or format characters"
        " (U+001B), got 'take\\x1b[2J'"
    )


@pytest.mark.parametrize("action", ["lead {9S}", "take}", '"quoted" take', " lead 9S", "take "])
def test_an_action_a_plain_line_cannot_hold_is_written_quoted(action: str) -> None:
    """Braces, a leading quote or spaces at either end: the action is written as a JSON
    string, and the file imports back to the same game (no more refused text export)."""
    games = [entry((MOVES[0], Move(1, action, 0.5)))]
    text = format_games(games)
    assert f"\n2. 1 {json.dumps(action)} {{0.5}}\n" in text
    assert parse_games(text) == games
    assert format_games(from_json(to_json(games))) == text


def test_an_ordinary_action_is_written_as_it_is() -> None:
    text = format_games([entry()])
    assert "\n1. 0 lead 6H {0.012}\n2. 1 take {0.5}\n0-1\n" in text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('2. 1 "take {0.5}', "expected 'N. SEAT ACTION"),
        ('2. 1 "ta\\qke" {0.5}', "bad quoted action"),
        ('2. 1 "" {0.5}', "1 to 200 characters"),
        ('2. 1 "\\ud800" {0.5}', r"\(U\+D800\)"),
    ],
)
def test_a_bad_quoted_action_is_refused_with_its_line(line: str, message: str) -> None:
    text = format_games([entry()]).replace("2. 1 take {0.5}", line)
    with pytest.raises(GameFileError, match=message) as caught:
        parse_games(text, source="q.kgn")
    assert str(caught.value).startswith("q.kgn:")


# -- header values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["a\u2028b", "a\u2029b", "a\x85b", "a\u202eb", "a\x1bb\x7f", "tag\U000e0041"]
)  # a lone surrogate ("\ud800") is written escaped too, but no database can store it: refused
def test_a_header_value_cannot_split_or_reorder_its_line(text: str) -> None:
    """JSON leaves U+2028, U+0085 or a bidi override as they are; str.splitlines splits at the
    first two, an editor reorders at the last. Every control, format or separator character
    of a header value is written as an escape, and reads back the same."""
    forfeit = Forfeit(0, GameEndReason.ILLEGAL_ACTION, text, f"said {text}")
    game = entry()
    game = replace(game, record=replace(game.record, ending=forfeit.reason, forfeit=forfeit))
    written = format_games([game])
    assert all(ch.isprintable() or ch == "\n" for ch in written), ascii(written)
    assert json.loads(json_text(text)) == text
    assert parse_games(written) == [game]


# -- CPU times --------------------------------------------------------------------------------


def cpu_game() -> GameEntry:
    return entry((Move(0, "lead 6H", 0.012, 0.000635), Move(1, "take", 0.5, 1.0 / 3)))


def test_cpu_times_survive_text_and_json() -> None:
    game = cpu_game()
    text = format_games([game])
    assert "\n1. 0 lead 6H {0.012 cpu=0.000635}\n2. 1 take {0.5 cpu=0.3333333333333333}\n" in text
    assert parse_games(text) == [game]
    data = to_json([game])
    assert json.loads(data)[0]["Moves"][0] == {
        "seat": 0,
        "action": "lead 6H",
        "seconds": 0.012,
        "cpu": 0.000635,
    }
    assert from_json(data) == [game]
    assert format_games(from_json(data)) == text


def test_a_file_without_cpu_times_still_reads() -> None:
    text = format_games([entry()])
    assert "cpu" not in text and "cpu" not in to_json([entry()])
    assert [m.cpu_seconds for m in parse_games(text)[0].record.moves] == [None, None]


@pytest.mark.parametrize(
    ("times", "message"),
    [
        ("0.5 cpu=x", "expected {SECONDS} or {SECONDS cpu=CPU}"),
        ("0.5 cpu=-1", "CPU seconds must be a finite number >= 0"),
        ("0.5 cpu=1e999", "CPU seconds must be a finite number >= 0"),
        ("0.5 0.2", "expected {SECONDS} or {SECONDS cpu=CPU}"),
    ],
)
def test_a_bad_cpu_time_is_refused_with_its_line(times: str, message: str) -> None:
    text = format_games([entry()]).replace("2. 1 take {0.5}", f"2. 1 take {{{times}}}")
    with pytest.raises(GameFieldError, match=message) as caught:
        parse_games(text, source="c.kgn")
    assert str(caught.value).startswith("c.kgn:")


@pytest.mark.parametrize(
    "cpu", [None, False, "0.1", -1, [0.1], pytest.param(10**400, id="10**400")]
)
def test_a_bad_json_cpu_time_is_refused(cpu: object) -> None:
    text = json_with(lambda g: g["Moves"][0].update(cpu=cpu))
    with pytest.raises(GameFieldError, match="move 1: a move's CPU seconds must be a finite"):
        from_json(text, source="c.json")


# -- JSON typing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("Tournament", None, "null"),
        ("Game", 1, "1"),
        ("TournamentSeed", 7.0, "7.0"),
        pytest.param("SeriesSeed", 10**100, "1" + "0" * 79 + "... (101 digits)", id="10**100"),
        ("Seat0", ["alpha"], "a list"),
        ("Referee", {"v": 1}, "an object"),
        ("VoidReason", True, "true"),
    ],
)
def test_a_json_header_that_is_not_a_string_is_refused(key: str, value: object, shown: str) -> None:
    text = json_with(lambda g: g.update({key: value}))
    with pytest.raises(GameFieldError) as caught:
        from_json(text, source="h.json")
    assert str(caught.value) == f"h.json[0]: header {key!r} must be a string, got {shown}"


@pytest.mark.parametrize(("seconds", "shown"), [(False, "false"), ("0.5", "'0.5'"), (None, "null")])
def test_json_seconds_that_are_not_a_number_are_refused(seconds: object, shown: str) -> None:
    text = json_with(lambda g: g["Moves"][0].update(seconds=seconds))
    with pytest.raises(GameFieldError) as caught:
        from_json(text, source="s.json")
    assert str(caught.value) == (
        f"s.json[0]: move 1: a move's seconds must be a finite number >= 0, got {shown}"
    )


def test_json_numbers_still_import() -> None:
    text = json_with(lambda g: g["Moves"][1].update(seconds=1))
    assert from_json(text)[0].record.moves[1].seconds == 1.0


# -- the same game twice ----------------------------------------------------------------------


def test_a_game_twice_with_different_content_names_both_records() -> None:
    other = entry((MOVES[0], Move(1, "take", 0.75)))
    text = format_games([entry(), entry(number=2), other])
    third = text.count("\n", 0, text.index("[KrytGameFile", text.index('[Game "2"]'))) + 1
    with pytest.raises(GameFieldError) as caught:
        parse_games(text, source="dup.kgn")
    assert str(caught.value) == (
        f"dup.kgn:{third}: game 1 of series 0 of tournament 'cup' (attempt 1) is also the"
        " record at dup.kgn:1, with different content: a game is recorded once"
    )
    with pytest.raises(GameFieldError, match=r"dup.json\[2\]: .* at dup.json\[0\]"):
        from_json(to_json([entry(), entry(number=2), other]), source="dup.json")


def test_the_same_game_twice_is_accepted() -> None:
    """Importing it stores it once (as importing a file twice does)."""
    assert len(parse_games(format_games([entry(), entry()]))) == 2


def test_two_counted_attempts_of_a_game_are_refused() -> None:
    text = format_games([entry(), entry(attempt=2)])
    with pytest.raises(GameFieldError, match="counts twice: attempt 2 here and attempt 1 at"):
        parse_games(text, source="two.kgn")
    voided = entry(attempt=2)
    record = replace(voided.record, ending=GameEndReason.VOID, winner=None, void_reason="infra")
    assert len(parse_games(format_games([entry(), replace(voided, record=record)]))) == 2


# -- a game voided after it was recorded ------------------------------------------------------


def voided_after(record: GameRecord | None = None) -> GameEntry:
    game = entry()
    return replace(game, record=record or game.record, voided_after="audit: fixed deal")


def test_a_game_voided_after_it_was_recorded_keeps_its_result() -> None:
    forfeit = Forfeit(0, GameEndReason.CRASH, "", "KeyError at bot.py:3")
    crash = replace(entry().record, ending=GameEndReason.CRASH, forfeit=forfeit)
    for game in (voided_after(), voided_after(crash)):
        text = format_games([game])
        assert '[Result "*"]\n[Ending "void"]\n[VoidedResult "0-1"]\n' in text
        assert f'[VoidedEnding "{game.record.ending.value}"]' in text
        assert '[VoidReason "audit: fixed deal"]' in text and text.endswith("\n*\n")
        assert parse_games(text) == [game]
        assert from_json(to_json([game])) == [game]
        row = to_csv([game]).splitlines()[1].split(",")
        assert row[11:13] == ["*", "void"]
    # Voided, so it never counts: a counted attempt of the same game may follow it.
    counted = entry(attempt=2)
    assert len(parse_games(format_games([voided_after(), counted]))) == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('[VoidedEnding "out"]\n', ""), "VoidedResult needs a VoidedEnding"),
        (lambda t: t.replace('[VoidedResult "0-1"]\n', ""), "VoidedEnding needs a VoidedResult"),
        (lambda t: t.replace('"0-1"]', '"2-0"]'), "VoidedResult must be 1-0, 0-1 or 1/2-1/2"),
        (lambda t: t.replace('[VoidedEnding "out"]', '[VoidedEnding "void"]'), "VoidedEnding"),
        (
            lambda t: t.replace('[VoidReason "audit: fixed deal"]', '[VoidReason ""]'),
            "needs a VoidReason",
        ),
        (
            lambda t: t.replace('[Result "*"]', '[Result "0-1"]').replace("\n*\n", "\n0-1\n"),
            "belong to a voided game",
        ),
    ],
)
def test_bad_voided_headers_are_refused(edit: object, message: str) -> None:
    assert callable(edit)
    with pytest.raises(GameFieldError, match=message):
        parse_games(edit(format_games([voided_after()])), source="v.kgn")


# -- CSV ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t"])
def test_a_csv_cell_a_spreadsheet_would_run_is_quoted(start: str) -> None:
    assert csv_cell(f"{start}HYPERLINK(1)") == f"'{start}HYPERLINK(1)"
    assert csv_cell("cup") == "cup" and csv_cell(3) == 3


def test_csv_shows_bot_text_escaped_and_formulas_inert() -> None:
    text = "\x1b[2J\u202e=cmd\r\nFAKE"
    forfeit = Forfeit(0, GameEndReason.CRASH, "", text)
    game = entry(tournament='=HYPERLINK("http://x","y")')
    game = replace(game, record=replace(game.record, ending=GameEndReason.CRASH, forfeit=forfeit))
    csv_text = to_csv([game])
    assert csv_text.count("\n") == 2  # the header and one row: no line of the bot's own
    assert not any(char in csv_text for char in "\x1b\u202e\r")
    assert '"\'=HYPERLINK(""http://x"",""y"")"' in csv_text
    assert "\\x1b[2J\\u202e=cmd\\x0d\\x0aFAKE" in csv_text
    carriage = replace(game, tournament="\rcup")
    assert ",'\\x0dcup," not in to_csv([carriage]) and ",\\x0dcup," in to_csv([carriage])
