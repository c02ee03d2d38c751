"""Hostile input to the leaderboard package: game files whose header values no UTF-8 text can
hold, a file naming a bot version the database stores otherwise, results CSVs whose names
carry terminal escapes, counts and confidence levels that used to escape the ratings' own
errors: each is refused with one clear line (file, line, field), never a traceback. And a
board whose every game was voided, which said none had been recorded."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from arena.db import (
    Database,
    GamePlace,
    NewSubmission,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from kryt.errors import ExitCode
from leaderboard.gamefile import GameFieldError, Seat, format_games, load_games, to_json
from leaderboard.ratings import PairCounts, RatingsError, fit_bayeselo
from leaderboard.ratings.csvio import parse_games_csv
from leaderboard.ratings.errors import CsvFormatError, InvalidCountsError
from leaderboard.ratings.games import games_from_tuples
from leaderboard.standings import standings
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord
from referee.rules import shuffled_deck
from tests.cli.helpers import game_entry, kryt, table_counts
from tests.db.helpers import replayable

DECK = tuple(str(card) for card in shuffled_deck("kryt:test:hostile-leaderboard:1"))
SEATS = (Seat("alpha", "1.0", "a" * 64), Seat("beta", "2.0", "b" * 64))
RESULTS = [("a", "b", "1-0"), ("b", "a", "1-0"), ("a", "b", "1/2-1/2"), ("b", "a", "0-1")]


def forfeit_game_file() -> str:
    """One game of a file, lost by seat 0's crash: it has ForfeitInput and ForfeitDetail."""
    entry = game_entry(1, seats=SEATS, deck=DECK)
    record = replayable(  # an import replays every game
        replace(
            entry.record,
            ending=GameEndReason.CRASH,
            forfeit=Forfeit(0, GameEndReason.CRASH, "", "bot reported an error"),
        )
    )
    return format_games([replace(entry, record=record)])


def with_header(text: str, key: str, raw_json: str) -> str:
    """``text`` with header ``key`` set to the JSON string literal ``raw_json`` as written
    (escapes kept)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"[{key} "):
            lines[index] = f"[{key} {raw_json}]"
            return "\n".join(lines) + "\n"
    raise AssertionError(f"no header {key}")


def refused_import(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, file: Path, *expected: str
) -> str:
    """Import ``file`` into a fresh database: exit 2, one ``error:`` line with
    ``expected``, nothing stored."""
    db = tmp_path / "kryt.db"
    code, out, err = kryt(capsys, "games", "import", str(file), "-d", str(db))
    assert code == ExitCode.BAD_INPUT, (code, out, err)
    assert "Traceback" not in err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    for part in expected:
        assert part in err, (part, err)
    if db.exists():
        assert table_counts(db)["games"] == 0
    return err


# ------------------------------------------------------------------ game files


@pytest.mark.parametrize(
    ("key", "field"),
    [("ForfeitDetail", "forfeit detail"), ("ForfeitInput", "forfeit offending_input")],
)
def test_a_lone_surrogate_in_a_header_is_refused_naming_the_record(
    key: str, field: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # "\ud800" is a valid JSON escape but no character: it used to pass the checks and
    # reach the database, whose UTF-8 encoding raised UnicodeEncodeError (a traceback).
    text = with_header(forfeit_game_file(), key, '"a\\ud800b"')
    file = tmp_path / "lone.kgn"
    file.write_text(text, encoding="utf-8")
    refusal = rf"lone\.kgn:1: {field} must be text UTF-8 can hold \(no lone surrogate\)"
    with pytest.raises(GameFieldError, match=refusal):
        load_games(file.read_bytes(), source="lone.kgn")
    refused_import(capsys, tmp_path, file, f"lone.kgn:1: {field}", "\\ud800")


def test_a_lone_surrogate_in_a_json_game_is_refused_with_its_index(tmp_path: Path) -> None:
    entries = load_games(forfeit_game_file().encode(), source="g.kgn")
    games = json.loads(to_json(entries))
    games[0]["ForfeitDetail"] = "x\udfffy"
    data = json.dumps(games).encode()  # ASCII: the surrogate is written \udfff
    with pytest.raises(GameFieldError, match=r"g\.json\[0\]: forfeit detail must be text UTF-8"):
        load_games(data, source="g.json", json_name=True)


def test_a_surrogate_pair_is_still_one_character_and_imports(tmp_path: Path) -> None:
    # The check refuses only what UTF-8 cannot hold: an escaped pair is one emoji.
    text = with_header(forfeit_game_file(), "ForfeitDetail", '"boom \\ud83d\\ude00"')
    (entry,) = load_games(text.encode(), source="pair.kgn")
    assert entry.record.forfeit is not None
    assert entry.record.forfeit.detail == "boom \U0001f600"


def test_a_bot_version_stored_with_other_content_is_refused_naming_the_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "kryt.db"
    first = tmp_path / "first.kgn"
    first.write_text(format_games([game_entry(1, seats=SEATS, deck=DECK)]), encoding="utf-8")
    code, _, err = kryt(capsys, "games", "import", str(first), "-d", str(db))
    assert code == 0, err
    before = table_counts(db)
    # alpha 1.0 with other content, and alpha's content under another name: the database
    # refuses both; the message used to say so without naming the file's record.
    for seats, says in (
        ((Seat("alpha", "1.0", "c" * 64), SEATS[1]), "alpha 1.0 already exists"),
        ((Seat("gamma", "1.0", "a" * 64), SEATS[1]), "it cannot also be gamma 1.0"),
    ):
        other = tmp_path / "other.kgn"
        entry = replace(game_entry(1, seats=seats, deck=DECK), tournament="other cup")
        other.write_text(format_games([entry]), encoding="utf-8")
        code, out, err = kryt(capsys, "games", "import", str(other), "-d", str(db))
        assert code == ExitCode.BAD_INPUT, (code, out, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: other.kgn:1: "), err
        assert says in err
        assert table_counts(db) == before


# ------------------------------------------------------------------ ratings


def test_a_confidence_that_rounds_to_certainty_is_a_ratings_error() -> None:
    # 0.5 + c/2 is 1.0 in double precision: the normal quantile raised StatisticsError,
    # which `kryt ratings fit --confidence 0.9999999999999999` printed as a traceback.
    counts = PairCounts.from_games(games_from_tuples(RESULTS))
    with pytest.raises(RatingsError, match="confidence must be between 0 and 1"):
        fit_bayeselo(counts, confidence=0.9999999999999999)
    assert math.isfinite(float(fit_bayeselo(counts, confidence=0.9999999).intervals.max()))


def test_kryt_ratings_fit_refuses_such_a_confidence_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    csv = tmp_path / "r.csv"
    csv.write_text("first,second,result\n" + "".join(f"{a},{b},{r}\n" for a, b, r in RESULTS))
    code, out, err = kryt(capsys, "ratings", "fit", str(csv), "--confidence", "0.9999999999999999")
    assert code == ExitCode.BAD_INPUT, (code, out, err)
    assert "Traceback" not in err and "StatisticsError" not in err
    assert err.startswith("error: confidence must be between 0 and 1"), err


@pytest.mark.parametrize(
    "count", [math.nan, math.inf, 2**63, 1e300, None], ids=["nan", "inf", "2**63", "1e300", "none"]
)
def test_counts_that_are_no_number_of_games_raise_invalid_counts(count: object) -> None:
    # int(nan) raised ValueError, int(inf) OverflowError, NumPy OverflowError for 2**63:
    # none of them a RatingsError, which is what callers catch.
    with pytest.raises(InvalidCountsError, match="must be 3 naturals"):
        PairCounts.from_mapping({("a", "b"): (count, 0, 0), ("b", "a"): (1, 1, 1)})  # type: ignore[dict-item]


def test_counts_given_as_whole_floats_still_read() -> None:
    counts = PairCounts.from_mapping({("a", "b"): (3.0, 1, 0), ("b", "a"): (1, 1, 1)})  # type: ignore[dict-item]
    assert counts.total_games == 7


@pytest.mark.parametrize("name", ["\x1b[31mevil", "evil\u202e", "a\tb", "x\x9by"])
def test_a_results_csv_name_with_control_characters_is_refused(name: str) -> None:
    # `kryt ratings fit` printed such a name as it is: an escape sequence recoloured (or
    # cleared) the terminal, a bidi override reordered the table.
    text = f'first,second,result\n"{name}",b,1-0\nb,"{name}",0-1\n'
    with pytest.raises(CsvFormatError, match="control or format characters") as raised:
        parse_games_csv(text, source="r.csv")
    assert raised.value.line_number == 2
    assert "\x1b" not in str(raised.value) and "\u202e" not in str(raised.value)


def test_kryt_ratings_fit_prints_no_escape_sequence_of_a_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    csv = tmp_path / "r.csv"
    csv.write_text('first,second,result\n"\x1b[2Jevil",b,1-0\nb,"\x1b[2Jevil",1-0\n')
    code, out, err = kryt(capsys, "ratings", "fit", str(csv), "--advantage", "0")
    assert code == ExitCode.BAD_INPUT, (code, out, err)
    assert "\x1b" not in out + err
    assert err.startswith("error: ") and "r.csv:2" in err


# ------------------------------------------------------------------ standings


def voided_only_db(tmp_path: Path) -> tuple[Database, int]:
    """alpha and bravo with two games recorded, both voided; the tournament's id."""
    db = open_database(f"sqlite:///{tmp_path / 'voided.db'}")
    with db.session() as session:
        ids = [
            submit(
                NewSubmission(bot_name=n, version="1.0", sha256=c * 64, submitted_by="t"),
                session=session,
            ).submission.id
            for n, c in (("alpha", "a"), ("bravo", "b"))
        ]
        a, b = (i for i in ids if i is not None)
        spec = TournamentSpec(name="cup", seed=3, config={}, series=[SeriesSpec(a, b, 2, 5)])
        tournament = create_tournament(spec, session=session)
        assert tournament.id is not None
        (series,) = series_of_tournament(tournament.id, session=session)
        assert series.id is not None
        for number in (1, 2):
            record = GameRecord(
                deck=DECK,
                dealer=0,
                turn_limit=200,
                moves=(),
                ending=GameEndReason.VOID,
                winner=None,
                void_reason="the sandbox host went away",
                referee_version="test",
                started=1.7e9 + number,
                finished=1.7e9 + number + 1,
            )
            record_game(record, GamePlace(series.id, number, 1, (a, b)), session=session)
    return db, tournament.id


def test_a_board_of_voided_games_does_not_say_none_were_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "no games recorded yet" under a caption of "2 voided" games.
    db, tournament_id = voided_only_db(tmp_path)
    try:
        with db.read_session() as session:
            for scope in (None, tournament_id):
                board = standings(session=session, tournament_id=scope)
                assert board.rows == [] and board.fit is None
                assert (
                    board.note == "no counted games: the 2 games recorded on this board were voided"
                )
    finally:
        db.close()
    code, out, err = kryt(capsys, "leaderboard", "--json", "--db", str(tmp_path / "voided.db"))
    assert code == 0, err
    assert json.loads(out)["note"].startswith("no counted games: the 2 games")
