"""The ``kryt`` command line as a user meets it: exit codes, one-line errors, real runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / "kryt.db"


def test_help_lists_every_command_group(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kryt(capsys, "--help")
    assert code == 0
    for group in (
        "bot",
        "play",
        "submit",
        "tournament",
        "replay",
        "leaderboard",
        "ratings",
        "demo",
    ):
        assert group in out


def test_a_wrong_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, _, err = kryt(capsys, "tournament", "run", "--gamez", "3")
    assert code == ExitCode.BAD_INPUT
    assert err.splitlines() == [
        "error: No such option: --gamez (Possible options: --games, --name, --time)",
        "hint: see kryt tournament run --help",
    ]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("games", "list", "--limit", "1.5"), "Invalid value for '--limit' / '-n'"),
        (("replay", "abc"), "Invalid value for 'game_id'"),
        (("tournament", "resume"), "Missing argument 'tournament_id'"),
        (("replay", "-1"), "-1 is not a valid value: ids, counts and seconds are positive"),
        (("tournament", "run", "a", "b", "--games", "\x1b[2J"), "Invalid value for '--games'"),
    ],
)
def test_a_usage_error_is_one_error_line_with_the_value_given_and_a_hint(
    capsys: pytest.CaptureFixture[str], db: Path, args: tuple[str, ...], error: str
) -> None:
    """Click's four lines (usage, "Try ...", a blank, "Error: ...") were the one error of
    the CLI not in its ``error:``/``hint:`` form, and did not quote the value given."""
    code, out, err = kryt(capsys, *args)
    assert code == ExitCode.BAD_INPUT and not out
    first, hint = err.splitlines()
    assert first.startswith(f"error: {error}") and hint.startswith("hint: see kryt ")
    assert hint.endswith(" --help") and "\x1b" not in err  # a real ESC is shown escaped
    if error.startswith("Invalid value"):
        assert f"(got {args[-1]!r})" in first


def test_submit_is_idempotent_and_refuses_bad_bots(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    code, out, _ = kryt(capsys, "submit", str(EXAMPLES / "random"), "--by", "me")
    assert code == 0 and "stored as submission 1" in out
    code, out, _ = kryt(capsys, "submit", str(EXAMPLES / "random"))
    assert code == 0 and "already stored" in out
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bot.toml").write_text('name = "Bad Name!"\nversion = "1"\n')
    code, _, err = kryt(capsys, "submit", str(bad))
    assert code == ExitCode.BAD_INPUT
    assert err.startswith("error: ") and len(err.strip().splitlines()) <= 2
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from submissions").fetchone() == (1,)


def test_status_without_a_database_says_so(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, _, err = kryt(capsys, "tournament", "status")
    assert code == ExitCode.UNAVAILABLE
    assert "error:" in err and "Traceback" not in err
    assert not db.exists()


def test_run_status_replay_and_verify(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, out, err = kryt(
        capsys, "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        "--games", "2", "--backend", "process", "--seed", "4", "--name", "cli-test",
    )  # fmt: skip
    assert code == 0, err
    assert "Leaderboard: cli-test" in out and "greedy" in out
    # The run stored a fit of the whole database too, and it is fresh: the global board
    # shows it instead of fitting again.
    from arena.db import latest_rating_snapshot, open_database
    from leaderboard.standings import standings

    database = open_database(f"sqlite:///{db}", create=False)
    with database.read_session() as session:
        stored = latest_rating_snapshot(session=session, model="bayeselo")
        assert stored is not None
        assert stored.snapshot.tournament_id is None
        inputs = stored.snapshot.parameters["inputs"]
        board = standings(session=session)
    assert inputs == board.inputs != ""
    code, out, _ = kryt(capsys, "tournament", "status")
    assert code == 0 and "cli-test" in out and "2/2" in out
    code, out, _ = kryt(capsys, "replay", "1", "--verify")
    assert code == 0 and "verified" in out and "deck:" in out
    # Tamper with the stored result: verification must notice.
    with sqlite3.connect(db) as conn:
        result = conn.execute("select result from games where id = 1").fetchone()[0]
        flipped = "seat1" if result == "seat0" else "seat0"
        conn.execute("update games set result = ? where id = 1", (flipped,))
    code, out, _ = kryt(capsys, "replay", "1", "--verify")
    assert code == ExitCode.FAILED and "mismatch" in out
    code, _, err = kryt(capsys, "replay", "999")
    assert code == ExitCode.BAD_INPUT and "999" in err
    code, out, err = kryt(capsys, "tournament", "resume", "1")
    assert code == 0 and "already finished" in err


def test_a_game_voided_after_the_fact_is_replayed_by_resume(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    """``void_game`` (an organiser's, after the tournament finished) left the series
    "finished" one game short, and resume said "already finished": now the series and the
    tournament are open again, and resume replays the game with the same deal and dealer."""
    from arena.db import (
        games_of_series,
        get_game,
        get_series,
        get_tournament,
        open_database,
        void_game,
    )
    from referee.protocol.messages import GameEndReason

    code, _, err = kryt(
        capsys, "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        "--games", "3", "--backend", "process", "--seed", "9",
    )  # fmt: skip
    assert code == 0, err
    database = open_database(f"sqlite:///{db}", create=False)
    with database.session() as s:
        voided = void_game(2, "a sandbox fault found later", session=s)
        series_id, number = voided.series_id, voided.number
        deal, dealer = voided.deck, voided.dealer
        assert get_series(series_id, session=s).status == "running"
        assert get_tournament(1, session=s).status == "running"
    code, out, _ = kryt(capsys, "tournament", "status", "1")
    assert code == 0 and "2/3" in out
    # One vocabulary: its record's ending is ``void`` (it was played to another), so the
    # ending filter finds it as void, never as what it was played to.
    code, out, _ = kryt(capsys, "games", "list", "--reason", "void")
    rows = [line.split() for line in out.splitlines() if "│" in line]
    assert code == 0 and [row[0] for row in rows] == ["2"], out
    assert "void (played:" in out
    played = {r.value for r in GameEndReason} - {"void"}
    code, out, _ = kryt(capsys, "games", "list", *(a for r in played for a in ("--reason", r)))
    listed = {line.split()[0] for line in out.splitlines() if "│" in line}
    assert code == 0 and listed == {"1", "3"}, out
    code, _, err = kryt(capsys, "tournament", "resume", "1")
    assert code == 0 and "already finished" not in err, err
    with database.read_session() as s:
        counted = games_of_series(series_id, session=s)
        assert [g.number for g in counted] == [1, 2, 3]
        replay = next(g for g in counted if g.number == number)
        assert replay.attempt == 2 and replay.id != 2
        assert (replay.deck, replay.dealer) == (deal, dealer)
        replay_id = replay.id
        assert get_game(2, session=s).voided
        assert get_series(series_id, session=s).status == "finished"
        assert get_tournament(1, session=s).status == "finished"
    code, out, _ = kryt(capsys, "replay", str(replay_id), "--verify")
    assert code == 0 and "verified" in out
    database.close()


def test_play_a_quick_series(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, out, _ = kryt(
        capsys, "play", str(EXAMPLES / "greedy"), str(EXAMPLES / "random"), "--games", "3",
        "--backend", "process",
    )  # fmt: skip
    assert code == 0
    assert "greedy 1.0.0" in out and "random 1.0.0" in out
    assert out.count("out") + out.count("draw") >= 3
    assert not db.exists()  # a quick series stores nothing


def test_a_bad_config_file_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    config = tmp_path / "t.toml"
    config.write_text('bots = ["a", "b"]\ngamez = 3\n')
    code, _, err = kryt(capsys, "tournament", "run", "--config", str(config))
    assert code == ExitCode.BAD_INPUT
    assert "unknown setting" in err and "gamez" in err


def test_run_on_a_local_dask_cluster(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, out, err = kryt(
        capsys, "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        "--games", "2", "--backend", "process", "--executor", "dask", "--name", "on-dask",
    )  # fmt: skip
    assert code == 0, err
    assert "worker" in err and "sandbox" in err
    code, out, _ = kryt(capsys, "tournament", "status")
    assert "on-dask" in out and "2/2" in out and "finished" in out


def test_an_archive_and_its_folder_are_the_same_submission(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import tempfile

    archive = shutil.make_archive(str(tmp_path / "random"), "zip", EXAMPLES / "random")
    # A temporary directory of this test's own: other tests submit at the same time.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    code, out, _ = kryt(capsys, "submit", archive)
    assert code == 0 and "stored as submission 1" in out
    code, out, _ = kryt(capsys, "submit", str(EXAMPLES / "random"))
    assert code == 0 and "already stored" in out and "submission 1" in out
    assert list(private.glob("kryt-submit-*")) == []


def test_submit_refuses_a_bot_that_does_not_compile(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    bot = tmp_path / "broken"
    bot.mkdir()
    (bot / "bot.toml").write_text(
        'name = "broken"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    (bot / "helpers.py").write_text("X = 1\n")
    (bot / "bot.py").write_text("from sdk import Bot\n\ndef act(view)\n    return 'take'\n")
    code, out, err = kryt(capsys, "submit", str(bot))
    assert code == ExitCode.BAD_INPUT, out
    assert "bot.py:3" in err and "SyntaxError" in err and "Traceback" not in err
    assert not db.exists() or sqlite3.connect(db).execute(
        "select count(*) from submissions"
    ).fetchone() == (0,)
    (bot / "bot.py").write_text("from sdk import Bot\n\ndef act(view):\n    return 'take'\n")
    code, out, _ = kryt(capsys, "submit", str(bot))
    assert code == 0 and "stored as submission" in out


def test_leaderboard_takes_d_and_keeps_forfeits_at_80_columns(
    capsys: pytest.CaptureFixture[str], db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = kryt(
        capsys, "tournament", "run", str(EXAMPLES / "random"), str(EXAMPLES / "greedy"),
        "--games", "2", "--backend", "process", "--seed", "4", "-d", str(db),
    )  # fmt: skip
    assert code == 0, err
    code, out, err = kryt(capsys, "leaderboard", "-d", str(db))
    assert code == 0, err
    assert "greedy" in out and "Forfeits" in out


def test_one_backend_option_everywhere_with_the_old_name_hidden(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in (("play",), ("bot", "check"), ("tournament", "run")):
        code, out, _ = kryt(capsys, *command, "--help")
        assert code == 0
        assert "--backend" in out and "--sandbox" not in out, command
    code, out, err = kryt(
        capsys, "bot", "check", "builtin:random", "--games", "1", "--sandbox", "process"
    )
    assert code == 0, out + err
    assert "sandbox: process" in out and "OK" in out
