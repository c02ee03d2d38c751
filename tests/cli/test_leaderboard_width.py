"""In an 80-column terminal the leaderboard keeps its Forfeits column (other columns go)."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from kryt.commands.leaderboard import print_standings, standings_table
from leaderboard.standings import Leaderboard, Standing


def _board() -> Leaderboard:
    rows = [
        Standing(
            rank=i + 1,
            submission_id=i + 1,
            bot=name,
            version="1.0.0-beta.12",
            rating=1600.0 - 40 * i,
            interval=112.0,
            elo=1550.0 - 30 * i,
            elo_provisional=True,
            games=1200,
            wins=600,
            draws=100,
            losses=500,
            score=0.541,
            los_next=0.93,
            forfeits=forfeits,
        )
        for i, (name, forfeits) in enumerate(
            [
                ("a-rather-long-bot-name", {"timeout": 12, "crash": 3}),
                ("second", {"illegal_action": 1}),
                ("third", {}),
            ]
        )
    ]
    return Leaderboard(rows=rows, fit=None)


def _render(width: int, *, terminal: bool) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=terminal, color_system=None)
    print_standings(console, lambda w: standings_table(_board(), title="Board", width=w))
    return buffer.getvalue()


def test_an_80_column_terminal_keeps_the_forfeits() -> None:
    text = _render(80, terminal=True)
    assert "Forfeits" in text
    assert "crash 3, timeout" in text and "illegal action 1" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    # Names and numbers are whole; less important columns made room.
    assert "a-rather-long-bot-name" in text and "1600" in text
    assert "Elo" not in text.split("Forfeits")[0].split("Rating")[1]


def test_a_wide_terminal_and_a_pipe_show_every_column() -> None:
    for text in (_render(200, terminal=True), _render(80, terminal=False)):
        header = next(line for line in text.splitlines() if "Rating" in line)
        for column in ("Version", "Elo", "LOS", "Score%", "Forfeits"):
            assert column in header
        assert "timeout 12" in text


def _long_named(width: int) -> str:
    """The board with a 40-character bot name (the longest bot.toml allows) and a long note,
    rendered in a terminal of ``width`` columns."""
    board = _board()
    first = replace(board.rows[0], bot="q" * 40)
    note = "a note long enough to need more than one line of a narrow terminal, said in full"
    board = replace(board, rows=[first, *board.rows[1:]], note=note)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    print_standings(console, lambda w: standings_table(board, title="Board", width=w))
    return buffer.getvalue()


def test_a_long_name_folds_instead_of_the_table_being_cut_at_the_terminals_edge() -> None:
    """The columns were dropped, but the rows stayed wider than 80: Rich cut them, the
    Forfeits read 'timeou', the right border and the note's last words were gone."""
    text = _long_named(80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    rows = [line for line in lines if line.startswith(("┃", "│", "┏", "┡", "└"))]
    assert rows and all(line.rstrip()[-1] in "┃│┓┩┘" for line in rows), text
    assert "crash 3, timeout 12" in text and "illegal action 1" in text
    assert text.count("q") == 40  # the whole name, folded onto several lines
    assert "said in full" in text


def test_a_terminal_too_narrow_for_any_fit_gets_the_whole_table() -> None:
    """Below the least width of the essential columns nothing is cut: every column, in full
    lines the terminal wraps."""
    text = _long_named(50)
    assert "q" * 40 in text and "crash 3, timeout 12" in text and "said in full" in text
    header = next(line for line in text.splitlines() if "Rating" in line)
    assert "Version" in header and "Forfeits" in header
