"""Defects a new user found following the docs (seventh audit): a hint naming a flag most
commands lack, a driver's message over two lines, a hidden alias missing from one command,
the final score printed twice, a negative zero, a help text leaving out a backend, and a
resume of a finished tournament that went on to probe the sandbox."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kryt.errors import ExitCode
from leaderboard.formatting import tenths
from tests.cli.helpers import kryt


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    return tmp_path


def test_the_no_database_hint_names_the_flag_every_command_has(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """It said "the --db option", which only ``kryt leaderboard`` takes."""
    for command in (("games", "list"), ("tournament", "status"), ("replay", "1")):
        code, _, err = kryt(capsys, *command)
        assert code == ExitCode.UNAVAILABLE, err
        assert "-d/--database" in err and "--db " not in err, err
        code, _, err = kryt(capsys, *command, "-d", str(in_tmp / "kryt.db"))
        assert code == ExitCode.UNAVAILABLE and "no database at" in err  # the flag works


def test_a_database_that_cannot_be_reached_is_one_line(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """psycopg's message has a newline and a tab: the error ran over two lines."""
    code, _, err = kryt(capsys, "tournament", "status", "-d", "postgresql://u:p@127.0.0.1:1/x")
    assert code == ExitCode.UNAVAILABLE
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: cannot connect") and "\t" not in err, err
    assert all(line.startswith(("error:", "hint:")) for line in lines), err
    assert "u:p@" not in err  # the password stays masked


def test_tournament_run_takes_the_hidden_sandbox_alias(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """``--sandbox`` worked for ``kryt play`` and ``kryt bot check`` only."""
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "-n", "1",
        "--sandbox", "process",
    )  # fmt: skip
    assert code == 0, err
    with sqlite3.connect(in_tmp / "kryt.db") as conn:
        (config,) = conn.execute("select config from tournaments").fetchone()
    assert '"backend": "process"' in config


def test_the_final_score_of_kryt_play_is_printed_once(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """Over 20 games (no table) the last progress line and the final one were the same."""
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "22", "--backend", "process"
    )
    assert code == 0, err
    finals = [line for line in out.splitlines() if line.startswith("Score of") and "22/22" in line]
    assert len(finals) == 1, out
    # A short run prints its table, and the score again under it.
    code, out, err = kryt(
        capsys, "play", "builtin:greedy", "builtin:random", "-n", "2", "--backend", "process"
    )
    assert code == 0, err
    lines = out.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("Score of") and "2/2" in line]
    table = next(i for i, line in enumerate(lines) if "series" in line and "ending" in line)
    assert len(at) == 2 and at[0] < table < at[1], out


def test_no_negative_zero_in_the_fit_captions(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    assert [tenths(v) for v in (-0.0, -0.04, 0.04, -0.05001, 12.345)] == [
        "0.0", "0.0", "0.0", "-0.1", "12.3",
    ]  # fmt: skip
    results = in_tmp / "r.csv"
    results.write_text(
        "first,second,result\na,b,1-0\nb,a,1/2-1/2\na,c,0-1\nc,b,1-0\nb,c,0-1\nc,a,1-0\na,b,0-1\n"
    )
    code, out, err = kryt(capsys, "ratings", "fit", str(results))
    assert code == 0, err
    assert "first-mover advantage" in out and "-0.0" not in out, out


def test_arena_serve_help_lists_every_backend(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kryt(capsys, "arena", "serve", "--help")
    help_text = " ".join(out.replace("│", " ").split())
    assert code == 0
    assert "auto, docker, bwrap or process" in help_text


def test_resuming_a_finished_tournament_plays_and_probes_nothing(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "-n", "1",
        "--backend", "process",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = kryt(capsys, "tournament", "resume", "1")
    assert code == 0 and "already finished" in err
    assert "sandbox:" not in err and "games/s" not in err + out, err + out
