"""One clear line, in the user's terms, with the documented exit code: time controls out of
range, a SQLite file that cannot be used, ``set`` on a tournament a live run holds, a deal
book with a byte order mark, SPRT settings given twice or not finite, ``--book`` with
``--format standard``."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from arena.db import open_database
from arena.tournament.lease import RunLease
from kryt.errors import ExitCode
from referee.book import load_book
from tests.cli.helpers import kryt

ROOT = Path(__file__).resolve().parents[2]
GOOD_DECK = (
    "9D TD AC KH TS KD AH JC 7C QS 6H 8S 7D QH 9C 6S JD 8C"
    " TC 9S QC 6D KC AD 8H JS 7H 8D KS AS 9H TH JH 6C QD 7S"
)
PLAY = ["play", "builtin:random", "builtin:greedy", "-n", "2", "--backend", "process"]


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


# ---------------------------------------------------------------------------- time controls


@pytest.mark.parametrize("command", ["play", "run"])
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--time", "0+10"], "--time: time control '0+10': the move '0' must be from 0.001"
         " to 3600 seconds"),
        (["--time", "-1+10"], "the move '-1' must be from 0.001 to 3600 seconds"),
        (["--time", "4000+10"], "the move '4000' must be from 0.001 to 3600 seconds"),
        (["--time", "1+100000"], "the bank '100000' must be from 0 to 86400 seconds"),
        (["--time", "1+10+4000"], "the increment '4000' must be from 0 to 3600 seconds"),
    ],
)  # fmt: skip
def test_a_time_control_out_of_range_names_the_option_in_seconds(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: str,
    flags: list[str],
    expected: str,
) -> None:
    if command == "play":
        args = [*PLAY, *flags]
    else:
        args = ["tournament", "run", "builtin:random", "builtin:greedy", "--backend", "process"]
        args += [*flags, "-d", str(tmp_path / "k.db")]
    code, _, err = kryt(capsys, *args)
    assert code == ExitCode.BAD_INPUT, err
    assert len(_errors(err)) == 1 and expected in err, err
    assert "move_ms" not in err and "86400]" not in err
    assert not (tmp_path / "k.db").exists() or _tournaments(tmp_path / "k.db") == 0


def _tournaments(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from tournaments").fetchone()[0])


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--move-seconds", "0"], "--move-seconds must be from 0.001 to 3600 seconds, got 0.0"),
        (["--move-seconds", "5000"], "--move-seconds must be from 0.001 to 3600 seconds"),
        (["--bank-seconds", "100000"], "--bank-seconds must be from 0 to 86400 seconds"),
        (["--increment-seconds", "4000"], "--increment-seconds must be from 0 to 3600 seconds"),
        (["--time", "2=0.0001+1"], "the move '0.0001' must be from 0.001 to 3600 seconds"),
    ],
)
def test_kryt_play_holds_its_time_options_to_the_documented_bounds(
    capsys: pytest.CaptureFixture[str], flags: list[str], expected: str
) -> None:
    code, out, err = kryt(capsys, *PLAY, *flags)
    assert code == ExitCode.BAD_INPUT, err
    assert len(_errors(err)) == 1 and expected in err, err
    assert "Score of" not in out  # nothing was played


def test_the_bounds_in_the_docs_are_the_code_s() -> None:
    from arena.tournament import config
    from referee import timecontrol

    docs = (ROOT / "docs" / "configuration.md").read_text()
    assert "| number 0.001–3600 | time per move |" in docs
    assert config.MOVE_SECONDS == timecontrol.MOVE_SECONDS == (0.001, 3600.0)
    assert config.BANK_SECONDS == timecontrol.BANK_SECONDS == (0.0, 86_400.0)
    assert config.INCREMENT_SECONDS == timecontrol.INCREMENT_SECONDS == (0.0, 3600.0)


# ---------------------------------------------------------------------------- SQLite files


def test_a_file_that_is_not_a_database_gets_a_hint_about_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name, data in [("junk.db", bytes(range(256)) * 20), ("text.db", b"hello, world\n")]:
        path = tmp_path / name
        path.write_bytes(data)
        code, _, err = kryt(capsys, "tournament", "status", "-d", str(path))
        assert code == ExitCode.UNAVAILABLE, err
        assert "server" not in err, err
        assert "hint: the file is not a Kryt database" in err, err
        assert path.read_bytes() == data


def test_a_directory_given_as_the_database_is_named_a_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    for command in (["tournament", "status"], ["leaderboard"]):
        code, _, err = kryt(capsys, *command, "-d", str(folder))
        assert code == ExitCode.UNAVAILABLE, err
        assert f"hint: {folder} is a directory" in err and str(folder / "kryt.db") in err, err
        assert "not writable" not in err, err
    assert list(folder.iterdir()) == []


def test_a_damaged_database_gets_a_hint_about_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    whole = tmp_path / "whole.db"
    open_database(whole).close()
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(whole.read_bytes()[:4096])
    code, _, err = kryt(capsys, "tournament", "status", "-d", str(damaged))
    assert code == ExitCode.UNAVAILABLE, err
    assert "server" not in err and "hint: the file is not a Kryt database" in err, err


def test_a_read_only_database_is_read_and_a_write_is_one_line(tmp_path: Path) -> None:
    """As a user who may read the file but not write it (root is not held back by file
    modes: then the command runs as ``nobody``): ``status`` reads it (opened read-only),
    ``run`` is refused in one line naming the permissions, before anything is started."""
    folder = Path(tempfile.mkdtemp(prefix="kryt-ro-"))  # nobody must reach it
    try:
        db = folder / "k.db"
        open_database(db).close()
        (folder / "k.db-wal").unlink(missing_ok=True)
        (folder / "k.db-shm").unlink(missing_ok=True)
        db.chmod(0o444)
        folder.chmod(0o555)
        command = [sys.executable, "-m", "kryt", "tournament", "status", "-d", str(db)]
        writes = [
            sys.executable, "-m", "kryt", "tournament", "run", "builtin:random",
            "builtin:greedy", "--backend", "process", "-d", str(db),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv to drop privileges")
            drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
            # nobody must be able to read this checkout and its virtual environment (a
            # clone in a private temporary folder is not): else there is no one to ask.
            probe = subprocess.run(
                [*drop, sys.executable, "-c", "import kryt.cli"],
                capture_output=True,
                text=True,
                cwd=folder,
                env=env,
                timeout=120,
            )
            if probe.returncode != 0:
                pytest.skip(f"an unprivileged user cannot import this checkout ({ROOT})")
            command = [*drop, *command]
            writes = [*drop, *writes]
        read = subprocess.run(
            command, capture_output=True, text=True, cwd=folder, env=env, timeout=120
        )
        result = subprocess.run(
            writes, capture_output=True, text=True, cwd=folder, env=env, timeout=120
        )
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
    assert read.returncode == ExitCode.OK, read.stderr
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    assert "Traceback" not in result.stderr and "server" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "sandbox" not in result.stderr, result.stderr
    assert "read-only here" in result.stderr and "not writable" in result.stderr


def test_a_missing_file_gets_no_server_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = kryt(capsys, "tournament", "status", "-d", str(tmp_path / "none.db"))
    assert code == ExitCode.UNAVAILABLE and "no database at" in err
    assert "server" not in err
    # The message says where to point: one line, no hint repeating it.
    assert err.count("\n") == 1 and "hint:" not in err, err


# ---------------------------------------------------------------------------- set while held


def test_set_while_a_live_run_holds_the_tournament_is_busy_exit_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db_path = tmp_path / "k.db"
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
        "--backend", "process", "--move-seconds", "0.5", "-d", str(db_path),
        "--store", str(tmp_path / "store"),
    )  # fmt: skip
    assert code == 0, err
    with sqlite3.connect(db_path) as conn:  # unfinished again, as if stopped
        conn.execute("delete from games where series_id = 1 and number = 2")
        conn.execute("update series set status = 'running' where id = 1")
        conn.execute("update tournaments set status = 'pending' where id = 1")
    db = open_database(db_path)
    try:
        with RunLease(db, 1):  # a live run (this process) holds it
            code, _, err = kryt(capsys, "tournament", "set", "1", "name=x", "-d", str(db_path))
            assert code == ExitCode.UNAVAILABLE, err
            assert len(_errors(err)) == 1 and "is being run by" in err, err
            assert "change its settings after that run ends" in err
        code, _, err = kryt(capsys, "tournament", "set", "1", "name=x", "-d", str(db_path))
        assert code == 0, err
    finally:
        db.close()


# ---------------------------------------------------------------------------- deal books


def test_a_book_with_a_byte_order_mark_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    book = tmp_path / "bom.txt"
    book.write_bytes(b"\xef\xbb\xbf" + GOOD_DECK.encode() + b"\n")
    assert load_book(book) == (tuple(GOOD_DECK.split()),)
    code, out, err = kryt(capsys, *PLAY, "--book", str(book), "--move-seconds", "0.5")
    assert code == 0, err
    assert "deal book: 1 decks" in err and "pentanomial" in out


def test_a_book_with_format_standard_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    book = tmp_path / "book.txt"
    book.write_text(GOOD_DECK + "\n")
    code, out, err = kryt(capsys, *PLAY, "--book", str(book), "--format", "standard")
    assert code == ExitCode.BAD_INPUT, err
    assert _errors(err) == [
        "error: --book plays each deck twice with the hands swapped (the duplicate format),"
        " not --format standard: leave --format out (or give duplicate)"
    ], err
    assert out == ""


# ---------------------------------------------------------------------------- SPRT


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["elo0=0", "elo0=1"], "elo0 is given twice (elo0=0 and elo0=1); give it once"),
        (["elo0=-inf"], "elo0 must be a finite number, got '-inf'"),
        (["elo1=inf"], "elo1 must be a finite number, got 'inf'"),
        (["alpha=nan"], "alpha must be a finite number, got 'nan'"),
    ],
)
def test_sprt_settings_given_twice_or_not_finite_are_refused(
    capsys: pytest.CaptureFixture[str], words: list[str], expected: str
) -> None:
    code, out, err = kryt(capsys, *PLAY, "--sprt", *words)
    assert code == ExitCode.BAD_INPUT, err
    assert _errors(err) == [f"error: {expected}"], err
    assert out == ""
