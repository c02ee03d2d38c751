"""Mutation review of ``kryt demo`` (kryt/commands/demo.py) and ``python3 dev.py demo``.

What is reviewed, against README.md ("Two commands"), docs/configuration.md (settings, exit
codes, ``./kryt.db``), docs/rules.md (series: the loser deals) and the command's own help:

- every option of ``kryt demo`` (``--games/-n``, ``--seed``, ``--concurrency/-j``, ``--html``,
  ``--database/-d`` and ``KRYT_DATABASE_URL``) with its default and its validation: a bad
  value is one ``error:`` line, exit 2, and nothing is written in the working folder;
- what a run stores, counted independently with :mod:`sqlite3`: one tournament of three
  series (one per pair of the three bundled bots), each of exactly ``--games`` counted games,
  dealt by the rule "the loser deals, after a draw the same dealer", and the web page;
- a second run on the same database: a new tournament beside the first (the bots are not
  registered twice, the first tournament's rows stay as they were);
- the paths around the run: an existing ``--html`` folder survives a refused database, an
  export failure after the games says that the games are stored, the run's exit code and
  Ctrl-C are passed on;
- ``dev.py``'s ``demo``: options forwarded to ``kryt demo``, run in the caller's folder, its
  exit code returned.

Expected values come from the documents (defaults 20 games and concurrency 2, three bundled
bots ``greedy``, ``mc``, ``random`` in ``sdk/examples``, C(3, 2) = 3 series) and from rows read
back with :mod:`sqlite3`, never from the code under test's output. The end-to-end runs use
copies of the fast bundled bots (``random`` and ``greedy`` under three names) in the process
sandbox, so the file stays quick; which bots and which sandbox preference the real demo asks
for is checked separately, by catching its configuration before anything is played.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer

import kryt.commands.demo as demo
from arena.tournament.config import TournamentConfig, load_config
from kryt.errors import ExitCode
from tests.cli.helpers import kryt

ROOT = Path(__file__).resolve().parents[2]
"""The repository (or worktree) these tests belong to."""

BUNDLED = ("greedy", "mc", "random")
"""README: "registers the bundled example bots (`random`, `greedy`, `mc`)"."""

CAUGHT = 97
"""Exit code of a run stopped on purpose once its tournament would be created."""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder, without ``KRYT_DATABASE_URL``: the demo's defaults apply."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    return work


@dataclass
class Caught:
    """What the demo would create: its configuration and its database."""

    configs: list[TournamentConfig] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    submitted_by: list[str] = field(default_factory=list)


@pytest.fixture
def caught(monkeypatch: pytest.MonkeyPatch) -> Caught:
    """Stop the demo where it would play its tournament, keeping what it would store (the
    tournament counts as stored, so the demo keeps its database and site folder)."""
    seen = Caught()

    def create(config: TournamentConfig, *, db: Any, submitted_by: str) -> int:
        seen.configs.append(config)
        seen.urls.append(str(db.engine.url))
        seen.submitted_by.append(submitted_by)
        return 1

    def stop(tournament_id: int, db: Any, *, prepared: Any) -> Any:
        raise typer.Exit(CAUGHT)

    def no_sandbox(config: TournamentConfig, **_kwargs: object) -> Any:
        from contextlib import nullcontext

        return nullcontext(None)  # no probe of Docker: the sandbox is not under review here

    monkeypatch.setattr(demo, "create", create)
    monkeypatch.setattr(demo, "run_tournament", stop)
    monkeypatch.setattr(demo, "_prepare", no_sandbox)
    return seen


def _sqlite_path(url: str) -> Path:
    assert url.startswith("sqlite:///"), url
    return Path(url.removeprefix("sqlite:///"))


# --- defaults and options --------------------------------------------------------------------


def test_defaults_are_the_documented_ones(
    workdir: Path, caught: Caught, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = kryt(capsys, "demo")
    assert code == CAUGHT, err
    (config,) = caught.configs
    assert config.name == "demo"
    assert config.games_per_pair == 20  # --help: "Games per pair", default 20
    assert config.concurrency == 2  # as a tournament's default (configuration.md)
    assert config.seed is None  # a secret random seed (sandbox.md: "Fair deals")
    assert str(config.format.value) == "standard"  # a round robin where the loser deals
    assert config.gauntlet is None and config.ruleset == "default" and config.table_size == 2
    # The bundled bots, each once: every folder of sdk/examples with a bot.toml, in one
    # order on every machine (the order makes the pairs, and with them a fixed seed's deals:
    # configuration.md, "What a fixed seed reproduces").
    examples = ROOT / "sdk" / "examples"
    assert [Path(b).resolve() for b in config.bots] == [
        (examples / name).resolve() for name in BUNDLED
    ]
    # "the best sandbox available (Docker -> bubblewrap -> plain process; the bundled bots are
    # trusted ...)": auto, and never the unsafe switch for other bots.
    assert config.sandbox.backend == "auto"
    assert config.sandbox.allow_unsafe is False
    # Quick moves keep the demo short: below a tournament's 1 s per move.
    assert config.time_control.move_seconds < 1.0
    # README: "stores everything in ./kryt.db (SQLite)", "./kryt-leaderboard/index.html".
    (url,) = caught.urls
    assert _sqlite_path(url).resolve() == (workdir / "kryt.db").resolve()
    assert (workdir / "kryt-leaderboard").is_dir()
    assert f"database:sqlite:///{(workdir / 'kryt.db').resolve()}" in "".join(err.split())


@pytest.mark.parametrize(
    "flags",
    [
        ("--games", "7", "--concurrency", "3", "--seed", "42"),
        ("-n", "7", "-j", "3", "--seed", "42"),
    ],
    ids=["long", "short"],
)
def test_options_reach_the_tournament(
    flags: tuple[str, ...],
    workdir: Path,
    caught: Caught,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("demo", *flags, "-d", "mine.db", "--html", "site")
    code, _out, err = kryt(capsys, *args)
    assert code == CAUGHT, err
    (config,) = caught.configs
    assert (config.games_per_pair, config.concurrency, config.seed) == (7, 3, 42)
    assert _sqlite_path(caught.urls[0]).resolve() == (workdir / "mine.db").resolve()
    assert (workdir / "site").is_dir()
    assert not (workdir / "kryt-leaderboard").exists() and not (workdir / "kryt.db").exists()


def test_the_database_comes_from_the_environment_unless_given(
    workdir: Path,
    caught: Caught,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KRYT_DATABASE_URL", f"sqlite:///{workdir / 'env.db'}")
    assert kryt(capsys, "demo")[0] == CAUGHT
    assert kryt(capsys, "demo", "--database", "flag.db")[0] == CAUGHT
    assert kryt(capsys, "demo", "--db", "flag2.db")[0] == CAUGHT
    assert [_sqlite_path(u).resolve() for u in caught.urls] == [
        (workdir / name).resolve() for name in ("env.db", "flag.db", "flag2.db")
    ]
    assert not (workdir / "kryt.db").exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--games", "1"), "--games"),  # a series of one game: below the demo's minimum 2
        (("-n", "0"), "--games"),
        (("-n", "-4"), "--games"),
        (("--games", "2.5"), "--games"),
        (("--games", "twenty"), "--games"),
        (("--games", "1000001"), "games_per_pair"),  # configuration.md: 1-1,000,000
        (("-j", "0"), "--concurrency"),
        (("--concurrency", "1025"), "concurrency"),  # configuration.md: 1-1024
        (("--seed", "-1"), "seed"),  # configuration.md: 0 to 2**62 - 1
        (("--seed", str(2**62)), "seed"),
        (("--seed", "x"), "--seed"),
        (("--backend", "process"), "--backend"),  # the demo picks the sandbox itself
    ],
)
def test_a_bad_option_is_one_error_exit_2_and_nothing_written(
    args: tuple[str, ...],
    named: str,
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the demo went on after a bad option")

    for name in ("create", "run_tournament", "_prepare", "open_db"):
        monkeypatch.setattr(demo, name, never)
    code, out, err = kryt(capsys, "demo", *args)
    assert code == ExitCode.BAD_INPUT, err
    assert out == "" and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and named in errors[0], err
    assert list(workdir.iterdir()) == []  # no database, no web page folder


def test_the_minimum_number_of_games_is_accepted(
    workdir: Path, caught: Caught, capsys: pytest.CaptureFixture[str]
) -> None:
    assert kryt(capsys, "demo", "-n", "2", "-j", "1", "--seed", "0")[0] == CAUGHT
    assert kryt(capsys, "demo", "--seed", str(2**62 - 1), "-j", "1024")[0] == CAUGHT
    assert [(c.games_per_pair, c.concurrency, c.seed) for c in caught.configs] == [
        (2, 1, 0),
        (20, 1024, 2**62 - 1),
    ]


# --- around the run --------------------------------------------------------------------------


def test_a_refused_database_keeps_an_html_folder_that_was_already_there(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = workdir / "site"
    site.mkdir()
    (site / "keep.txt").write_text("mine\n")
    (workdir / "notes.db").write_text("not a database\n")
    code, out, err = kryt(capsys, "demo", "--html", "site", "-d", "notes.db")
    assert code == ExitCode.UNAVAILABLE, err
    assert (site / "keep.txt").read_text() == "mine\n"  # the user's folder is not removed
    assert (workdir / "notes.db").read_text() == "not a database\n"
    assert out == ""


def test_ctrl_c_while_the_database_opens_leaves_no_site_behind(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(url: str | None) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "open_db", interrupted)
    code, _out, err = kryt(capsys, "demo")
    assert code == ExitCode.INTERRUPTED, err
    assert list(workdir.iterdir()) == []  # the folder the demo made is gone again


@pytest.mark.parametrize("given", [False, True], ids=["default_db", "given_db"])
def test_ctrl_c_while_the_sandbox_is_checked_leaves_nothing_behind(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, given: bool
) -> None:
    """Stopped before its tournament is stored, the demo removes the database file and the
    site folder it created (as ``kryt tournament run`` does); a database that was there
    before is kept, and so is the site then."""

    def interrupted(*_args: object, **_kwargs: object) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "_prepare", interrupted)
    if given:
        from arena.db import open_database

        open_database(workdir / "mine.db").close()  # an empty arena, there before the demo
    code, _out, err = kryt(capsys, "demo", *(["-d", "mine.db"] if given else []))
    assert code == ExitCode.INTERRUPTED, err
    left = sorted(p.name for p in workdir.iterdir())
    if given:
        assert "mine.db" in left and "kryt-leaderboard" in left
    else:
        assert left == []


def _stub_run(monkeypatch: pytest.MonkeyPatch, *, report: int = 0) -> list[str]:
    """Replace the sandbox, the tournament and its report; returns the calls made."""
    from contextlib import nullcontext

    calls: list[str] = []

    def create(config: TournamentConfig, *, db: Any, submitted_by: str) -> int:
        calls.append("create")
        return 5

    def run(tournament_id: int, db: Any, *, prepared: Any) -> str:
        calls.append(f"run {tournament_id}")
        return "result"

    def reported(tournament_id: int, db: Any, result: Any) -> int:
        calls.append(f"report {tournament_id} {result}")
        return report

    monkeypatch.setattr(demo, "_prepare", lambda *a, **k: nullcontext(None))
    monkeypatch.setattr(demo, "create", create)
    monkeypatch.setattr(demo, "run_tournament", run)
    monkeypatch.setattr(demo, "_report", reported)
    return calls


def test_the_exit_code_is_the_tournaments(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _stub_run(monkeypatch, report=ExitCode.FAILED)
    code, _out, err = kryt(capsys, "demo", "-n", "2")
    assert code == ExitCode.FAILED, err
    assert calls == ["create", "run 5", "report 5 result"]
    assert (workdir / "kryt-leaderboard" / "index.html").is_file()  # still written


def test_an_export_failure_after_the_games_says_they_are_stored(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import leaderboard.export as export

    _stub_run(monkeypatch)

    def full_disk(*_args: object, **_kwargs: object) -> None:
        raise export.ExportError("cannot write kryt-leaderboard/index.html: No space left")

    monkeypatch.setattr(export, "export_html", full_disk)
    code, _out, err = kryt(capsys, "demo", "-n", "2")
    assert code == ExitCode.BAD_INPUT
    assert "Traceback" not in err
    lines = err.splitlines()
    assert "error: cannot write kryt-leaderboard/index.html: No space left" in lines
    hint = next(line for line in lines if line.startswith("hint:"))
    assert "stored" in hint and "kryt leaderboard --html" in hint


def test_ctrl_c_during_the_run_exits_130(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _stub_run(monkeypatch)

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "run_tournament", interrupted)
    code, _out, err = kryt(capsys, "demo", "-n", "2")
    assert code == ExitCode.INTERRUPTED
    assert "interrupted" in err and "Traceback" not in err


# --- a real run, counted in the database -----------------------------------------------------

FAST = {"alpha": "random", "bravo": "greedy", "charlie": "random"}
"""Three bots for the end-to-end runs: copies of the fast bundled ones, renamed."""


@pytest.fixture
def fast_bots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """``sdk/examples`` as the demo sees it: three fast bots and a folder that is no bot; the
    process sandbox (the copies are not the trusted originals)."""
    examples = tmp_path / "examples"
    examples.mkdir()
    for name, source in FAST.items():
        shutil.copytree(ROOT / "sdk" / "examples" / source, examples / name)
        manifest = examples / name / "bot.toml"
        text = manifest.read_text().replace(f'name = "{source}"', f'name = "{name}"')
        manifest.write_text(text)
    (examples / "helpers").mkdir()  # no bot.toml: not a bot
    (examples / "helpers" / "bot.py").write_text("")
    (examples / "__init__.py").write_text("")
    monkeypatch.setattr(demo, "EXAMPLES", examples)
    real: Callable[..., TournamentConfig] = load_config

    def in_process_sandbox(path: Path | None, **overrides: Any) -> TournamentConfig:
        return real(path, **overrides, backend="process", allow_unsafe=True)

    monkeypatch.setattr(demo, "load_config", in_process_sandbox)
    return tuple(FAST)


def _rows(db: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute(sql, params).fetchall()
    connection.close()
    return rows


def _assert_loser_deals(db: Path, series_id: int) -> None:
    """docs/rules.md: "afterwards the loser deals; after a draw the same dealer deals again";
    the non-dealer moves first."""
    games = _rows(
        db,
        "SELECT number, dealer, first_mover, result, seat0_submission_id, seat1_submission_id"
        " FROM games WHERE series_id = ? AND NOT voided ORDER BY number",
        series_id,
    )
    expected_dealer: int | None = None
    for number, dealer, first_mover, result, seat0, seat1 in games:
        seats = (seat0, seat1)
        assert first_mover == 1 - dealer, (series_id, number)
        if expected_dealer is not None:
            assert seats[dealer] == expected_dealer, (series_id, number, games)
        assert result in ("seat0", "seat1", "draw"), result
        if result == "draw":
            expected_dealer = seats[dealer]
        else:
            expected_dealer = seats[1] if result == "seat0" else seats[0]


def _tournament_rows(db: Path, tournament_id: int) -> dict[str, Any]:
    (name, seed, status, config) = _rows(
        db, "SELECT name, seed, status, config FROM tournaments WHERE id = ?", tournament_id
    )[0]
    series = _rows(
        db,
        "SELECT id, submission_a_id, submission_b_id, games_planned, status, format"
        " FROM series WHERE tournament_id = ? ORDER BY position",
        tournament_id,
    )
    return {
        "name": name,
        "seed": seed,
        "status": status,
        "config": json.loads(config),
        "series": series,
    }


def test_the_demo_stores_one_round_robin_and_a_rerun_adds_another(
    workdir: Path,
    fast_bots: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # First run: everything on the defaults' paths, in the working folder.
    code, out, err = kryt(capsys, "demo", "-n", "3", "-j", "1", "--seed", "11")
    assert code == ExitCode.OK, (out, err)
    db = workdir / "kryt.db"
    assert db.is_file()
    index = workdir / "kryt-leaderboard" / "index.html"
    assert index.is_file()
    assert index.resolve().as_uri() in "".join(err.split())
    bots = dict(_rows(db, "SELECT name, id FROM bots"))
    assert sorted(bots) == sorted(fast_bots)  # the folder without bot.toml is no bot
    submissions = dict(_rows(db, "SELECT bot_id, id FROM submissions"))
    assert len(submissions) == 3
    ids = {name: submissions[bot_id] for name, bot_id in bots.items()}

    first = _tournament_rows(db, 1)
    assert (first["name"], first["seed"], first["status"]) == ("demo", 11, "finished")
    pairs = sorted(tuple(sorted((a, b))) for _, a, b, *_ in first["series"])
    expected_pairs = sorted(
        tuple(sorted((ids[x], ids[y]))) for x, y in itertools.combinations(fast_bots, 2)
    )
    assert pairs == expected_pairs  # every pair once: C(3, 2) = 3 series
    assert [s[3:] for s in first["series"]] == [(3, "finished", "standard")] * 3
    for series_id, *_ in first["series"]:
        numbers = _rows(
            db,
            "SELECT number FROM games WHERE series_id = ? AND NOT voided ORDER BY number",
            series_id,
        )
        assert numbers == [(1,), (2,), (3,)]
        _assert_loser_deals(db, series_id)
    assert _rows(db, "SELECT count(*) FROM games WHERE NOT voided") == [(9,)]
    for name in fast_bots:
        assert name in out
    assert "tournament 1" in " ".join(out.split())
    first_games = _rows(db, "SELECT * FROM games ORDER BY id")

    # Second run on the same database (given explicitly), another site folder: a new
    # tournament beside the first; the bots are the same submissions.
    code, out, err = kryt(
        capsys, "demo", "--games", "2", "-j", "1", "-d", str(db), "--html", "site2"
    )
    assert code == ExitCode.OK, (out, err)
    assert (workdir / "site2" / "index.html").is_file()
    assert _rows(db, "SELECT id FROM tournaments ORDER BY id") == [(1,), (2,)]
    assert len(_rows(db, "SELECT id FROM submissions")) == 3
    second = _tournament_rows(db, 2)
    assert (second["name"], second["status"]) == ("demo", "finished")
    assert second["config"]["games_per_pair"] == 2
    assert [s[3:] for s in second["series"]] == [(2, "finished", "standard")] * 3
    second_pairs = sorted(tuple(sorted((a, b))) for _, a, b, *_ in second["series"])
    assert second_pairs == expected_pairs
    assert _rows(db, "SELECT count(*) FROM games WHERE NOT voided") == [(9 + 6,)]
    for series_id, *_ in second["series"]:
        _assert_loser_deals(db, series_id)
    # The first tournament's games are as they were.
    assert _rows(db, "SELECT * FROM games WHERE id <= ? ORDER BY id", len(first_games)) == (
        first_games
    )
    assert "tournament 2" in " ".join(out.split())


# --- python3 dev.py demo ---------------------------------------------------------------------


@pytest.fixture
def dev(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, list[Any]]]:
    """``dev.py`` loaded as a module, with the venv set-up and the runs recorded."""
    spec = importlib.util.spec_from_file_location("kryt_dev_under_review", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls: list[Any] = []
    monkeypatch.setattr(module, "ensure_venv", lambda: calls.append("ensure_venv"))

    def run(*cmd: object, cwd: Path = module.ROOT) -> int:
        calls.append((cmd, cwd))
        return 7

    monkeypatch.setattr(module, "_run", run)
    yield module, calls


def test_dev_py_demo_passes_its_options_to_kryt_demo_and_returns_its_code(
    dev: tuple[ModuleType, list[Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, calls = dev
    monkeypatch.chdir(tmp_path)
    assert module.main(["demo", "--games", "40", "-j", "1"]) == 7
    kryt_bin = ROOT / ".venv" / ("Scripts" if module.os.name == "nt" else "bin") / "kryt"
    assert calls == [
        "ensure_venv",
        ((kryt_bin, "demo", "--games", "40", "-j", "1"), tmp_path),
    ]
    calls.clear()
    assert module.main(["demo"]) == 7
    assert calls == ["ensure_venv", ((kryt_bin, "demo"), tmp_path)]


@pytest.mark.parametrize("argv", [[], ["demos"], ["--games", "4"]])
def test_dev_py_without_a_known_command_prints_its_usage_and_installs_nothing(
    argv: list[str],
    dev: tuple[ModuleType, list[Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    module, calls = dev
    assert module.main(argv) == 2
    assert calls == []
    assert "python3 dev.py demo" in capsys.readouterr().out
