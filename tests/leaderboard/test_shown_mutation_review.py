"""Tests from a hand-made mutation review of what users see: the leaderboard table of
``kryt leaderboard``, ``kryt games list``, ``kryt replay`` and the web pages' filters.

Each test kills a mutant the suite let live (named in its docstring): a bot-controlled text
(a version, a forfeit's detail, its traceback, a double forfeit's detail, the referee
version a game file carries) printed without its control characters made visible, W and L
swapped, a percentage or an interval rounded otherwise than shown elsewhere, a move credited
to the wrong seat. Expected values are written out by hand from the documented formats
(``W/D/L``, score % to one decimal, ``1-0``/``0-1``), not computed by the code under test.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rich.console import Console

from arena.db import (
    GamePlace,
    SeriesSpec,
    TournamentSpec,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    submit,
)
from kryt.commands.leaderboard import standings_table
from leaderboard.formatting import confidence_percent, tenths, visible
from leaderboard.standings import Leaderboard, Standing
from leaderboard.web import create_app
from leaderboard.web.render import fmt_forfeits, fmt_percent, fmt_seconds
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.cli.helpers import flat, kryt
from tests.db.helpers import World, deck, game, new_submission

ALPHA_VERSION = "1.0\x1b[2J\u202e"
"""A version as the database accepts it (only ``bot.toml`` checks one): ESC clears the
terminal, U+202E reverses the rest of the line."""
BRAVO_VERSION = "2.0\x1b[31m"
CHARLIE_VERSION = "3.0\x1b[2J\u202e"

CRASH_DETAIL = (
    "boom\x1b[2J at bot\x1b[1m.py:12 in main\n"
    "its process: exited\x1b]0;pwned\x07 with status 1\nlast output:\nfake\x1b[1A line"
)
"""A crash's detail: the bot's own message (first line, ESC in it), then what the
tournament appended (how the process ended, the bot's output: OSC and cursor-up in it)."""
DOUBLE_DETAIL = "seat 0: no start\x1b[2J; seat 1: no start\x1b[1A"

ESCAPES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202e]")
"""Raw control or bidi characters that must never reach a terminal (tab and newline are
layout)."""


def world(tmp_path: Path) -> tuple[Path, World]:
    """A finished-looking tournament between alpha (version :data:`ALPHA_VERSION`) and bravo
    (:data:`BRAVO_VERSION`): six games of one series.

    1. alpha at seat 0 wins; 2. bravo at seat 0 wins (seats swapped); 3. alpha at seat 0,
    bravo at seat 1 wins; 4. alpha at seat 0 wins by bravo's crash (:data:`CRASH_DETAIL`);
    5. alpha at seat 0, drawn at the turn limit; 6. alpha at seat 0 wins. alpha: 3 wins,
    1 draw, 2 losses; bravo: 2/1/3. (A referee version with a control character is refused
    by :func:`arena.db.record_game`, so it is not tried here.)"""
    path = tmp_path / "shown.db"
    database = open_database(f"sqlite:///{path}")
    with database.session() as s:
        a = submit(new_submission("alpha", ALPHA_VERSION), session=s).submission
        b = submit(new_submission("bravo", BRAVO_VERSION), session=s).submission
        assert a.id is not None and b.id is not None
        t = create_tournament(
            TournamentSpec(
                name="cup", seed=7, config={"games": 6}, series=[SeriesSpec(a.id, b.id, 6, 99)]
            ),
            session=s,
        )
        assert t.id is not None
        (series,) = series_of_tournament(t.id, session=s)
        assert series.id is not None
        w = World(a.id, b.id, t.id, series.id)
        record_game(*game(w, 1, winner=0), session=s)
        record_game(*game(w, 2, winner=0, swap=True), session=s)
        record_game(*game(w, 3, winner=1), session=s)
        crash = Forfeit(1, GameEndReason.CRASH, "sent\x1b[5m", CRASH_DETAIL)
        record_game(*game(w, 4, winner=0, ending=GameEndReason.CRASH, forfeit=crash), session=s)
        record_game(*game(w, 5, winner=None), session=s)
        record_game(*game(w, 6, winner=0), session=s)
    database.close()
    return path, w


# --- pure formatting helpers ----------------------------------------------------------------


def test_visible_escapes_a_carriage_return_and_keeps_a_tab() -> None:
    """Mutant M1 (``\\r`` kept by :func:`visible`): a kept ``\\r`` lets a version overwrite
    the start of its own line in the terminal."""
    assert visible("a\rb\tc\x1b[2J\u202ed") == "a\\x0db\tc\\x1b[2J\\u202ed"


def test_tenths_never_shows_minus_zero_and_rounds_to_one_decimal() -> None:
    """Mutant M2 (``-0.0`` shown): an advantage of -0.04 Elo is 0.0, not -0.0."""
    assert tenths(-0.04) == "0.0"
    assert tenths(-0.06) == "-0.1"
    assert tenths(32.25) == "32.2"  # 32.25 is exact in binary: Python rounds half to even


def test_confidence_percent_keeps_every_digit_given() -> None:
    """Mutant M3 (rounded to a whole percent): 99.95% must not read 100%."""
    assert confidence_percent(0.9995) == "99.95%"
    assert confidence_percent(0.95) == "95%"
    assert confidence_percent(0.5) == "50%"


def test_web_percent_has_one_decimal() -> None:
    """Mutant M19 (no decimal on the web): 5 of 6 points is 83.3, as the CLI shows."""
    assert fmt_percent(5 / 6) == "83.3"
    assert fmt_percent(0.625) == "62.5"
    assert fmt_percent(None) == "—"


def test_web_seconds_round_an_exact_tie_up_like_to_fixed() -> None:
    """Mutant M20 (half to even): 0.0625 s is exact in binary; JavaScript's
    ``(0.0625).toFixed(3)`` is ``0.063``, so the page's move list must say so too."""
    assert fmt_seconds(0.0625) == "0.063"
    assert fmt_seconds(0.1875) == "0.188"
    assert fmt_seconds(None) == ""


def test_web_forfeits_are_sorted_by_reason_with_spaces() -> None:
    """Mutant M23 (reasons in stored order): the docstring's order is by reason."""
    shown = fmt_forfeits({"timeout": 2, "illegal_move": 1, "crash": 3})
    assert shown == "crash 3, illegal move 1, timeout 2"


# --- kryt leaderboard's table ---------------------------------------------------------------


def board_text(board: Leaderboard) -> str:
    """The rich table as a wide terminal prints it, without colour."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=250, color_system=None, force_terminal=False)
    console.print(standings_table(board, title="cup"))
    return buffer.getvalue()


def hand_board(note: str = "") -> Leaderboard:
    """Two rows with every number chosen so that a wrong format shows."""
    rows = [
        Standing(
            rank=1,
            submission_id=1,
            bot="alpha",
            version=ALPHA_VERSION,
            rating=1512.7,
            interval=12.6,
            elo=1507.2,
            elo_provisional=False,
            games=6,
            wins=3,
            draws=1,
            losses=2,
            score=3.5 / 6,
            los_next=0.734,
            forfeits={},
        ),
        Standing(
            rank=2,
            submission_id=2,
            bot="bravo",
            version=BRAVO_VERSION,
            rating=1487.3,
            interval=12.6,
            elo=1492.8,
            elo_provisional=True,
            games=6,
            wins=2,
            draws=1,
            losses=3,
            score=2.5 / 6,
            los_next=None,
            forfeits={"crash": 1},
        ),
    ]
    return Leaderboard(rows=rows, fit=None, note=note)


def test_the_table_shows_w_d_l_in_that_order_and_the_score_to_one_decimal() -> None:
    """Mutants M5 (W/L/D) and M6 (score without its decimal): 3.5 points of 6 is 58.3%."""
    text = board_text(hand_board())
    alpha = next(line for line in text.splitlines() if "alpha" in line)
    bravo = next(line for line in text.splitlines() if "bravo" in line)
    assert " 3/1/2 " in alpha and " 58.3 " in alpha, alpha
    assert " 2/1/3 " in bravo and " 41.7 " in bravo, bravo


def test_the_table_rounds_ratings_and_intervals_to_the_nearest_point() -> None:
    """Mutant M7 (interval truncated): ± 12.6 is shown 13, as the rating 1512.7 is 1513."""
    alpha = next(line for line in board_text(hand_board()).splitlines() if "alpha" in line)
    assert re.search(r"\b1513\b", alpha) and re.search(r"\b13\b", alpha), alpha
    assert not re.search(r"\b12\b", alpha), alpha


def test_the_table_escapes_the_version_and_the_note() -> None:
    """Mutants M4 (version printed raw) and M8 (note printed raw): the note quotes bot
    versions, so it is bot-controlled text too."""
    text = board_text(hand_board(note=f"bravo {BRAVO_VERSION} left"))
    assert not ESCAPES.search(text), repr(text)
    assert "1.0\\x1b[2J\\u202e" in text
    assert "bravo 2.0\\x1b[31m left" in flat(text)


def test_kryt_leaderboard_escapes_a_stored_version(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutant M4 again, end to end, and the counts of the hand-made world."""
    path, _ = world(tmp_path)
    code, out, err = kryt(capsys, "leaderboard", "-d", str(path))
    assert code == 0, err
    assert not ESCAPES.search(out), repr(out)
    alpha = next(line for line in out.splitlines() if "alpha" in line)
    bravo = next(line for line in out.splitlines() if "bravo" in line)
    assert "1.0\\x1b[2J\\u202e" in alpha and " 3/1/2 " in alpha and " 58.3 " in alpha, alpha
    assert "2.0\\x1b[31m" in bravo and " 2/1/3 " in bravo and " 41.7 " in bravo, bravo


# --- kryt games list ------------------------------------------------------------------------


def test_games_list_shows_the_seats_results_and_escapes_both_versions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutants M9 (1-0 and 0-1 swapped), M10 (seat 1's label raw) and M11 (the crash site,
    a file name from the bot's traceback, raw): game 2 has bravo at seat 0 and won by it
    (1-0), game 3 has alpha at seat 0 and won by bravo (0-1)."""
    path, _ = world(tmp_path)
    code, out, err = kryt(capsys, "games", "list", "--oldest", "-d", str(path))
    assert code == 0, err
    assert not ESCAPES.search(out), repr(out)
    rows = {
        int(line.split("│")[0]): line
        for line in out.splitlines()
        if line.split("│")[0].strip().isdigit()
    }
    alpha = "alpha 1.0\\x1b[2J\\u202e"
    bravo = "bravo 2.0\\x1b[31m"
    assert rows[1].index(alpha) < rows[1].index(bravo) and " 1-0 " in rows[1], rows[1]
    assert rows[2].index(bravo) < rows[2].index(alpha) and " 1-0 " in rows[2], rows[2]
    assert rows[3].index(alpha) < rows[3].index(bravo) and " 0-1 " in rows[3], rows[3]
    assert " ½-½ " in rows[5], rows[5]
    assert "crash at bot\\x1b[1m.py:12" in rows[4], rows[4]  # where the crashed bot raised


def test_games_list_escapes_the_versions_of_seats_two_and_three(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutant M12 (the ``seats 2-3`` column of a table game printed raw): a classic table of
    three whose seat 2 is charlie, a version with ESC and U+202E in it."""
    path, w = world(tmp_path)
    database = open_database(f"sqlite:///{path}")
    with database.session() as s:
        c = submit(new_submission("charlie", CHARLIE_VERSION), session=s).submission
        assert c.id is not None
        t = create_tournament(
            TournamentSpec(
                name="tables",
                seed=8,
                config={"ruleset": "classic", "table_size": 3},
                series=[
                    SeriesSpec(
                        w.sub_a, w.sub_b, 1, 98, ruleset="classic", seats=(w.sub_a, w.sub_b, c.id)
                    )
                ],
            ),
            session=s,
        )
        assert t.id is not None
        (series,) = series_of_tournament(t.id, session=s)
        assert series.id is not None
        table = record_game(
            GameRecord(
                deck=tuple(deck(77)),
                dealer=0,
                turn_limit=500,
                moves=(Move(1, "lead 6C", 0.01),),
                ending=GameEndReason.MALFORMED_REPLY,
                winner=None,
                forfeit=Forfeit(1, GameEndReason.MALFORMED_REPLY, "x", "bad reply"),
                referee_version="review 1",
                players=("p0", "p1", "p2"),
                started=1.0e9,
                finished=1.0e9 + 1,
                ruleset="classic",
                seats=3,
                loser=1,
                pairwise=((0, 1), (2, 1)),
            ),
            GamePlace(series.id, 1, 1, (w.sub_a, w.sub_b, c.id)),
            session=s,
        ).game
        assert table.id is not None
    database.close()
    code, out, err = kryt(capsys, "games", "list", "-d", str(path))
    assert code == 0, err
    assert not ESCAPES.search(out), repr(out)
    assert "seats 2-3" in out, out
    row = next(line for line in out.splitlines() if line.split("│")[0].strip() == str(table.id))
    assert "charlie 3.0\\x1b[2J\\u202e" in row, row


# --- kryt replay ----------------------------------------------------------------------------


def replay_out(capsys: pytest.CaptureFixture[str], path: Path, game_id: int) -> str:
    code, out, err = kryt(capsys, "replay", str(game_id), "-d", str(path))
    assert code == 0, err
    return out


def test_replay_names_the_seat_of_each_move_and_the_winner(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutants M13 (a move credited to the other seat's bot) and M17 (winner swapped)."""
    path, _ = world(tmp_path)
    out = replay_out(capsys, path, 2)  # bravo at seat 0, which wins
    moves = [
        [cell.strip() for cell in line.split("│")]
        for line in out.splitlines()
        if re.match(r"\s*\d+ │", line)
    ]
    assert len(moves) >= 2, out
    for cells in moves:
        seat = cells[1]
        assert cells[2].split()[0] == ("bravo" if seat == "0" else "alpha"), cells
    assert "result: bravo 2.0\\x1b[31m wins by out" in out, out
    assert "result: alpha 1.0\\x1b[2J\\u202e wins" in replay_out(capsys, path, 1)
    assert "result: bravo 2.0\\x1b[31m wins" in replay_out(capsys, path, 3)


def test_replay_escapes_the_forfeit_detail_and_its_appended_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutants M14 (the detail's first line raw) and M15 (the appended process and output
    lines raw)."""
    path, _ = world(tmp_path)
    out = replay_out(capsys, path, 4)
    assert not ESCAPES.search(out), repr(out)
    assert "boom\\x1b[2J at bot\\x1b[1m.py:12 in main" in flat(out)
    assert "exited\\x1b]0;pwned\\x07 with status 1" in out
    assert "fake\\x1b[1A line" in out


# --- the web pages --------------------------------------------------------------------------


def page(path: Path, url: str) -> str:
    """The HTML the live site serves at ``url`` for the database at ``path``."""
    database = open_database(f"sqlite:///{path}")
    try:
        with TestClient(create_app(database)) as client:
            response = client.get(url)
            assert response.status_code == 200, response.text
            text: str = response.text
            return text
    finally:
        database.close()


def test_the_web_standings_show_w_d_l_in_that_order_and_los_to_two_decimals(
    tmp_path: Path,
) -> None:
    """Mutants M22 (W / L / D on the page) and M27 (LOS to one decimal, where the CLI and
    the JSON give two)."""
    path, _ = world(tmp_path)
    html = page(path, "/")
    rows = re.findall(r"<tr>\s*<td class=\"num\">\d+</td>.*?</tr>", html, re.S)
    cells = {
        re.sub(r"<[^>]+>", "", row.split("</td>")[1]).strip(): row
        for row in rows
        if "bot-link" in row
    }
    assert "3 / 1 / 2" in cells["alpha"] and "58.3" in cells["alpha"], cells
    assert "2 / 1 / 3" in cells["bravo"] and "41.7" in cells["bravo"], cells
    # The first row has a next bot: its LOS over it; the last has none.
    first, last = (cells[name] for name in sorted(cells, key=lambda n: html.index(cells[n])))
    los = re.search(r'<td class="num col-los">([^<]*)</td>', first)
    assert los is not None and re.fullmatch(r"[01]\.\d\d", los.group(1)), first
    assert '<td class="num col-los">—</td>' in last, last


def test_the_game_page_shows_the_forfeit_detail_with_its_controls_escaped(
    tmp_path: Path,
) -> None:
    """Mutant M21 (the forfeit detail in the HTML raw): an ESC or BEL of a bot's message
    is written as ``\\x1b``, never as the character, as the terminal shows it; the bidi
    override of a version never reaches the embedded replay data raw (M25)."""
    path, _ = world(tmp_path)
    html = page(path, "/games/4")
    forfeit = re.search(r'<dd id="forfeit">(.*?)</dd>', html, re.S)
    assert forfeit is not None, html
    assert not ESCAPES.search(forfeit.group(1)), repr(forfeit.group(1))
    assert "boom\\x1b[2J at bot\\x1b[1m.py:12 in main" in html
    assert "exited\\x1b]0;pwned\\x07 with status 1" in html
    script = re.search(r"<script[^>]*>\s*(\{.*?\})\s*</script>", html, re.S)
    assert script is not None, html
    assert "\u202e" not in script.group(1)
    assert "\\u202e" in script.group(1)


def test_replay_escapes_a_double_forfeits_detail(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Mutant M16 (the double forfeit's detail raw): each seat's start-up failure is bot
    text (its output, its error)."""
    path = tmp_path / "double.db"
    database = open_database(f"sqlite:///{path}")
    with database.session() as s:
        a = submit(new_submission("alpha"), session=s).submission
        b = submit(new_submission("bravo"), session=s).submission
        assert a.id is not None and b.id is not None
        t = create_tournament(
            TournamentSpec(
                name="cup", seed=7, config={"games": 1}, series=[SeriesSpec(a.id, b.id, 1, 99)]
            ),
            session=s,
        )
        assert t.id is not None
        (series,) = series_of_tournament(t.id, session=s)
        assert series.id is not None
        w = World(a.id, b.id, t.id, series.id)
        record = game(
            w,
            1,
            winner=None,
            moves=(),
            ending=GameEndReason.DOUBLE_FORFEIT,
            double_forfeit_detail=DOUBLE_DETAIL,
        )
        record_game(*record, session=s)
    database.close()
    out = replay_out(capsys, path, 1)
    assert not ESCAPES.search(out), repr(out)
    assert "seat 0: no start\\x1b[2J; seat 1: no start\\x1b[1A" in flat(out), out
