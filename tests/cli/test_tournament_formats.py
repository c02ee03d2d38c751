"""Gauntlets, extending a finished tournament, results printed as they come, and crash
tracebacks kept with tournament games: each through the ``kryt`` command line."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from arena.db import open_database
from arena.tournament.lease import RunLease
from arena.tournament.service import prepare_executor, tournament_state
from kryt.cli import main
from kryt.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"


def kryt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flat(text: str) -> str:
    """Rich wraps long lines at the console's width: compare words, not line breaks."""
    return " ".join(text.split())


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / "kryt.db"


@pytest.fixture
def rival(tmp_path: Path) -> Path:
    """A third quick bot: the random example under another name (so: not a bundled bot)."""
    folder = tmp_path / "rival"
    shutil.copytree(EXAMPLES / "random", folder)
    manifest = folder / "bot.toml"
    manifest.write_text(manifest.read_text().replace('name = "random"', 'name = "rival"'))
    return folder


def series_rows(db: Path, tournament_id: int = 1) -> list[tuple[int, int, int, str | None]]:
    with sqlite3.connect(db) as conn:
        return list(
            conn.execute(
                "select submission_a_id, submission_b_id, games_planned, seats from series"
                " where tournament_id = ? order by position",
                (tournament_id,),
            )
        )


def names(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return dict(
            conn.execute(
                "select bots.name, submissions.id from submissions"
                " join bots on bots.id = submissions.bot_id"
            )
        )


# ---------------------------------------------------------------------------- gauntlet


def test_a_gauntlet_plays_only_the_gauntlet_bot_and_prints_each_game(
    capsys: pytest.CaptureFixture[str], db: Path, rival: Path
) -> None:
    code, out, err = kryt(
        capsys, "tournament", "run", "--gauntlet", "builtin:greedy", "builtin:random",
        str(rival), "--games", "2", "--backend", "process", "--unsafe", "--name", "g", "-v",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    ids = names(db)
    rows = series_rows(db)
    # The gauntlet bot meets each of the others once; random and rival never meet.
    assert sorted((a, b) for a, b, _, _ in rows) == sorted(
        [(ids["greedy"], ids["random"]), (ids["greedy"], ids["rival"])]
    )
    # One line per game as it ends (verbose), naming the bots, the game and the ending.
    lines = [line for line in err.splitlines() if line.startswith("series ")]
    assert len(lines) == 4, err
    assert all(" game " in line and " by " in line and " moves" in line for line in lines)
    assert any("greedy 1.0.0 vs rival 1.0.0" in line for line in lines)
    assert "Leaderboard: g" in out and "rival" in out
    with sqlite3.connect(db) as conn:
        (config,) = conn.execute("select config from tournaments where id = 1").fetchone()
    assert json.loads(config)["gauntlet"] == "builtin:greedy"  # stored: resume needs no flag
    code, _, err = kryt(capsys, "tournament", "resume", "1")
    assert code == ExitCode.OK and "already finished" in err
    assert len(series_rows(db)) == 2


def test_a_gauntlet_at_the_classic_table_from_a_config_file(
    capsys: pytest.CaptureFixture[str], db: Path, rival: Path, tmp_path: Path
) -> None:
    config = tmp_path / "gauntlet.toml"
    config.write_text(
        'name = "table gauntlet"\nruleset = "classic"\ntable_size = 2\ngames_per_pair = 1\n'
        'gauntlet = "rival"\nbots = ["builtin:greedy", "builtin:random", "rival"]\n'
        '[sandbox]\nbackend = "process"\nallow_unsafe = true\n'
    )
    code, out, err = kryt(capsys, "tournament", "run", "--config", str(config))
    assert code == ExitCode.OK, err
    assert "Leaderboard: table gauntlet" in out
    ids = names(db)
    rows = series_rows(db)
    # Every table includes the gauntlet bot (a path relative to the file), seated first.
    assert [json.loads(seats)[0] for _, _, _, seats in rows if seats] == [ids["rival"]] * 2
    assert len(rows) == 2
    # Not verbose: one line per finished series with its score.
    assert flat(err).count(" finished: ") == 2 and "losses" in err
    # Extending a table tournament adds one series per seating, the gauntlet bot still first.
    code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", "1")
    assert code == ExitCode.OK, err
    rows = series_rows(db)
    assert len(rows) == 4 and [r[3] for r in rows[2:]] == [r[3] for r in rows[:2]]
    with sqlite3.connect(db) as conn:
        seeds = [s for (s,) in conn.execute("select seed from series order by position")]
    assert len(set(seeds)) == 4  # the extension's seeds are new


@pytest.mark.parametrize("value", ['""', "3"])
def test_a_gauntlet_that_names_no_bot_is_refused(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path, value: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(f'gauntlet = {value}\nbots = ["builtin:greedy", "builtin:random"]\n')
    code, _, err = kryt(capsys, "tournament", "run", "--config", str(config))
    assert code == ExitCode.BAD_INPUT
    assert "gauntlet must name a bot" in err, err
    assert not db.exists()  # refused before anything is stored


# ---------------------------------------------------------------------------- extend


def test_extend_adds_games_with_a_fresh_committed_seed_that_replay_verifies(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
        "--backend", "process", "--name", "ext",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    code, out, err = kryt(capsys, "tournament", "extend", "1", "--games", "1")
    assert code == ExitCode.OK, err
    assert "extension 1 adds 1 series (1 games); seed commitment" in flat(err)
    rows = series_rows(db)
    assert [games for _, _, games, _ in rows] == [2, 1]
    assert rows[0][:2] == rows[1][:2]  # the same pair
    # The leaderboard covers every game: 3 per bot.
    code, out, _ = kryt(capsys, "leaderboard", "-t", "1", "--json")
    assert code == ExitCode.OK
    assert {row["bot"]: row["games"] for row in json.loads(out)["rows"]} == {
        "random": 3,
        "greedy": 3,
    }
    with sqlite3.connect(db) as conn:
        (game_id,) = conn.execute("select id from games where series_id = 2").fetchone()
        (config, seed) = conn.execute("select config, seed from tournaments").fetchone()
        (series_seed,) = conn.execute("select seed from series where id = 2").fetchone()
    stored = json.loads(config)
    (round_,) = stored["extensions"]
    assert round_["seed"] != seed and round_["first_position"] == 1
    assert series_seed != conn_seed_of_first_series(db)
    code, out, _ = kryt(capsys, "replay", str(game_id), "--verify")
    assert code == ExitCode.OK and flat(out).count("verified") == 2, out
    # The chain really is checked: a round seed that does not match its commitment fails.
    round_["seed"] += 1
    with sqlite3.connect(db) as conn:
        conn.execute("update tournaments set config = ?", (json.dumps(stored),))
    code, out, _ = kryt(capsys, "replay", str(game_id), "--verify")
    assert code == ExitCode.FAILED and "commitment" in flat(out)
    code, out, _ = kryt(capsys, "replay", "1", "--verify")  # the first series is untouched
    assert code == ExitCode.OK


def conn_seed_of_first_series(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        (seed,) = conn.execute("select seed from series where id = 1").fetchone()
    return int(seed)


def test_extend_refuses_clearly(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
        "--format", "duplicate", "--backend", "process", "--name", "dup",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    code, _, err = kryt(capsys, "tournament", "extend", "7", "--games", "2")
    assert code == ExitCode.BAD_INPUT and "no tournament with id 7" in err
    code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", "0")
    assert code == ExitCode.BAD_INPUT and "must be in [1, 1000000]" in err
    code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", "3")
    assert code == ExitCode.BAD_INPUT and "even number" in err
    # A live run holds the tournament: refused, naming it.
    with RunLease(open_database(f"sqlite:///{db}"), 1):
        code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", "2")
    assert code == ExitCode.UNAVAILABLE and "being run by" in err
    with sqlite3.connect(db) as conn:
        conn.execute("update tournaments set status = 'cancelled'")
    code, _, err = kryt(capsys, "tournament", "extend", "1", "--games", "2")
    assert code == ExitCode.BAD_INPUT and "cancelled" in err
    assert len(series_rows(db)) == 1  # nothing was added by any refusal


# ---------------------------------------------------------------------------- tracebacks

CRASHING_BOT = '''"""Test bot: its helper raises in every decision (a KeyError, hostile text)."""

from helper import pick
from sdk import Bot, serve


class Crashing(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        return pick(view)


if __name__ == "__main__":
    serve(Crashing())
'''

HELPER = '''"""The crashing bot's helper module."""


def pick(view):  # type: ignore[no-untyped-def]
    table = {}
    return table["[bold red]FAKE[/] \\x1b[2J"]
'''


def test_a_tournament_game_keeps_the_traceback_of_a_crash(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    bot = tmp_path / "crashing"
    bot.mkdir()
    (bot / "bot.toml").write_text(
        'name = "crashing"\nversion = "1"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (bot / "bot.py").write_text(CRASHING_BOT)
    (bot / "helper.py").write_text(HELPER)
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", str(bot), "--games", "2",
        "--backend", "process", "--unsafe", "--name", "crash", "-v",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    # The live line shows the bot's text escaped: no raw escape character reaches the
    # terminal, and its markup is printed as text.
    assert "\x1b" not in err
    assert "crash" in err and "[bold red]FAKE[/] \\x1b[2J" in err
    code, out, _ = kryt(capsys, "games", "list", "--reason", "crash")
    assert code == ExitCode.OK
    assert out.count("crash at helper.py:6") == 2, out
    with sqlite3.connect(db) as conn:
        (game_id,) = conn.execute("select min(id) from games").fetchone()
        (detail,) = conn.execute(
            "select forfeit_detail from games where id = ?", (game_id,)
        ).fetchone()
    assert "Traceback (most recent call last)" in detail
    code, out, _ = kryt(capsys, "replay", str(game_id))
    assert code == ExitCode.OK
    assert "Traceback (most recent call last):" in out
    assert 'bot.py", line 9, in act' in out and 'helper.py", line 6, in pick' in out
    assert "KeyError" in out and "\x1b" not in out


# ---------------------------------------------------------------------------- one runner


def test_a_resume_that_loses_the_race_for_the_lease_prepares_nothing(
    capsys: pytest.CaptureFixture[str], db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two resumes at the same instant both see the tournament free; the lease decides.
    The loser says so in one line: no sandbox line before it, no sandbox prepared."""
    import kryt.commands.tournament as commands

    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--games", "2",
        "--backend", "process", "--name", "race",
    )  # fmt: skip
    assert code == ExitCode.OK, err
    with sqlite3.connect(db) as conn:  # one series left to play
        conn.execute("update series set status = 'pending' where id = 1")
        conn.execute("delete from games where series_id = 1")
        conn.execute("update tournaments set status = 'pending'")
    state_before_the_other_run = tournament_state(1, open_database(f"sqlite:///{db}"))
    assert state_before_the_other_run.live_lease is None
    monkeypatch.setattr(commands, "tournament_state", lambda *_: state_before_the_other_run)
    prepared: list[object] = []

    def prepare_and_count(*args: Any, **kwargs: Any) -> Any:
        prepared.append(args)
        return prepare_executor(*args, **kwargs)

    monkeypatch.setattr(commands, "prepare_executor", prepare_and_count)
    with RunLease(open_database(f"sqlite:///{db}"), 1):
        code, out, err = kryt(capsys, "tournament", "resume", "1")
    assert code == ExitCode.UNAVAILABLE and "being run by" in flat(err), (out, err)
    assert "sandbox" not in out + err
    assert not prepared
    # The lease freed, the same resume plays the series.
    code, out, err = kryt(capsys, "tournament", "resume", "1")
    assert code == ExitCode.OK, err
    assert "sandbox:" in out + err and len(prepared) == 1
