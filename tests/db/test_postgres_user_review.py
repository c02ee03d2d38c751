"""An outside review of what a user does with ``kryt`` on PostgreSQL (not SQLite).

Everything goes through ``kryt`` as a user runs it (a subprocess with a small environment,
or ``kryt.cli.main`` in process for the quick refusals), against databases of the test
server (``KRYT_TEST_POSTGRES_URL``). What is right comes from README.md, docs/database.md,
docs/configuration.md, docs/games-format.md and docs/scaling.md. The machine is shared:
every wait is generous and no test assumes which of two concurrent events comes first.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from arena.db import VersionReusedError, open_database
from arena.db import bots as db_bots
from arena.db.bots import submit
from kryt.cli import main
from tests.db.conftest import postgres_admin_url, scratch_postgres_database
from tests.db.helpers import new_submission
from tests.kryt_subprocess import clean_env, run_kryt, start_kryt
from tests.services import require

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
KRYT = [sys.executable, "-m", "kryt"]
DEADLINE = 300.0  # generous: another session shares the machine
ENV = clean_env()
PROCESS = ["--backend", "process"]
# What a terminal must never receive raw from bot-controlled text.
RAW = ("\x00", "\x07", "\x1b", "\u202e", "\u202c")


# --- helpers ------------------------------------------------------------------------------


def kryt(
    cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = DEADLINE
) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` in ``cwd`` as a subprocess: its status and output."""
    return run_kryt(
        cwd, *args, env={**ENV, **(env or {})}, timeout=timeout, errors="surrogateescape"
    )


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """``kryt ARGS`` started in a session of its own (so its group can be signalled)."""
    return start_kryt(cwd, *args, env=ENV)


def finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Wait for ``process`` (killing its group if it overstays) and return its output."""
    try:
        return process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"kryt did not end in {DEADLINE} s: {out[-2000:]}\n{err[-2000:]}")


def kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


def one_error_line(err: str) -> str:
    """The one ``error:`` line of a refusal (a ``hint:`` may follow), and no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def rows(url: str, sql: str, **params: object) -> list[tuple[Any, ...]]:
    engine = create_engine(url if "://" in url else f"sqlite:///{url}")
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(sql), params)]
    finally:
        engine.dispose()


def postgres_database() -> AbstractContextManager[str]:
    """A new empty database on the test server (for a module fixture, or a second one)."""
    return scratch_postgres_database()


def copy_of_random(folder: Path, name: str) -> Path:
    """The bundled random bot under another name (an untrusted bot: needs --unsafe)."""
    shutil.copytree(ROOT / "sdk" / "examples" / "random", folder / name)
    toml = folder / name / "bot.toml"
    toml.write_text(toml.read_text().replace('name = "random"', f'name = "{name}"'))
    shutil.rmtree(folder / name / "__pycache__", ignore_errors=True)
    return folder / name


GameRow = tuple[int, int, int, int, int, int, str, str, int | None]
GAMES = (
    "select g.series_id, s.tournament_id, g.number, g.dealer, g.seat0_submission_id,"
    " g.seat1_submission_id, g.result, g.end_reason, g.forfeit_seat"
    " from games g join series s on s.id = g.series_id where not g.voided"
    " order by g.series_id, g.number"
)


def counted_games(url: str, tournament: int | None = None) -> list[GameRow]:
    found: list[GameRow] = [tuple(row) for row in rows(url, GAMES)]
    return [g for g in found if tournament is None or g[1] == tournament]


def assert_exactly_once(games: list[GameRow]) -> None:
    """One counted game per (series, number), numbered 1..N without a gap."""
    numbers: dict[int, list[int]] = {}
    for game in games:
        numbers.setdefault(game[0], []).append(game[2])
    for series, found in numbers.items():
        assert found == list(range(1, len(found) + 1)), (series, found)


def assert_loser_deals(games: list[GameRow]) -> None:
    """docs/rules.md: the loser of a game deals the next; after a draw the dealer deals again
    (followed by bot, not seat: the seats of a series may be swapped)."""
    by_series: dict[int, list[GameRow]] = {}
    for game in games:
        by_series.setdefault(game[0], []).append(game)
    for series, played in by_series.items():
        for before, after in itertools.pairwise(played):
            _, _, number, dealer, seat0, seat1, result, _, _ = before
            dealer_bot = (seat0, seat1)[dealer]
            loser = seat1 if result == "seat0" else seat0
            expected = dealer_bot if result == "draw" else loser
            assert (after[4], after[5])[after[3]] == expected, (series, number, before, after)


def recount(games: list[GameRow]) -> dict[int, dict[str, object]]:
    """Each submission's games, wins, draws, losses and forfeits by reason, from the rows."""
    board: dict[int, dict[str, Any]] = {}
    for _, _, _, _, seat0, seat1, result, reason, forfeit_seat in games:
        for seat, submission in enumerate((seat0, seat1)):
            entry = board.setdefault(
                submission, {"games": 0, "wins": 0, "draws": 0, "losses": 0, "forfeits": {}}
            )
            entry["games"] += 1
            if result == "draw":
                entry["draws"] += 1
            elif result == f"seat{seat}":
                entry["wins"] += 1
            else:
                entry["losses"] += 1
            if forfeit_seat == seat:
                entry["forfeits"][reason] = entry["forfeits"].get(reason, 0) + 1
    return board


def leaderboard(cwd: Path, url: str, *more: str) -> dict[int, dict[str, object]]:
    """``kryt leaderboard --json``: each submission's counts as the board shows them."""
    done = kryt(cwd, "leaderboard", "--json", *more, "-d", url)
    assert done.returncode == 0, done.stderr
    return {
        row["submission_id"]: {
            key: row[key] for key in ("games", "wins", "draws", "losses", "forfeits")
        }
        for row in json.loads(done.stdout)["rows"]
    }


def wait_for_games(url: str, process: subprocess.Popen[str], at_least: int) -> None:
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            if len(counted_games(url)) >= at_least:
                return
        except Exception:  # the schema is not there yet
            pass
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the run ended early ({process.returncode}): {out[-2000:]}\n{err}")
        assert time.monotonic() < deadline, "no games were recorded in time"
        time.sleep(0.2)


# --- a run stopped by Ctrl-C and resumed, with referee processes ---------------------------


@pytest.mark.timeout(900)
def test_ctrl_c_kill_9_and_resume_count_every_game_once(postgres_url: str, tmp_path: Path) -> None:
    """A ``-j 2`` run (two referee processes) on PostgreSQL stopped by SIGINT to its process
    group exits 130 with the resume command and ``status`` shows it unfinished; a resume
    killed with SIGKILL (its whole group) leaves a lease of a dead process, free at once on
    this host; after ``tournament set 1 concurrency=1`` a last resume finishes it. Every
    (series, game number) is recorded once, the loser deals across both stops, the games
    recorded before a stop are unchanged, and ``kryt leaderboard --json`` equals a recount
    from the games table."""
    third = copy_of_random(tmp_path, "rand2")
    where = ["-d", postgres_url]
    bots = ["builtin:random", "builtin:greedy", str(third), *PROCESS, "--unsafe"]
    total = 3 * 30
    run = start(tmp_path, "tournament", "run", *bots, "-n", "30", "--seed", "7", "-j", "2", *where)
    try:
        wait_for_games(postgres_url, run, 8)
        os.killpg(run.pid, signal.SIGINT)
        out, err = finish(run)
    finally:
        kill(run)
    assert run.returncode == 130, (out[-2000:], err[-2000:])
    assert "kryt tournament resume 1" in out + err, (out[-2000:], err[-2000:])
    assert "Traceback" not in err, err
    first_stop = counted_games(postgres_url)
    assert 8 <= len(first_stop) < total
    assert_exactly_once(first_stop)
    status = kryt(tmp_path, "tournament", "status", *where)
    assert status.returncode == 0, status.stderr
    assert rows(postgres_url, "select status from tournaments") != [("finished",)]
    assert f"{len(first_stop)}/{total}" in status.stdout, status.stdout

    again = start(tmp_path, "tournament", "resume", "1", *where)
    try:
        wait_for_games(postgres_url, again, len(first_stop) + 8)
        os.killpg(again.pid, signal.SIGKILL)
        finish(again)
    finally:
        kill(again)
    second_stop = counted_games(postgres_url)
    assert len(second_stop) < total, "the resume finished before it could be killed"
    assert_exactly_once(second_stop)
    assert set(first_stop) <= set(second_stop)

    # The stored setting changed between the runs (resume takes no -j): one process now.
    changed = kryt(tmp_path, "tournament", "set", "1", "concurrency=1", *where)
    assert changed.returncode == 0, changed.stderr
    resume = kryt(tmp_path, "tournament", "resume", "1", *where)
    assert resume.returncode == 0, (resume.stdout[-2000:], resume.stderr[-2000:])
    games = counted_games(postgres_url)
    assert len(games) == total
    assert_exactly_once(games)
    assert_loser_deals(games)
    assert set(second_stop) <= set(games)
    assert rows(postgres_url, "select status from tournaments") == [("finished",)]
    assert leaderboard(tmp_path, postgres_url) == recount(games)
    assert leaderboard(tmp_path, postgres_url, "-t", "1") == recount(games)


# --- two tournaments at once on one database ---------------------------------------------


@pytest.mark.timeout(900)
def test_two_tournaments_at_once_do_not_disturb_each_other(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two ``kryt tournament run`` of different tournaments (different bots) at the same
    time on one database both finish with all their games; a ``resume`` of one while it runs
    is refused in one line (exit 3) and disturbs neither."""
    where = ["-d", postgres_url]
    first_dir, second_dir = tmp_path / "one", tmp_path / "two"
    first_dir.mkdir()
    second_dir.mkdir()
    a, b = copy_of_random(second_dir, "randa"), copy_of_random(second_dir, "randb")
    first = start(
        first_dir, "tournament", "run", "builtin:random", "builtin:greedy", *PROCESS,
        "-n", "30", "--name", "first", *where,
    )  # fmt: skip
    second = start(
        second_dir, "tournament", "run", str(a), str(b), *PROCESS, "--unsafe",
        "-n", "30", "--name", "second", *where,
    )  # fmt: skip
    try:
        wait_for_games(postgres_url, first, 2)
        names = dict(rows(postgres_url, "select name, id from tournaments"))
        held = next(iter(names.values()))
        refused = kryt(tmp_path, "tournament", "resume", str(held), *where)
        if refused.returncode != 0 or "already finished" not in refused.stderr:
            # Refused by the lease, unless its run ended (finished) before the resume looked.
            assert refused.returncode == 3, (refused.stdout, refused.stderr)
            assert "is being run by pid" in one_error_line(refused.stderr)
        out1, err1 = finish(first)
        out2, err2 = finish(second)
    finally:
        kill(first)
        kill(second)
    assert first.returncode == 0, (out1[-2000:], err1[-2000:])
    assert second.returncode == 0, (out2[-2000:], err2[-2000:])
    ids = dict(rows(postgres_url, "select name, id from tournaments"))
    assert set(ids) == {"first", "second"}
    assert rows(postgres_url, "select distinct status from tournaments") == [("finished",)]
    bots_of = {
        tid: {name for (name,) in rows(
            postgres_url,
            "select distinct b.name from games g join series s on s.id = g.series_id"
            " join submissions u on u.id in (g.seat0_submission_id, g.seat1_submission_id)"
            " join bots b on b.id = u.bot_id where s.tournament_id = :t",
            t=tid,
        )}
        for tid in ids.values()
    }  # fmt: skip
    assert bots_of[ids["first"]] == {"random", "greedy"}
    assert bots_of[ids["second"]] == {"randa", "randb"}
    for tid in ids.values():
        games = counted_games(postgres_url, tid)
        assert len(games) == 30
        assert_exactly_once(games)
        assert_loser_deals(games)
        assert leaderboard(tmp_path, postgres_url, "-t", str(tid)) == recount(games)


def test_two_writers_storing_the_same_new_version_at_once_both_get_it(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving two simultaneous ``kryt tournament run`` of the same bundled bot on
    a fresh PostgreSQL database meet (seen about one run in three from the CLI): the second
    writer's sha256 lookup comes just before the first writer's commit, its name/version
    lookup just after. Content that is the same is the same version, whoever stored it."""
    first = open_database(postgres_url)
    second = open_database(postgres_url)
    version = new_submission("racer", "1.0.0")
    original = db_bots.find_submission_by_sha256
    committed = threading.Event()

    def lookup_then_the_other_commits(sha256: str, *, session: Any) -> Any:
        found = original(sha256, session=session)
        if not committed.is_set():
            committed.set()
            with first.session() as other:  # the other writer commits the same version now
                submit(version, session=other)
        return found

    monkeypatch.setattr(db_bots, "find_submission_by_sha256", lookup_then_the_other_commits)
    try:
        with second.session() as session:
            try:
                result = submit(version, session=session)
            except VersionReusedError as exc:
                pytest.fail(f"the same content refused as another: {exc}")
        assert committed.is_set()
        assert not result.created
        assert rows(postgres_url, "select count(*) from submissions") == [(1,)]
    finally:
        first.close()
        second.close()


# --- bot-controlled text that PostgreSQL is picky about ---------------------------------------

NASTY = "nul\\x00here rtl\\u202eevil\\u202c bell\\x07 esc\\x1b[31mred "
EVIL = f'''import sys
from sdk import Bot, serve

NASTY = "{NASTY}"


class Evil(Bot):
    def act(self, view):
        sys.stderr.buffer.write(
            b"raw nul\\x00 bad\\xff\\xfe utf8 rtl\\xe2\\x80\\xae end\\n" + b"L" * 20000 + b"\\n"
        )
        sys.stderr.flush()
        if self.context.game_number % 2 == 1:
            raise RuntimeError("boom " + NASTY + "x" * 9000)
        return "take " + NASTY + "y" * 9000


if __name__ == "__main__":
    serve(Evil())
'''
LIAR = """from sdk import Bot, serve


class Liar(Bot):
    name = "liar\\x00\\u202egnp"
    version = "1.0.0\\x00\\u202e"

    def act(self, view):
        return view.legal_actions[0]


if __name__ == "__main__":
    serve(Liar())
"""


def python_bot(folder: Path, name: str, code: str) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "bot.toml").write_text(
        f'name = "{name}"\nversion = "1.0.0"\nruntime = "python"\nentry = "bot.py"\n'
    )
    (folder / name / "bot.py").write_text(code)
    return folder / name


class Hostile:
    def __init__(self, url: str, folder: Path, run: subprocess.CompletedProcess[str]) -> None:
        self.url, self.folder, self.run = url, folder, run


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    """One tournament on PostgreSQL: a bot that crashes and replies with NUL, ESC, BEL,
    RTL override, invalid UTF-8 on stderr and very long text; one whose handshake name and
    version hold NUL and RTL; and the bundled random bot (two games a pair, -v)."""
    folder = tmp_path_factory.mktemp("hostile")
    evil = python_bot(folder, "evil", EVIL)
    liar = python_bot(folder, "liar", LIAR)
    with postgres_database() as url:
        run = kryt(
            folder, "tournament", "run", str(evil), str(liar), "builtin:random", *PROCESS,
            "--unsafe", "-n", "2", "-v", "-d", url,
        )  # fmt: skip
        yield Hostile(url, folder, run)


def assert_shown_safely(output: str) -> None:
    for raw in RAW:
        assert raw not in output, (raw, output[:3000])


def test_hostile_bot_text_is_stored_and_every_view_shows_it_escaped(hostile: Hostile) -> None:
    run, url, folder = hostile.run, hostile.url, hostile.folder
    assert run.returncode in (0, 1), run.stderr[-3000:]  # 1: liar never played
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert_shown_safely(run.stdout + run.stderr)
    games = counted_games(url)
    assert len(games) == 6
    assert_exactly_once(games)
    stored = rows(
        url,
        "select g.id, b.name, g.end_reason, g.forfeit_input, g.forfeit_detail from games g"
        " join submissions u on u.id = case when g.forfeit_seat = 0 then g.seat0_submission_id"
        " else g.seat1_submission_id end join bots b on b.id = u.bot_id"
        " where g.forfeit_seat is not null order by g.id",
    )
    reasons = sorted((name, reason) for _, name, reason, _, _ in stored)
    assert reasons == [
        ("evil", "crash"),
        ("evil", "malformed reply"),
        ("liar", "startup failure"),
        ("liar", "startup failure"),
        ("liar", "startup failure"),
        ("liar", "startup failure"),
    ], reasons
    crash = next(r for r in stored if r[2] == "crash")
    reply = next(r for r in stored if r[2] == "malformed reply")
    # PostgreSQL's text cannot hold NUL: U+FFFD in its place; the rest kept as sent.
    assert crash[4].startswith("bot reported an error: DecisionRequest: RuntimeError: boom ")
    assert "nul\ufffdhere rtl\u202eevil\u202c bell\x07 esc\x1b[31mred" in crash[4]
    assert "nul\ufffdhere rtl\u202eevil" in reply[3]
    assert all("\x00" not in (r[3] or "") + (r[4] or "") for r in stored)
    # Every view of it: exit 0, nothing raw on the terminal.
    for command in (
        ["games", "list"],
        ["tournament", "status"],
        ["tournament", "status", "1"],
        ["leaderboard"],
        ["leaderboard", "--json"],
        ["games", "export", "-"],
        ["games", "export", "-", "--reason", "crash"],
    ):
        shown = kryt(folder, *command, "-d", url)
        assert shown.returncode == 0, (command, shown.stderr)
        assert "Traceback" not in shown.stderr
        assert_shown_safely(shown.stdout + shown.stderr)
    for game_id, *_ in stored[:3]:
        replay = kryt(folder, "replay", str(game_id), "--verify", "-d", url)
        assert replay.returncode == 0, (game_id, replay.stdout[-2000:], replay.stderr)
        assert_shown_safely(replay.stdout + replay.stderr)
        assert "verified" in replay.stdout
    crash_replay = kryt(folder, "replay", str(crash[0]), "-d", url)
    assert "rtl\\u202eevil" in crash_replay.stdout
    board = leaderboard(folder, url)
    assert board == recount(games)


def test_an_export_imported_back_into_its_own_postgres_database_adds_nothing(
    hostile: Hostile,
) -> None:
    """docs/games-format.md: importing the same games twice adds nothing; a game stored
    already with the same content is found, not a conflict."""
    export = hostile.folder / "again.kgn"
    done = kryt(hostile.folder, "games", "export", str(export), "-d", hostile.url)
    assert done.returncode == 0, done.stderr
    back = kryt(hostile.folder, "games", "import", str(export), "-d", hostile.url)
    assert back.returncode == 0, back.stderr
    assert "imported 0 new games of 6 read" in back.stdout + back.stderr


def test_a_cut_forfeit_text_survives_postgres_to_sqlite_and_back(
    hostile: Hostile, tmp_path: Path
) -> None:
    """docs/games-format.md: an export imported and exported again is the same file byte
    for byte."""
    first, second = tmp_path / "pg.kgn", tmp_path / "sqlite.kgn"
    assert kryt(tmp_path, "games", "export", str(first), "-d", hostile.url).returncode == 0
    into = kryt(tmp_path, "games", "import", str(first), "-d", str(tmp_path / "k.db"))
    assert into.returncode == 0, into.stderr
    assert (
        kryt(tmp_path, "games", "export", str(second), "-d", str(tmp_path / "k.db")).returncode == 0
    )
    assert first.read_bytes() == second.read_bytes()


# --- export from PostgreSQL, into SQLite, back into PostgreSQL ---------------------------


@pytest.mark.timeout(600)
def test_games_travel_postgres_to_sqlite_to_postgres_unchanged(
    postgres_url: str, tmp_path: Path
) -> None:
    """``kryt games export`` from PostgreSQL, ``import`` into a new SQLite file, export,
    ``import`` into another PostgreSQL database, export: three identical files, the same
    standings everywhere, and the games replay and verify where they arrived."""
    run = kryt(
        tmp_path, "tournament", "run", "builtin:random", "builtin:greedy", *PROCESS,
        "-n", "6", "--seed", "11", "-d", postgres_url,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    sqlite = str(tmp_path / "copy.db")
    files = [tmp_path / "a.kgn", tmp_path / "b.kgn", tmp_path / "c.kgn"]
    with postgres_database() as other:
        assert kryt(tmp_path, "games", "export", str(files[0]), "-d", postgres_url).returncode == 0
        for source, target, out in ((files[0], sqlite, files[1]), (files[1], other, files[2])):
            done = kryt(tmp_path, "games", "import", str(source), "-d", target)
            assert done.returncode == 0, done.stderr
            assert "imported 6 new games of 6 read" in done.stdout + done.stderr
            assert kryt(tmp_path, "games", "export", str(out), "-d", target).returncode == 0
        assert files[0].read_bytes() == files[1].read_bytes() == files[2].read_bytes()
        boards = [
            {row["bot"]: row for row in json.loads(done.stdout)["rows"]}
            for done in (kryt(tmp_path, "leaderboard", "--json", "-d", u) for u in (
                postgres_url, sqlite, other
            ))
        ]  # fmt: skip
        for board in boards:
            for row in board.values():
                row.pop("submission_id")
        assert boards[0] == boards[1] == boards[2]
        for (game_id,) in rows(other, "select id from games order by id"):
            verify = kryt(tmp_path, "replay", str(game_id), "--verify", "-d", other)
            assert verify.returncode == 0, (game_id, verify.stdout[-1500:], verify.stderr)
        # Imported again: nothing new, on both kinds of database.
        for target in (sqlite, other):
            again = kryt(tmp_path, "games", "import", str(files[0]), "-d", target)
            assert again.returncode == 0 and "imported 0 new games" in again.stdout + again.stderr


# --- database problems ---------------------------------------------------------------------


def bad_urls() -> list[tuple[str, int, str]]:
    """Each refused URL, its exit code and what its line says. Every one names a database
    that does not exist, so that none can reach (and migrate) a real one."""
    admin = postgres_admin_url() or "postgresql+psycopg://kryt:pw@127.0.0.1/kryt"
    base = make_url(admin).set(database=f"kryt_none_{uuid.uuid4().hex[:8]}")

    def url(**changes: Any) -> str:
        return base.set(**changes).render_as_string(hide_password=False)

    server = url().rsplit("/", 1)[0]
    return [
        (url(password="Wr0ng-pass"), 3, "password authentication failed"),
        (url(), 3, "does not exist"),
        (url(port=1), 3, "cannot connect"),
        (url(host="no-such-host.invalid"), 3, "cannot connect"),
        (url().replace("postgresql+psycopg", "postgresq", 1), 2, "unsupported database URL"),
        (server, 2, "no database name"),
    ]


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_database_problems_are_one_line_and_leave_nothing_behind(
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A wrong password, a missing database, a server that is down, a host that does not
    resolve, a scheme typo, no database name: one ``error:`` line without the password, the
    documented exit code (3 a service, 2 bad input), and nothing created (no store, no
    ``kryt.db``, no export file) — given with ``-d`` or in ``KRYT_DATABASE_URL``."""
    require(postgres_admin_url() is not None, "PostgreSQL", "KRYT_TEST_POSTGRES_URL is not set")
    monkeypatch.chdir(tmp_path)
    commands = [
        ["tournament", "run", "builtin:random", "builtin:greedy", *PROCESS, "-n", "1"],
        ["leaderboard"],
        ["games", "export", "out.kgn"],
        ["tournament", "resume", "1"],
    ]
    for url, code, says in bad_urls():
        password = make_url(url.replace("postgresq://", "postgresql://")).password
        for command in commands:
            if how == "flag":
                monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
                status = main([*command, "-d", url])
            else:
                monkeypatch.setenv("KRYT_DATABASE_URL", url)
                status = main(command)
            captured = capsys.readouterr()
            assert status == code, (url, command, captured.err)
            line = one_error_line(captured.err)
            assert says in line, (url, command, line)
            if password:
                assert str(password) not in captured.out + captured.err
            assert sorted(p.name for p in tmp_path.iterdir()) == [], (url, command)
