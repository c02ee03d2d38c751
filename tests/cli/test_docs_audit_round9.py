"""Ninth documentation audit: the claims of README.md and docs/*.md checked, one by one,
against what the code does (command lines and their flags, defaults and bounds of the
settings, exit codes and messages, the game file, the deal book, the protocol, the
statistics of ``kryt play``, the arena server's settings).

A claim found false is kept as a strict ``xfail`` whose reason quotes the doc."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.db import DatabaseURLError
from arena.db.url import resolve_database_url
from arena.service.settings import ServiceSettings, SettingsError
from arena.tournament import lease
from arena.tournament.config import ConfigError, load_config
from arena.tournament.seeds import commitment
from kryt.errors import ExitCode
from kryt_proto.v1 import bot_pb2
from leaderboard.ratings import EloTracker
from leaderboard.ratings.match_stats import Sprt, match_stats, trinomial_sample
from referee import client
from referee.book import BookError, parse_book
from referee.protocol import messages
from referee.protocol.wire import decode_referee_message
from sandbox import uids
from tests.cli.helpers import flat, kryt

REPO = Path(__file__).resolve().parents[2]
KRYT = [sys.executable, "-m", "kryt"]
BOX = re.compile(r"[│╭╮╰╯─┃━]")
TIMEOUT = 300  # a busy two-core machine


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    return tmp_path


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KRYT_DATABASE_URL"}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [*KRYT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder whose ``kryt.db`` holds one finished tournament: random vs greedy, 2 games,
    seed 7, played by the process backend (trusted bundled bots)."""
    folder = tmp_path_factory.mktemp("played")
    done = _run(
        "tournament", "run", "builtin:random", "builtin:greedy", "-n", "2", "--seed", "7",
        "--backend", "process", "-d", str(folder / "kryt.db"), "--store", str(folder / "store"),
        cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    yield folder


def _export(played: Path, target: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run("games", "export", str(target), "-d", str(played / "kryt.db"), *extra, cwd=played)


# --- every documented command line and flag exists ---------------------------------------

DOCUMENTED_FLAGS: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (
        ("tournament", "run"),
        (
            "--config", "--name", "--games", "-n", "--ruleset", "--table-size", "--format",
            "--seed", "--concurrency", "-j", "--turn-limit", "--move-seconds",
            "--bank-seconds", "--grace-seconds", "--clock", "--increment-seconds", "--time",
            "--book", "--backend", "--unsafe", "--memory-mb", "--pids", "--gauntlet",
            "--executor", "--scheduler", "--worker-store", "--database", "-d", "--store",
            "--verbose", "-v",
        ),
    ),
    (
        ("tournament", "resume"),
        ("--take-over", "--executor", "--scheduler", "--worker-store", "--database", "--store",
         "--verbose"),
    ),
    (("tournament", "extend"), ("--games", "--executor", "--scheduler", "--verbose", "--store")),
    (("tournament", "status"), ("--database", "-d")),
    (("tournament", "set"), ("--database",)),
    (("tournament", "cancel"), ("--database",)),
    (
        ("play",),
        ("-n", "-j", "--sprt", "--time", "--book", "--format", "--verbose", "--backend",
         "--move-seconds", "--bank-seconds", "--increment-seconds", "--clock", "--seed"),
    ),
    (("games", "list"), ("--bot", "--result", "--reason", "--tournament", "-d")),
    (("games", "export"), ("--bot", "--result", "--reason", "--tournament", "--format", "--force")),
    (("games", "import"), ("-d", "--database")),
    (("replay",), ("--verify", "-d")),
    (
        ("leaderboard",),
        ("--tournament", "-t", "--json", "--ruleset", "--table-size", "--html", "--database",
         "--db", "-d"),
    ),
    (("leaderboard", "serve"), ("--host", "--port", "--database")),
    (
        ("ratings", "fit"),
        ("--json", "--prior", "--offset", "--confidence", "--paired", "--advantage",
         "--drawelo"),
    ),
    (("bot", "new"), ("--language",)),
    (("bot", "check"), ("--games", "--backend")),
    (("submit",), ("--server", "--database", "--store")),
    (("submissions",), ("--server",)),
    (("demo",), ("--games",)),
    (
        ("arena", "serve"),
        ("--host", "--port", "--port-file", "--store", "--ladder", "--no-ladder",
         "--games-per-series", "--concurrency", "--budget", "--executor", "--scheduler",
         "--dask-workers", "--backend"),
    ),
    (("arena", "author", "add"), ("--password", "--days")),
    (("arena", "author", "disable"), ()),
    (("arena", "author", "enable"), ()),
    (("arena", "author", "list"), ()),
    (("arena", "token", "create"), ("--days",)),
    (("arena", "token", "list"), ()),
    (("arena", "token", "revoke"), ()),
    (("arena", "invite", "create"), ("--days", "--label")),
    (("arena", "invite", "list"), ()),
]  # fmt: skip


def _help_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *path: str
) -> str:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = kryt(capsys, *path, "--help")
    assert code == 0, err
    return " ".join(BOX.sub(" ", out).split())


@pytest.mark.parametrize(
    ("path", "flags"), DOCUMENTED_FLAGS, ids=[" ".join(p) for p, _ in DOCUMENTED_FLAGS]
)
def test_every_documented_command_and_flag_exists(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    path: tuple[str, ...],
    flags: tuple[str, ...],
) -> None:
    text = _help_text(capsys, monkeypatch, *path)
    assert "Usage: kryt " + " ".join(path) in text, text
    missing = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    assert not missing, f"kryt {' '.join(path)} --help lacks {missing}"


def test_bot_check_takes_backend_none(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/protocol.md and writing-a-bot.md: ``kryt bot check --backend none``."""
    assert "none (a plain subprocess)" in _help_text(capsys, monkeypatch, "bot", "check")


def test_store_default_is_the_documented_folder(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/configuration.md: ``--store`` defaults to ``.kryt/submissions``."""
    for path in (("tournament", "run"), ("tournament", "resume"), ("submit",)):
        assert "default: .kryt/submissions" in _help_text(capsys, monkeypatch, *path), path


def test_leaderboard_serve_defaults_to_loopback_port_8000(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _help_text(capsys, monkeypatch, "leaderboard", "serve")
    assert re.search(r"--host .*default: 127\.0\.0\.1", text), text
    assert re.search(r"--port .*default: 8000", text), text


def test_a_wrong_flag_is_exit_2(capsys: pytest.CaptureFixture[str], in_tmp: Path) -> None:
    """docs/configuration.md, exit codes: 2 is bad input, a wrong flag."""
    code, _, _ = kryt(capsys, "tournament", "status", "--no-such-flag")
    assert code == 2 and int(ExitCode.BAD_INPUT) == 2
    assert not (in_tmp / "kryt.db").exists()


# --- docs/configuration.md: defaults and bounds ---------------------------------------------


def test_documented_defaults_are_the_real_defaults() -> None:
    config = load_config(None, bots=("a", "b"))
    assert (config.name, config.games_per_pair, config.format.value) == (
        "tournament", 10, "standard",
    )  # fmt: skip
    assert (config.seed, config.concurrency, config.turn_limit) == (None, 2, 1000)
    assert (config.ruleset, config.table_size, config.gauntlet, config.book) == (
        "default", 2, None, (),
    )  # fmt: skip
    tc = config.time_control
    assert (tc.move_seconds, tc.bank_seconds, tc.grace_seconds) == (1.0, 10.0, 0.05)
    assert (tc.clock, tc.increment_seconds) == ("wall", 0.0)
    sb = config.sandbox
    assert (sb.backend, sb.allow_unsafe, sb.memory_mb, sb.pids) == ("auto", False, 256, 64)
    assert (sb.cpus, sb.nofile, sb.tmpfs_mb, sb.fsize_mb, sb.startup_seconds) == (
        1.0, 256, 16, 8, 15.0,
    )  # fmt: skip


BOUNDS: list[tuple[str, float, float, float, float]] = [
    # setting, lowest allowed, highest allowed, just below, just above
    ("games_per_pair", 1, 1_000_000, 0, 1_000_001),
    ("concurrency", 1, 1024, 0, 1025),
    ("turn_limit", 1, 100_000, 0, 100_001),
    ("seed", 0, 2**62 - 1, -1, 2**62),
    ("move_seconds", 0.001, 3600, 0.0005, 3600.5),
    ("bank_seconds", 0, 86_400, -0.5, 86_400.5),
    ("grace_seconds", 0, 600, -0.5, 600.5),
    ("increment_seconds", 0, 3600, -0.5, 3600.5),
    ("memory_mb", 32, 65_536, 31, 65_537),
    ("pids", 8, 32_768, 7, 32_769),
    ("cpus", 0.01, 1024, 0.005, 1024.5),
    ("nofile", 16, 1_048_576, 15, 1_048_577),
    ("tmpfs_mb", 1, 65_536, 0, 65_537),
    ("fsize_mb", 1, 65_536, 0, 65_537),
    ("startup_seconds", 0.1, 600, 0.05, 600.5),
]


@pytest.mark.parametrize(
    ("key", "low", "high", "below", "above"), BOUNDS, ids=[b[0] for b in BOUNDS]
)
def test_each_documented_range_is_the_real_range(
    key: str, low: float, high: float, below: float, above: float
) -> None:
    for value in (low, high):
        load_config(None, bots=("a", "b"), **{key: value})
    for value in (below, above):
        with pytest.raises(ConfigError, match=re.escape(key)):
            load_config(None, bots=("a", "b"), **{key: value})


def test_bots_are_two_to_a_thousand_distinct_texts() -> None:
    load_config(None, bots=tuple(f"b{i}" for i in range(1000)))
    for bots in (("a",), ("a", "a"), tuple(f"b{i}" for i in range(1001))):
        with pytest.raises(ConfigError):
            load_config(None, bots=bots)


def test_a_name_is_1_to_200_characters() -> None:
    load_config(None, bots=("a", "b"), name="x" * 200)
    for name in ("", "x" * 201):
        with pytest.raises(ConfigError):
            load_config(None, bots=("a", "b"), name=name)


def test_duplicate_needs_an_even_number_of_games() -> None:
    load_config(None, bots=("a", "b"), format="duplicate", games_per_pair=4)
    with pytest.raises(ConfigError, match="even"):
        load_config(None, bots=("a", "b"), format="duplicate", games_per_pair=3)


def test_the_example_configuration_is_accepted_whole() -> None:
    """The README runs ``kryt tournament run --config examples/tournament.toml``."""
    config = load_config(REPO / "examples" / "tournament.toml")
    assert config.name == "example" and config.games_per_pair == 20
    assert [Path(b).resolve() for b in config.bots] == [
        (REPO / "sdk" / "examples" / name).resolve() for name in ("random", "greedy", "mc")
    ]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


BOTS_LINE = 'bots = ["builtin:random", "builtin:greedy"]\n'


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        (BOTS_LINE + "colour = 1\n", "colour"),
        (BOTS_LINE + "[sandbox]\nswap_mb = 1\n", "swap_mb"),
        (BOTS_LINE + "[time_control]\nhourglass = 1\n", "hourglass"),
        (BOTS_LINE + "turn_limit = true\n", "turn_limit"),
        (BOTS_LINE + "concurrency = 0\n", "concurrency"),
        (BOTS_LINE + "[time_control]\nclock = 'sundial'\n", "clock"),
        (BOTS_LINE + "format = 'swiss'\n", "swiss"),
        ("bots = [\n", "not valid TOML"),
    ],
    ids=["unknown key", "unknown sandbox key", "unknown time key", "bool", "range", "clock",
         "format", "malformed"],
)  # fmt: skip
def test_a_bad_configuration_file_is_one_error_line_and_a_hint_exit_2(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, toml: str, named: str
) -> None:
    """docs/configuration.md: "A bad setting is one `error:` line (naming the setting and
    the value, then a hint line) and exit code 2; no tournament is created." """
    config = _write(in_tmp, "t.toml", toml)
    code, _, err = kryt(
        capsys, "tournament", "run", "--config", str(config), "--backend", "process"
    )
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: ")
    assert named in lines[0], lines
    assert not (in_tmp / "kryt.db").exists()  # checked before anything is stored


def test_time_beside_move_seconds_is_refused(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--time", "1+10",
        "--move-seconds", "2", "--backend", "process",
    )  # fmt: skip
    assert code == 2 and err.startswith("error: ") and "--move-seconds" in err, err
    assert not (in_tmp / "kryt.db").exists()


def test_time_given_twice_for_every_bot_is_refused_by_play(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, out, err = kryt(
        capsys, "play", "builtin:random", "builtin:greedy", "-n", "1", "--time", "1+10",
        "--time", "2+20", "--backend", "process",
    )  # fmt: skip
    assert code == 2 and err.startswith("error: ") and "Score of" not in out, err


def test_scheduler_with_the_local_executor_is_refused(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--scheduler",
        "tcp://127.0.0.1:8786", "--backend", "process",
    )  # fmt: skip
    assert code == 2 and "--scheduler" in err and "dask" in err, err
    assert not (in_tmp / "kryt.db").exists()


def test_a_book_at_the_classic_table_is_refused(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    book = _write(in_tmp, "book.txt", DOC_BOOK)
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--ruleset",
        "classic", "--book", str(book), "--backend", "process",
    )  # fmt: skip
    assert code == 2 and "deal book is for the two-player game" in err, err


def _bot_time_nobody(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _, err = kryt(
        capsys, "tournament", "run", "builtin:random", "builtin:greedy", "--time",
        "nobody=1+10", "--backend", "process",
    )  # fmt: skip
    return code, err


def test_bot_time_naming_no_entered_bot_is_refused(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, err = _bot_time_nobody(capsys)
    assert code == 2 and "'nobody', which is not an entered bot" in err, err
    assert not (in_tmp / ".kryt").exists()  # no bot copied into the store either


def test_bot_time_naming_no_entered_bot_is_refused_before_anything_is_stored(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _ = _bot_time_nobody(capsys)
    assert code == 2
    assert not (in_tmp / "kryt.db").exists()


def test_bot_time_naming_no_entered_bot_has_a_hint_line(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, err = _bot_time_nobody(capsys)
    assert code == 2
    lines = [line for line in err.splitlines() if not line.startswith("sandbox:")]
    assert lines[-2].startswith("error: ") and lines[-1].startswith("hint: "), err


def test_the_lease_and_refit_periods_are_the_documented_ones() -> None:
    """docs/configuration.md: a lease is renewed every 5 s and expires 30 s after the last
    renewal; ratings are refitted at most every 30 s during a run."""
    from kryt.commands.tournament import REFIT_SECONDS

    assert lease.HEARTBEAT_SECONDS == 5.0
    assert lease.LEASE_TTL.total_seconds() == 30.0
    assert REFIT_SECONDS == 30.0


def test_the_sandbox_uid_pool_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/configuration.md: KRYT_SANDBOX_UIDS default ``1990000000-1990000999``."""
    assert (uids.DEFAULT_FIRST_UID, uids.DEFAULT_COUNT) == (1_990_000_000, 1000)
    assert uids.UIDS_ENV == "KRYT_SANDBOX_UIDS"


# --- docs/configuration.md: the arena server's settings -------------------------------------


def test_arena_defaults_are_the_documented_ones() -> None:
    s = ServiceSettings.from_env({})
    assert (s.host, s.port, str(s.store)) == ("127.0.0.1", 8000, ".kryt/submissions")
    assert (s.max_upload_bytes, s.writes_per_minute, s.auth_failures_per_minute) == (
        5 * 2**20, 30, 20,
    )  # fmt: skip
    assert (s.token_days, s.session_hours, s.secure_cookies) == (90, 12, False)
    assert (s.validation_games, s.reference_bots, s.log_limit_bytes) == (2, ("random",), 16384)
    assert (s.body_timeout_seconds, s.header_timeout_seconds, s.turn_limit) == (30, 30, 1000)
    ladder = s.ladder
    assert (ladder.enabled, ladder.games_per_series, ladder.concurrency) == (True, 4, 1)
    assert (ladder.budget_games, ladder.lease_seconds, ladder.poll_seconds) == (0, 30, 1)
    assert (ladder.seed, ladder.executor, ladder.scheduler, ladder.dask_workers) == (
        0, "local", "", 2,
    )  # fmt: skip
    assert s.sandbox.backend == "auto" and s.sandbox.allow_unsafe is False


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("KRYT_ARENA_REFERENCE_BOTS", "randon", "'randon'"),
        ("KRYT_ARENA_TOKEN_DAYS", "36501", "token_days"),
        ("KRYT_ARENA_MAX_UPLOAD_BYTES", str(20 * 2**20 + 1), "max_upload_bytes"),
        ("KRYT_ARENA_BODY_TIMEOUT_SECONDS", "0", "body_timeout_seconds"),
        ("KRYT_ARENA_HEADER_TIMEOUT_SECONDS", "3601", "header_timeout_seconds"),
        ("KRYT_ARENA_SECRET", "short-secret", "at least 16 bytes"),
    ],
)
def test_arena_settings_out_of_bounds_stop_the_server(variable: str, value: str, says: str) -> None:
    with pytest.raises(SettingsError) as caught:
        ServiceSettings.from_env({variable: value})
    message = str(caught.value)
    assert says in message, message
    if variable == "KRYT_ARENA_SECRET":
        assert value not in message  # never shows the value


def test_arena_settings_at_their_documented_limits_are_accepted() -> None:
    ServiceSettings.from_env(
        {
            "KRYT_ARENA_TOKEN_DAYS": "36500",
            "KRYT_ARENA_MAX_UPLOAD_BYTES": str(20 * 2**20),
            "KRYT_ARENA_BODY_TIMEOUT_SECONDS": "3600",
            "KRYT_ARENA_REFERENCE_BOTS": "greedy,mc,random",
            "KRYT_ARENA_SECRET": "x" * 16,
        }
    )


# --- docs/leaderboard.md, docs/database.md: where the database is --------------------------


def test_leaderboard_without_a_database_is_exit_3_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _, err = kryt(capsys, "leaderboard")
    assert code == 3, err
    assert err.startswith(f"error: no database at {in_tmp / 'kryt.db'}; run a tournament first")
    assert not (in_tmp / "kryt.db").exists()


def test_database_url_precedence_and_forms(tmp_path: Path) -> None:
    assert resolve_database_url(None, environ={}, cwd=tmp_path) == f"sqlite:///{tmp_path}/kryt.db"
    assert (
        resolve_database_url(None, environ={"KRYT_DATABASE_URL": "sqlite:////a/b.db"}, cwd=tmp_path)
        == "sqlite:////a/b.db"
    )
    assert (
        resolve_database_url("sqlite:////c.db", environ={"KRYT_DATABASE_URL": "sqlite:////a.db"})
        == "sqlite:////c.db"
    )
    for scheme in ("postgresql", "postgres"):
        assert resolve_database_url(f"{scheme}://u:p@h:5432/kryt", environ={}) == (
            "postgresql+psycopg://u:p@h:5432/kryt"
        )


@pytest.mark.parametrize(
    "url",
    ["postgresql+psycopg2://u@h/db", "sqlite://", "sqlite:///:memory:", "mysql://h/db",
     "postgresql://u:hunter2pw@h", "postgresql://u@h:99999/db"],
)  # fmt: skip
def test_unsupported_database_urls_are_refused_without_the_password(url: str) -> None:
    with pytest.raises(DatabaseURLError) as caught:
        resolve_database_url(url, environ={})
    assert isinstance(caught.value, ValueError)
    assert "hunter2pw" not in str(caught.value)


def test_migrate_current_names_both_revisions(played: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "arena.db.migrate", "current", str(played / "kryt.db")],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"database: (\d{4}); code head: \1\n", done.stdout), done.stdout


def test_migrate_current_of_another_applications_database_exits_1(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("create table recipes (id integer primary key)")
    conn.close()
    done = subprocess.run(
        [sys.executable, "-m", "arena.db.migrate", "current", str(foreign)],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 1
    assert "not a Kryt Arena database" in done.stdout + done.stderr, done


def test_migrate_current_of_a_database_with_a_foreign_revision_is_one_error_line(
    tmp_path: Path,
) -> None:
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("create table alembic_version (version_num varchar(32) primary key)")
        conn.execute("insert into alembic_version values ('abc123')")
        conn.execute("create table recipes (id integer primary key)")
    conn.close()
    done = subprocess.run(
        [sys.executable, "-m", "arena.db.migrate", "current", str(foreign)],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "another application" in lines[0]


# --- README / docs/leaderboard.md: what a played tournament shows ---------------------------


def test_tournament_status_lists_the_finished_tournament(played: Path) -> None:
    done = _run("tournament", "status", "-d", str(played / "kryt.db"), cwd=played)
    assert done.returncode == 0, done.stderr
    assert re.search(r"│ 1 +│ tournament +│ finished +│ - +│ 2/2 ", done.stdout), done.stdout


def test_leaderboard_json_has_the_documented_keys(played: Path) -> None:
    done = _run("leaderboard", "--json", "-d", str(played / "kryt.db"), cwd=played)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert set(document) == {
        "model", "note", "board", "intervals", "single_games", "rows", "pentanomials",
        "other_boards", "tournament", "progress",
    }  # fmt: skip
    assert document["board"] == {"ruleset": "default", "table_size": 2, "games": 2}
    assert document["intervals"] == "per game" and document["single_games"] == 0
    assert {row["bot"] for row in document["rows"]} == {"random", "greedy"}


def test_leaderboard_html_writes_the_documented_site(played: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = _run("leaderboard", "--html", str(site), "-d", str(played / "kryt.db"), cwd=played)
    assert done.returncode == 0, done.stderr
    assert re.match(
        rf"wrote \d+ pages to {re.escape(str(site))} \(.*\); open .*index\.html", done.stdout
    )
    for name in ("index.html", "leaderboard.json", "leaderboard-1.json"):
        assert (site / name).is_file(), name
    for folder in ("tournaments", "submissions", "series", "games", "static"):
        assert (site / folder).is_dir(), folder


def test_leaderboard_errors_are_one_line_exit_2(played: Path) -> None:
    """docs/leaderboard.md: an unknown --tournament is exit 2; docs/arena.md: a size the
    ruleset cannot seat is exit 2 in the CLI."""
    for extra in (("-t", "9"), ("--ruleset", "classic", "--table-size", "5")):
        done = _run("leaderboard", *extra, "-d", str(played / "kryt.db"), cwd=played)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1


def test_extend_refusals_are_exit_2(played: Path) -> None:
    db = str(played / "kryt.db")
    for args, says in (
        (("extend", "1", "--games", "0"), "--games"),
        (("extend", "1", "--games", "1000001"), "--games"),
        (("extend", "99", "--games", "2"), "no tournament with id 99"),
    ):
        done = _run("tournament", *args, "-d", db, cwd=played)
        assert done.returncode == 2 and says in done.stderr, done.stderr


def test_replay_verify_of_a_played_game(played: Path) -> None:
    done = _run("replay", "1", "--verify", "-d", str(played / "kryt.db"), cwd=played)
    assert done.returncode == 0, done.stderr
    assert "verified" in done.stdout, done.stdout


# --- docs/games-format.md -------------------------------------------------------------------

DOCUMENTED_HEADERS = (
    "KrytGameFile", "GameId", "Tournament", "TournamentId", "TournamentSeed", "SeedCommitment",
    "TournamentStatus", "SeriesId", "SeriesPosition", "SeriesFormat", "SeriesGames",
    "SeriesSeed", "SeriesStatus", "SeriesASeat", "SeriesSeedIds", "Game", "Attempt", "Seat0",
    "Seat0Version", "Seat0Sha256", "Seat1", "Seat1Version", "Seat1Sha256", "Dealer",
    "TurnLimit", "Deck", "Result", "Ending", "Referee", "Started", "Finished",
)  # fmt: skip
HEADER = re.compile(r'^\[(\w+) (".*")\]$')
MOVE = re.compile(r"^(\d+)\. ([01]) (.+) \{([0-9.e+-]+)(?: cpu=[0-9.e+-]+)?\}$")


def _records(text: str) -> list[tuple[dict[str, str], list[str], str]]:
    """(headers, move lines, result line) of each record of a game file."""
    records = []
    for block in re.split(r"\n\n(?=\[KrytGameFile)", text.strip()):
        head, _, body = block.partition("\n\n")
        headers = {}
        for line in head.splitlines():
            match = HEADER.match(line)
            assert match, line
            headers[match[1]] = json.loads(match[2])
        lines = body.strip().splitlines()
        records.append((headers, lines[:-1], lines[-1]))
    return records


@pytest.fixture(scope="module")
def exported(played: Path) -> str:
    target = played / "games.kgn"
    done = _export(played, target)
    assert done.returncode == 0, done.stderr
    return target.read_text(encoding="utf-8")


def test_an_exported_record_has_every_documented_header(exported: str) -> None:
    records = _records(exported)
    assert len(records) == 2
    for headers, _, _ in records:
        assert next(iter(headers)) == "KrytGameFile" and headers["KrytGameFile"] == "1"
        missing = [h for h in DOCUMENTED_HEADERS if h not in headers]
        assert not missing, missing
        # Optional headers appear only when they apply: no forfeit, no void here.
        assert not {"ForfeitSeat", "ForfeitInput", "ForfeitDetail", "VoidReason"} & set(headers)


def test_exported_header_values_mean_what_the_doc_says(exported: str) -> None:
    for headers, moves, result in _records(exported):
        assert headers["TournamentSeed"] == "7" and headers["TournamentStatus"] == "finished"
        assert headers["SeedCommitment"] == commitment(7)
        assert re.fullmatch(r"[0-9a-f]{64}", headers["SeedCommitment"])
        assert len(headers["Deck"].split()) == 36
        assert re.fullmatch(r"\d+ \d+", headers["SeriesSeedIds"])
        assert re.fullmatch(r"[0-9a-f]{64}", headers["Seat0Sha256"])
        # "1+10+0.1 grace=0.05 clock=wall": the defaults of the run.
        assert headers["Seat0Time"] == headers["Seat1Time"] == "1+10+0 grace=0.05 clock=wall"
        # The result line repeats the Result header and ends the record.
        assert result == headers["Result"] and result in {"1-0", "0-1", "1/2-1/2", "*"}
        # "the dealer is Dealer, and the other seat moves first"
        first = MOVE.match(moves[0])
        assert first, moves[0]
        assert int(first[2]) == 1 - int(headers["Dealer"])
        for number, line in enumerate(moves, 1):
            match = MOVE.match(line)
            assert match and int(match[1]) == number, line


def test_csv_export_has_the_documented_columns(played: Path, tmp_path: Path) -> None:
    target = tmp_path / "games.csv"
    done = _export(played, target)
    assert done.returncode == 0, done.stderr
    header = target.read_text(encoding="utf-8").splitlines()[0]
    assert header == (
        "game_id,tournament,tournament_id,series_id,game,attempt,seat0,seat0_version,seat1,"
        "seat1_version,dealer,result,ending,forfeit_seat,forfeit_detail,moves,actions,"
        "started,finished"
    )
    row = target.read_text(encoding="utf-8").splitlines()[1]
    assert re.search(r",(\d+),([01]:[^;,]+)(;[01]:[^;,]+)*,", row), row  # SEAT:ACTION;...


def test_json_export_is_the_headers_as_strings_plus_moves(
    played: Path, tmp_path: Path, exported: str
) -> None:
    target = tmp_path / "games.json"
    done = _export(played, target)
    assert done.returncode == 0, done.stderr
    games = json.loads(target.read_text(encoding="utf-8"))
    text_headers = [h for h, _, _ in _records(exported)]
    assert isinstance(games, list) and len(games) == 2
    for game, headers in zip(games, text_headers, strict=True):
        assert {k: v for k, v in game.items() if k != "Moves"} == headers
        assert all(isinstance(v, str) for k, v in game.items() if k != "Moves")
        for move in game["Moves"]:
            assert set(move) <= {"seat", "action", "seconds", "cpu"}
            assert {"seat", "action", "seconds"} <= set(move)
            assert isinstance(move["seconds"], float | int)


def test_export_refuses_a_file_that_is_not_an_export(played: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    done = _export(played, notes)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"error: {notes} exists and is not an export of kryt games (a game file, CSV or "
        "JSON): not replaced"
    )
    assert notes.read_text() == "my notes\n"


def test_export_refuses_a_database_even_with_force(played: Path) -> None:
    for extra in ((), ("--force",)):
        done = _export(played, played / "kryt.db", *extra)
        assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    assert sqlite3.connect(played / "kryt.db").execute("select count(*) from games").fetchone() == (
        2,
    )


def test_an_export_that_matches_nothing_writes_nothing_and_exits_1(
    played: Path, tmp_path: Path
) -> None:
    target = tmp_path / "none.kgn"
    # A void game is a failure of ours: none in a healthy run (random vs greedy can draw).
    done = _export(played, target, "--result", "void")
    assert done.returncode == 1
    assert f"no games match: nothing written to {target}" in done.stdout + done.stderr
    assert not target.exists()
    done = _export(played, Path("-"), "--result", "void")  # standard output: exit 0
    assert done.returncode == 0, done.stderr


def test_an_unknown_bot_or_tournament_filter_is_refused(played: Path, tmp_path: Path) -> None:
    done = _export(played, tmp_path / "x.kgn", "--tournament", "9")
    assert done.returncode == 2 and "no tournament with id 9" in done.stderr
    done = _run("games", "list", "--tournament", "9", "-d", str(played / "kryt.db"), cwd=played)
    assert done.returncode == 2 and "no tournament with id 9" in done.stderr


def test_import_round_trips_and_twice_adds_nothing(
    played: Path, tmp_path: Path, exported: str
) -> None:
    source = tmp_path / "games.kgn"
    source.write_text(exported, encoding="utf-8")
    other = tmp_path / "other.db"
    for _ in range(2):
        done = _run("games", "import", str(source), "-d", str(other), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(other) as conn:
            assert conn.execute("select count(*) from games").fetchone() == (2,)
        conn.close()
    again = tmp_path / "again.kgn"
    done = _run("games", "export", str(again), "-d", str(other), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert again.read_text(encoding="utf-8") == exported  # byte for byte
    done = _run("replay", "1", "--verify", "-d", str(other), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def _hand_written(exported: str, version: str = "1") -> str:
    """The first exported game, rewritten as the doc describes a file: only the headers a
    file must have (the informative ids, the commitment, the time controls and the seed ids
    left out), a comment line, a header no reader knows."""
    headers, moves, result = _records(exported)[0]
    optional = {"GameId", "TournamentId", "SeriesId", "SeedCommitment", "SeriesSeedIds",
                "Seat0Time", "Seat1Time"}  # fmt: skip
    lines = ["# written by hand from docs/games-format.md", f'[KrytGameFile "{version}"]']
    lines += [
        f"[{k} {json.dumps(v)}]"
        for k, v in headers.items()
        if k not in optional and k != "KrytGameFile"
    ]
    lines.append('[Annotator "someone"]')  # a header no reader knows: ignored
    return "\n".join(lines) + "\n\n" + "\n".join(moves) + "\n" + result + "\n"


def test_a_game_file_written_from_the_doc_imports(tmp_path: Path, exported: str) -> None:
    source = tmp_path / "hand.kgn"
    source.write_text(_hand_written(exported), encoding="utf-8")
    db = tmp_path / "hand.db"
    done = _run("games", "import", str(source), "-d", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from games").fetchone() == (1,)
    conn.close()


def test_a_record_of_another_version_is_refused(tmp_path: Path, exported: str) -> None:
    source = tmp_path / "v2.kgn"
    source.write_text(_hand_written(exported, version="2"), encoding="utf-8")
    db = tmp_path / "v2.db"
    done = _run("games", "import", str(source), "-d", str(db), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and "v2.kgn" in done.stderr
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("select count(*) from games").fetchone() == (0,)
        conn.close()


def test_a_forged_move_is_refused_before_the_database_is_opened(
    tmp_path: Path, exported: str
) -> None:
    text = _hand_written(exported)
    forged = re.sub(r"^1\. (\d) \S.*? \{", r"1. \1 lead XX {", text, count=1, flags=re.M)
    assert forged != text
    source = tmp_path / "forged.kgn"
    source.write_text(forged, encoding="utf-8")
    db = tmp_path / "forged.db"
    done = _run("games", "import", str(source), "-d", str(db), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: forged.kgn:") or "forged.kgn:" in done.stderr
    assert not db.exists()  # the whole file is refused before the database is opened


# --- docs/games-format.md: deal books --------------------------------------------------------

DOC_BOOK = """# my-book.txt: two decks
9D TD AC KH TS KD AH JC 7C QS 6H 8S 7D QH 9C 6S JD 8C TC 9S QC 6D KC AD 8H JS 7H 8D KS AS 9H TH JH 6C QD 7S
7C 6D QS KD TC 8S 9H AS JD 6H KH 7D 8C TS QH AC 9S JH 6S TD 8D KC QC 7H JC AD 9D 8H 6C AH QD KS TH 9C JS 7S   # deck 2
"""  # noqa: E501
DECK_1 = DOC_BOOK.splitlines()[1].split()


def test_the_docs_example_book_is_two_decks() -> None:
    decks = parse_book(DOC_BOOK, "my-book.txt")
    assert len(decks) == 2 and list(decks[0]) == DECK_1


def test_a_book_takes_10_lowercase_commas_and_a_bom() -> None:
    spelled = ",".join(c.replace("T", "10").lower() for c in DECK_1)
    assert parse_book("\ufeff" + spelled + "\n\n# nothing\n", "b") == parse_book(DOC_BOOK, "b")[:1]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (" ".join([*DECK_1[:35], "XZ"]), "my-book.txt line 3, card 36: 'XZ' is not a card"),
        (
            " ".join([*DECK_1[:3], "TH", *DECK_1[4:16], "TH", *DECK_1[17:]]),
            "my-book.txt line 3, card 17: 'TH' is card 4 again",
        ),
        (
            " ".join(c for c in DECK_1 if c != "QD"),
            "my-book.txt line 3: a deck has 36 cards, got 35; missing: QD",
        ),
    ],
    ids=["not a card", "twice", "short"],
)
def test_book_errors_are_worded_as_documented(line: str, message: str) -> None:
    with pytest.raises(BookError) as caught:
        parse_book(
            DOC_BOOK.splitlines()[0] + "\n" + DOC_BOOK.splitlines()[1] + "\n" + line, "my-book.txt"
        )
    assert str(caught.value).startswith(message), str(caught.value)


# --- docs/protocol.md against proto/kryt/v1/bot.proto and the code --------------------------

UINT32, UINT64, STRING, BOOL, MESSAGE, ENUM = 13, 4, 9, 8, 11, 14
PROTO_FIELDS: list[tuple[str, str, int, bool]] = [
    # message, field, type, repeated
    ("Handshake", "protocol_version", UINT32, False),
    ("Handshake", "referee_version", STRING, False),
    ("Handshake", "games", UINT32, False),
    ("Handshake", "opponent_name", STRING, False),
    ("Handshake", "time_control", MESSAGE, False),
    ("Handshake", "ruleset", STRING, False),
    ("Handshake", "players", UINT32, False),
    ("Handshake", "seat_names", STRING, True),
    ("Handshake", "seat", UINT32, False),
    ("TimeControl", "move_ms", UINT32, False),
    ("TimeControl", "bank_ms", UINT32, False),
    ("TimeControl", "increment_ms", UINT32, False),
    ("TimeControl", "grace_ms", UINT32, False),
    ("TimeControl", "clock", ENUM, False),
    ("HandshakeReply", "protocol_version", UINT32, False),
    ("HandshakeReply", "name", STRING, False),
    ("HandshakeReply", "version", STRING, False),
    ("HandshakeReply", "sdk", STRING, False),
    ("HandshakeReply", "rulesets", STRING, True),
    ("DecisionRequest", "request_id", UINT64, False),
    ("DecisionRequest", "game_number", UINT32, False),
    ("DecisionRequest", "view", MESSAGE, False),
    ("DecisionRequest", "clock", MESSAGE, False),
    ("Clock", "move_ms", UINT32, False),
    ("Clock", "bank_ms", UINT32, False),
    ("View", "seat", UINT32, False),
    ("View", "dealer", UINT32, False),
    ("View", "hand", STRING, True),
    ("View", "pile", STRING, True),
    ("View", "trump", STRING, False),
    ("View", "face_up", STRING, False),
    ("View", "stock_count", UINT32, False),
    ("View", "opponent_count", UINT32, False),
    ("View", "opponent_known", STRING, True),
    ("View", "own_known", STRING, True),
    ("View", "to_move", UINT32, False),
    ("View", "legal_actions", STRING, True),
    ("View", "history", STRING, True),
    ("View", "over", BOOL, False),
    ("View", "winner", UINT32, False),
    ("View", "reason", ENUM, False),
    ("View", "turn_limit", UINT32, False),
    ("View", "final_cover", STRING, False),
    ("GameStart", "game_number", UINT32, False),
    ("GameStart", "seat", UINT32, False),
    ("GameStart", "dealer", UINT32, False),
    ("GameStart", "score", MESSAGE, False),
    ("GameStart", "opponent_name", STRING, False),
    ("GameStart", "time_control", MESSAGE, False),
    ("GameStart", "turn_limit", UINT32, False),
    ("GameEnd", "game_number", UINT32, False),
    ("GameEnd", "winner", UINT32, False),
    ("GameEnd", "reason", ENUM, False),
    ("GameEnd", "detail", STRING, False),
    ("GameEnd", "view", MESSAGE, False),
    ("GameEnd", "deck", STRING, True),
    ("GameEnd", "score", MESSAGE, False),
    ("Shutdown", "reason", STRING, False),
    ("BotError", "message", STRING, False),
    ("Decision", "request_id", UINT64, False),
    ("Decision", "text", STRING, False),
    ("Decision", "structured", MESSAGE, False),
    ("Action", "kind", ENUM, False),
    ("Action", "cover", STRING, False),
    ("Action", "lead", STRING, False),
    ("Action", "swap", BOOL, False),
    ("SeriesScore", "wins", UINT32, False),
    ("SeriesScore", "draws", UINT32, False),
    ("SeriesScore", "losses", UINT32, False),
]
TABLE_VIEW_FIELDS = (
    "seat", "players", "dealer", "hand", "hand_sizes", "out", "known", "leader", "defender",
    "led", "discard", "trump", "face_up", "stock_count", "to_move", "legal_actions", "history",
    "movers", "turn_limit", "over", "loser", "reason",
)  # fmt: skip


@pytest.mark.parametrize(
    ("message", "name", "kind", "repeated"),
    PROTO_FIELDS,
    ids=[f"{m}.{f}" for m, f, _, _ in PROTO_FIELDS],
)
def test_each_documented_field_has_its_documented_type(
    message: str, name: str, kind: int, repeated: bool
) -> None:
    field = bot_pb2.DESCRIPTOR.message_types_by_name[message].fields_by_name[name]
    assert (field.type, field.is_repeated) == (kind, repeated)


def test_documented_field_numbers_and_presence() -> None:
    """docs/protocol.md: increment_ms is field 3, grace_ms field 4 (optional), clock field
    5; DecisionRequest.table_view field 5; GameEnd.table_view 8 and loser 9; to_move and the
    winners are absent when they do not apply."""
    types = bot_pb2.DESCRIPTOR.message_types_by_name
    tc = types["TimeControl"].fields_by_name
    assert (tc["increment_ms"].number, tc["grace_ms"].number, tc["clock"].number) == (3, 4, 5)
    assert tc["grace_ms"].has_presence
    assert types["DecisionRequest"].fields_by_name["table_view"].number == 5
    end = types["GameEnd"].fields_by_name
    assert (end["table_view"].number, end["loser"].number) == (8, 9)
    assert end["winner"].has_presence and end["loser"].has_presence
    view = types["View"].fields_by_name
    assert view["to_move"].has_presence and view["winner"].has_presence
    assert [f.name for f in types["TableView"].fields if f.name != "ruleset"] == list(
        TABLE_VIEW_FIELDS
    )


def test_the_oneofs_and_the_one_streaming_method() -> None:
    types = bot_pb2.DESCRIPTOR.message_types_by_name
    referee = [f.name for f in types["RefereeMessage"].oneofs[0].fields]
    assert referee == ["handshake", "game_start", "decision_request", "game_end", "shutdown"]
    bot = [f.name for f in types["BotMessage"].oneofs[0].fields]
    assert bot == ["handshake_reply", "decision", "error"]
    assert [f.name for f in types["Decision"].oneofs[0].fields] == ["text", "structured"]
    service = bot_pb2.DESCRIPTOR.services_by_name["Bot"]
    assert service.full_name == "kryt.v1.Bot"
    (play,) = service.methods
    assert (play.name, play.client_streaming, play.server_streaming) == ("Play", True, True)


def test_end_reasons_and_kinds_are_the_documented_ones() -> None:
    reasons = {v.name: v.number for v in bot_pb2.DESCRIPTOR.enum_types_by_name["EndReason"].values}
    assert reasons["END_REASON_LAST_HOLDER"] == 4 and reasons["END_REASON_ALL_OUT"] == 5
    assert 14 not in reasons.values()  # SANDBOX_LIMIT: no longer sent
    for name in ("OUT", "DRAW_BY_FINAL_ANSWER", "TURN_LIMIT", "TIMEOUT", "ILLEGAL_ACTION",
                 "MALFORMED_REPLY", "CRASH", "STARTUP_FAILURE", "MEMORY_LIMIT",
                 "PROCESS_LIMIT", "DISK_LIMIT", "DOUBLE_FORFEIT", "VOID"):  # fmt: skip
        assert f"END_REASON_{name}" in reasons, name
    kinds = {v.name for v in bot_pb2.DESCRIPTOR.enum_types_by_name["ActionKind"].values}
    assert {"ACTION_KIND_LEAD", "ACTION_KIND_COVER_AND_LEAD", "ACTION_KIND_COVER_AND_GO_OUT",
            "ACTION_KIND_TAKE"} <= kinds  # fmt: skip
    clocks = {v.name: v.number for v in bot_pb2.DESCRIPTOR.enum_types_by_name["ClockKind"].values}
    assert clocks == {"CLOCK_KIND_UNSPECIFIED": 0, "CLOCK_KIND_WALL": 1, "CLOCK_KIND_CPU": 2}


def test_the_documented_limits_version_and_timeouts() -> None:
    assert messages.PROTOCOL_VERSION == 1
    assert messages.MAX_REQUEST_BYTES == 4 * 2**20
    assert messages.MAX_REPLY_BYTES == 64 * 2**10
    assert vars(client)["HANDSHAKE_SECONDS"] == 10.0  # "The handshake timeout is 10 s"
    assert vars(client)["SEND_TIMEOUT"] == 10.0  # "did not take a message within 10 s"
    assert vars(client)["WRITE_END_SECONDS"] == 1.0  # killed "1 s after Shutdown"
    assert messages.TimeControl().grace_ms == 50  # "the arena's default is 50"


def test_an_old_referees_time_control_reads_as_grace_50_and_wall() -> None:
    """docs/protocol.md: read an absent grace_ms as 50 and CLOCK_KIND_UNSPECIFIED as wall;
    the Python SDK decodes them so."""
    old = bot_pb2.RefereeMessage(
        handshake=bot_pb2.Handshake(
            protocol_version=1, referee_version="old", games=2, opponent_name="x",
            time_control=bot_pb2.TimeControl(move_ms=1000, bank_ms=10_000),
        )
    )  # fmt: skip
    decoded: Any = decode_referee_message(old.SerializeToString())
    assert decoded.time_control.grace_ms == 50 and decoded.time_control.clock == "wall"
    new = bot_pb2.RefereeMessage(
        handshake=bot_pb2.Handshake(
            protocol_version=1, games=2,
            time_control=bot_pb2.TimeControl(
                move_ms=1000, bank_ms=0, grace_ms=0, clock=bot_pb2.CLOCK_KIND_CPU
            ),
        )
    )  # fmt: skip
    decoded = decode_referee_message(new.SerializeToString())
    assert decoded.time_control.grace_ms == 0 and decoded.time_control.clock == "cpu"


def test_the_health_proto_ships_beside_the_bot_proto() -> None:
    health = (REPO / "proto" / "grpc" / "health" / "v1" / "health.proto").read_text()
    assert "service Health" in health and "rpc Check" in health


# --- docs/ratings.md: the statistics of ``kryt play`` and live Elo ----------------------------


@pytest.mark.parametrize(
    ("wins", "draws", "losses", "shown"),
    [
        (17, 2, 3, "Elo +261.3 [+81.2, +441.3]"),
        (9, 0, 1, "Elo +381.7 [+67.4, +696.0]"),
        (1, 0, 0, "Elo +inf [-233.8, +inf]"),
        (0, 30, 0, "Elo +0.0 [-121.8, +121.8]"),
        (3, 0, 0, "[-42.9, +inf]"),
        (60, 20, 20, "[+73.4, +220.9]"),
        (1, 0, 1, "[-392.5, +392.5]"),
        (54, 1, 5, "Elo +398.4 [+250.6, +546.2] (95%, trinomial), LOS 100.0%, draw ratio 1.7%"),
    ],
)
def test_the_documented_intervals(wins: int, draws: int, losses: int, shown: str) -> None:
    assert shown in match_stats(wins, draws, losses).format()


def test_one_win_has_a_los_of_84_1_percent() -> None:
    assert "LOS 84.1%" in match_stats(1, 0, 0).format()
    assert "LOS 50.0%" in match_stats(0, 3, 0).format()  # no decisive game: one half


def test_the_sprt_bounds_and_the_documented_llr() -> None:
    sprt = Sprt.parse(["elo0=0", "elo1=5", "alpha=0.05", "beta=0.05"])
    assert round(sprt.upper, 2) == 2.94 and round(sprt.lower, 2) == -2.94
    assert round(Sprt(0, 200).llr(trinomial_sample(600, 100, 300)), 1) == 16.8


def test_no_complete_deal_pair_says_nothing() -> None:
    shown = match_stats(1, 0, 0, pentanomial=[0, 0, 0, 0, 0]).format()
    assert shown.startswith("Elo +0.0 [-inf, +inf] (95%, pentanomial), LOS 50.0%"), shown


@pytest.mark.parametrize(
    "setting",
    [["elo0=5", "elo1=0"], ["elo0=0", "elo1=2001"], ["alpha=0.5"], ["elo0=0", "elo0=1"],
     ["elo1=1_0"], ["beta=0"]],
)  # fmt: skip
def test_bad_sprt_settings_are_exit_2_before_a_game(
    capsys: pytest.CaptureFixture[str], in_tmp: Path, setting: list[str]
) -> None:
    code, out, err = kryt(
        capsys, "play", "builtin:random", "builtin:greedy", "-n", "2", "--backend", "process",
        "--sprt", *setting,
    )  # fmt: skip
    assert code == 2 and err.startswith("error: "), err
    assert "Score of" not in out


def test_live_elo_constants() -> None:
    """docs/ratings.md: K 32 for a bot's first 30 games, then 16; everyone starts at 1500."""
    tracker = EloTracker()
    assert (tracker.initial, tracker.k_new, tracker.k_established, tracker.new_bot_games) == (
        1500.0, 32.0, 16.0, 30,
    )  # fmt: skip


def test_ratings_fit_csv_error_is_worded_as_documented(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    games = _write(in_tmp, "games.csv", "first,second,result\na,b,1-0\na,b,2-0\n")
    code, _, err = kryt(capsys, "ratings", "fit", str(games))
    assert code == 2
    assert err.splitlines()[0] == (
        f"error: {games}:3: unknown result '2-0'; expected one of 1-0, 0-1, 1/2-1/2: 'a,b,2-0'"
    )


def test_ratings_fit_option_out_of_range_and_missing_file_are_exit_2(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    games = _write(in_tmp, "g.csv", "first,second,result\na,b,1-0\nb,a,1/2-1/2\na,b,0-1\n")
    for args in ((str(games), "--prior", "1e17"), ("missing.csv",), (str(in_tmp),)):
        code, _, err = kryt(capsys, "ratings", "fit", *args)
        assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_ratings_fit_json_has_the_documented_keys(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    rows = (
        "first,second,result\n"
        + "a,b,1-0\nb,a,1/2-1/2\na,b,0-1\nb,a,1-0\nb,c,0-1\nc,a,1-0\na,c,1/2-1/2\n"
    )
    games = _write(in_tmp, "g.csv", rows)
    code, out, err = kryt(capsys, "ratings", "fit", str(games), "--json")
    assert code == 0, err
    document = json.loads(out)
    assert {"model", "prior", "offset", "scale", "advantage", "drawelo", "confidence",
            "players"} <= set(document)  # fmt: skip
    assert set(document["players"][0]) >= {
        "rank", "name", "rating", "interval", "games", "wins", "draws", "losses", "score",
        "draw_rate", "los_next",
    }  # fmt: skip


# --- docs/writing-a-bot.md: the template ------------------------------------------------------


def test_bot_new_with_a_bad_name_creates_nothing(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _, err = kryt(capsys, "bot", "new", "Bad_Name")
    assert code == 2
    assert err.startswith("error: cannot create bot 'Bad_Name': the name must match")
    assert list(in_tmp.iterdir()) == []


def test_bot_new_writes_the_documented_files(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    code, _, err = kryt(capsys, "bot", "new", "mybot")
    assert code == 0, err
    assert {p.name for p in (in_tmp / "mybot").iterdir()} >= {
        "bot.toml", "bot.py", "test_bot.py", "README.md",
    }  # fmt: skip
    manifest = (in_tmp / "mybot" / "bot.toml").read_text()
    for line in ('name = "mybot"', 'runtime = "python"', 'entry = "bot.py"'):
        assert line in manifest, manifest


def test_python_m_sdk_tools_new_makes_the_same_template(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sdk.tools", "new", "my-bot"],
        cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (tmp_path / "my-bot").iterdir()} >= {
        "bot.toml", "bot.py", "test_bot.py", "README.md",
    }  # fmt: skip


def test_the_cli_reports_the_flag_in_a_one_line_kryt_play_refusal(
    capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    """docs/configuration.md: a time outside its bounds is 'one error: line naming the
    option, in seconds (exit 2)', in kryt play too."""
    code, _, err = kryt(
        capsys, "play", "builtin:random", "builtin:greedy", "-n", "1", "--move-seconds",
        "3601", "--backend", "process",
    )  # fmt: skip
    assert code == 2, err
    first = err.splitlines()[0]
    assert first.startswith("error: ") and "--move-seconds" in flat(first), err


# --- docs/configuration.md: managing a tournament -------------------------------------------


def test_the_settings_that_made_the_series_cannot_change() -> None:
    from arena.tournament.config import FIXED_SETTINGS, settable_keys

    documented_fixed = {"bots", "games_per_pair", "format", "seed", "ruleset", "table_size",
                        "gauntlet", "book"}  # fmt: skip
    assert set(FIXED_SETTINGS) == documented_fixed
    settable = set(settable_keys())
    assert {"sandbox.memory_mb", "time_control.move_seconds", "concurrency", "name",
            "bot_time"} <= settable  # fmt: skip
    assert not documented_fixed & settable


def test_set_and_cancel_refuse_a_finished_tournament(played: Path) -> None:
    db = str(played / "kryt.db")
    for args in (("set", "1", "concurrency=4"), ("set", "1", "games_per_pair=4"), ("cancel", "1")):
        done = _run("tournament", *args, "-d", db, cwd=played)
        assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
    done = _run("tournament", "status", "1", "-d", db, cwd=played)
    assert "status: finished" in done.stdout, done.stdout


def test_a_reader_that_goes_away_is_still_exit_0(played: Path) -> None:
    """docs/configuration.md, exit code 0: ``kryt replay 1 | head -2``."""
    command = " ".join([*KRYT, "replay", "1", "-d", str(played / "kryt.db")])
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command} | head -2"],
        cwd=played, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2 and done.stdout.startswith("Game 1:")


def test_the_example_record_s_seeds_follow_from_each_other() -> None:
    """docs/games-format.md, "A record": a reader checking the example's seeds (the
    commitment to ``TournamentSeed``, the series seed derived from it and ``SeriesSeedIds``,
    the deck of game ``Game`` dealt from that seed) finds them as the arena makes them."""
    from arena.tournament.runner import series_seed
    from referee.series import game_deck

    text = (REPO / "docs" / "games-format.md").read_text(encoding="utf-8")
    record = text.split("## A record", 1)[1].split("```", 2)[1]
    tags = dict(re.findall(r'^\[(\w+) "([^"]*)"\]$', record, flags=re.MULTILINE))
    seed = int(tags["TournamentSeed"])
    assert commitment(seed).startswith(tags["SeedCommitment"].removesuffix("…"))
    first, second = (int(i) for i in tags["SeriesSeedIds"].split())
    assert tags["SeriesFormat"] == "standard"
    assert series_seed(seed, first, second) == int(tags["SeriesSeed"])
    shown = tags["Deck"].removesuffix(" …").split()
    deck = [str(c) for c in game_deck(int(tags["SeriesSeed"]), int(tags["Game"]))]
    assert deck[: len(shown)] == shown
