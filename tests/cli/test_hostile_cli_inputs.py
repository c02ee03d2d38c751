"""What a hostile audit of the command line found (2026-12-04): a terminal that cannot show
a suit symbol, and a Dask scheduler address that is no address."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode
from tests.cli.helpers import finished_games_db, kryt


def test_replay_on_an_ascii_terminal_escapes_the_suit_instead_of_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``PYTHONIOENCODING=ascii`` (or a Latin-1 terminal): ``kryt replay`` raised
    UnicodeEncodeError on the trump's suit symbol, a traceback and exit 1."""
    db = finished_games_db(tmp_path)
    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii", write_through=True)
    monkeypatch.setattr(sys, "stdout", ascii_out)
    code = main(["replay", "1", "-d", str(db)])
    ascii_out.flush()
    err = capsys.readouterr().err
    assert code == ExitCode.OK, err
    shown = raw.getvalue().decode("ascii")
    assert "Game 1:" in shown
    assert "trump \\u" in shown  # the suit, escaped
    assert "Traceback" not in err


def test_tournament_run_refuses_a_scheduler_that_is_no_address_as_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--executor dask --scheduler garbage`` exited 3 (a service unavailable) with the hint
    "start the scheduler": it is a typo, exit 2, and nothing is stored."""
    db = tmp_path / "kryt.db"
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
        "--backend", "process", "--executor", "dask", "--scheduler", "garbage",
        "-d", str(db),
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    assert "'garbage'" in err and "tcp://HOST:8786" in err
    assert "start the scheduler" not in err
    assert "Traceback" not in err
    assert not db.exists()


def test_arena_serve_with_a_scheduler_that_is_no_address_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kryt arena serve --executor dask --scheduler garbage`` ended in a traceback of
    DaskExecutorError (exit 1)."""
    code, _, err = kryt(
        capsys, "arena", "serve", "--executor", "dask", "--scheduler", "garbage",
        "--port", "0", "-d", str(tmp_path / "arena.db"),
    )  # fmt: skip
    assert code == ExitCode.BAD_INPUT, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: ") and "'garbage'" in lines[0], err
    assert "tcp://HOST:8786" in lines[0]
    assert "Traceback" not in err


def test_the_ratings_table_escapes_a_name_it_is_given() -> None:
    """The CSV reader refuses names with control characters; the table escapes them all the
    same, for fits made from other sources (an API caller's counts)."""
    from rich.console import Console

    from kryt.commands.ratings import _table
    from leaderboard.ratings import PairCounts, fit_bayeselo

    counts = PairCounts.from_mapping({("\x1b[2Jevil\u202e", "plain"): (3, 1, 2)})
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(_table(fit_bayeselo(counts), None))
    shown = out.getvalue()
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "\\x1b[2Jevil\\u202e" in shown


@pytest.mark.parametrize("command", [["replay", "1"], ["games", "list"], ["leaderboard"]])
def test_a_reader_that_went_away_is_no_failure(tmp_path: Path, command: list[str]) -> None:
    """``kryt replay 1 | head -2``: the reader closed the pipe. Rich answered with exit 1
    ("found problems") where the commands that print without it exit 0."""
    import os
    import subprocess

    db = finished_games_db(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first write: every write meets a closed pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kryt", *command, "-d", str(db)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == ExitCode.OK, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_arena_serve_with_no_scheduler_listening_is_one_line_not_uvicorns_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ladder's scheduler refuses connections: uvicorn printed the traceback of the
    failed start and "Application startup failed" (exit 3, but no line of ours)."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    code, _, err = kryt(
        capsys, "arena", "serve", "--executor", "dask", "--scheduler",
        f"tcp://127.0.0.1:{free}", "--port", "0", "-d", str(tmp_path / "arena.db"),
    )  # fmt: skip
    assert code == ExitCode.UNAVAILABLE, err
    assert "Traceback" not in err and "Application startup failed" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: the server could not start: no Dask scheduler listens at"
        f" tcp://127.0.0.1:{free}: Connection refused (tried for 2 s)"
    ], err
    assert "hint: check --scheduler" in err
