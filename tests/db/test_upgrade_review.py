"""Review from outside: upgrading Kryt Arena with a database full of data.

For every earlier schema revision R (0001 ... 0010) a database is created at R with the
migration scripts themselves (``alembic upgrade R``) and filled by SQL written against R's
tables, with what R can hold of a realistic arena: a tournament played by the bundled bots
(finished, and one of its games voided after the fact so it is open again), games of every
ending written through the code (forfeits of each kind with their input and detail, a draw by
the final answer, a turn-limit draw, a double forfeit, a voided attempt and its replay), a
classic table of three seats (R >= 0005), rating snapshots, the arena service's accounts,
tokens, audit log, checks, ladder series and captured logs (R >= 0004) and invites
(R >= 0008), live Elo (R >= 0006) and board tallies (R >= 0010). The rows are those of a
source database recorded at head, turned into R's shape (JSON deck and moves before 0007,
the glued forfeit input and the fake ``auto`` final cover before 0002).

Then today's ``kryt`` opens it the way a user does, and nothing may be lost or changed: every
table row for row, every game's deal and moves, and the output of ``kryt games list``,
``kryt games export``, ``kryt replay``, ``kryt leaderboard --json`` and ``kryt tournament
status`` are those of the source; ``kryt tournament resume`` plays exactly the missing game.

Also: a database of a newer release or of another application through the commands that
write (byte for byte unchanged), an upgrade killed with SIGKILL midway or stopped by a full
disk (the old revision whole, and the next run works), and two processes upgrading at once.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Connection, make_url

from arena.db import (
    GamePlace,
    SeriesSpec,
    SeriesStatus,
    TournamentSpec,
    TournamentStatus,
    create_tournament,
    open_database,
    record_game,
    series_of_tournament,
    set_series_status,
    set_tournament_status,
    void_game,
)
from arena.db.gamecodec import Table, unpack
from arena.db.migrate import alembic_config, current_revision, head_revision
from arena.db.models import metadata
from kryt.cli import main
from kryt.errors import ExitCode
from referee.protocol.messages import GameEndReason
from referee.record import Forfeit, GameRecord, Move
from tests.db.conftest import BACKENDS, postgres_admin_url, scratch_postgres_database
from tests.db.helpers import deck
from tests.db.postgres_admin import terminate_connections

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
ENV.pop("KRYT_DATABASE_URL", None)
BOTS = ("builtin:random", "builtin:greedy")
REVISIONS = [f"{n:04d}" for n in range(1, 11)]
OLD_ONLY_TYPES: dict[str, sa.types.TypeEngine[Any]] = {
    "deck": sa.JSON(),
    "actions": sa.JSON(),
    "forfeit_reason": sa.String(64),
}
DERIVED = ("elo_scopes", "elo_ratings", "board_pairs", "board_forfeits")
T0 = datetime(2026, 11, 3, 10, 0, 0, 125000, tzinfo=UTC)


def kryt_process(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``kryt ARGS`` as a user runs it: a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "kryt", *args],
        cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def kryt(cwd: Path, *args: str) -> Ran:
    """``kryt ARGS`` in this process (the same ``main`` the console script calls): fast enough
    to run every reading command on twenty databases."""
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(old)
    return Ran(int(code), out.getvalue(), err.getvalue())


# --- the source: an arena recorded at head ----------------------------------------------


def _synthetic_games(url: str, cup_id: int) -> None:
    """A tournament of games of every ending, recorded through the code, the arena service's
    rows, and one of the cup's games voided after it was recorded."""
    db = open_database(url)
    try:
        with db.session() as s:
            spec = TournamentSpec(
                name="odd endings",
                seed=11,
                config={"turn_limit": 500, "games_per_pair": 9},
                series=[SeriesSpec(1, 2, 9, 5)],
            )
            t = create_tournament(spec, session=s)
            assert t.id is not None
            (series,) = series_of_tournament(t.id, session=s)
            assert series.id is not None
        sid = series.id
        move = (
            Move(1, "lead 6C", 0.012, 0.0005),
            Move(0, "take", 0.5),
            Move(1, "cover 7C lead 8D", 1.25, 0.25),
        )

        def rec(n: int, **kw: Any) -> GameRecord:
            start = (T0 + timedelta(minutes=n)).timestamp()
            fields: dict[str, Any] = {
                "deck": tuple(deck(n)),
                "dealer": 0,
                "turn_limit": 500,
                "moves": move,
                "ending": GameEndReason.OUT,
                "winner": 0,
                "referee_version": "kryt-arena-referee 0.1.0",
                "started": start,
                "finished": start + 2.5,
            }
            return GameRecord(**(fields | kw))

        tb = 'Traceback (most recent call last):\n  File "bot.py", line 12\nZeroDivisionError'
        games = [
            (1, 1, rec(1, winner=1, ending=GameEndReason.TIMEOUT,
                       forfeit=Forfeit(0, GameEndReason.TIMEOUT, "", "no reply within 1.0 s"))),
            (2, 1, rec(2, winner=0, ending=GameEndReason.ILLEGAL_ACTION,
                       forfeit=Forfeit(1, GameEndReason.ILLEGAL_ACTION, "lead 6D", "not held"))),
            (3, 1, rec(3, winner=1, ending=GameEndReason.CRASH,
                       forfeit=Forfeit(0, GameEndReason.CRASH, "", f"ZeroDivisionError\n{tb}"))),
            (4, 1, rec(4, winner=0, ending=GameEndReason.MALFORMED_REPLY,
                       forfeit=Forfeit(1, GameEndReason.MALFORMED_REPLY, "b'\\xff'", ""))),
            (5, 1, rec(5, winner=None, ending=GameEndReason.DRAW_BY_FINAL_ANSWER,
                       final_cover="9H")),
            (6, 1, rec(6, winner=None, ending=GameEndReason.TURN_LIMIT)),
            (7, 1, rec(7, winner=None, ending=GameEndReason.DOUBLE_FORFEIT, moves=())),
            (8, 1, rec(8, winner=None, ending=GameEndReason.VOID, void_reason="host went away")),
            (8, 2, rec(8, winner=1)),
            (9, 1, rec(9, winner=0, moves=(Move(1, "ход ♠", 0.0, 1e-7),))),
        ]  # fmt: skip
        for number, attempt, record in games:
            with db.session() as s:
                seats = (1, 2)
                record_game(record, GamePlace(sid, number, attempt, seats), session=s)
        with db.session() as s:
            set_series_status(sid, SeriesStatus.FINISHED, session=s)
            set_tournament_status(t.id, TournamentStatus.FINISHED, session=s)
        with db.session() as s:
            # The cup's third game voided after the fact: the cup is open again.
            (cup_game,) = s.execute(
                text("SELECT g.id FROM games g JOIN series r ON r.id = g.series_id"
                     " WHERE r.tournament_id = :t AND g.number = 3"), {"t": cup_id}
            ).scalars()  # fmt: skip
            void_game(int(cup_game), "the sandbox host went away", session=s)
        with db.session() as s:
            _service_rows(s.connection(), sid)
    finally:
        db.close()


def _service_rows(c: Connection, series_id: int) -> None:
    """The arena service's rows (accounts, tokens, audit, checks, ladder, logs, invites)."""
    tables = metadata.tables
    c.execute(tables["authors"].insert(), [
        {"id": 1, "name": "ann", "password_hash": "scrypt$abc", "disabled": False,
         "created_at": T0},
        {"id": 2, "name": "bob", "password_hash": None, "disabled": True, "created_at": T0},
    ])  # fmt: skip
    c.execute(tables["api_tokens"].insert(), [
        {"id": 1, "author_id": 1, "token_hash": "a" * 64, "label": "laptop", "created_at": T0,
         "expires_at": T0 + timedelta(days=90), "revoked_at": None, "last_used_at": T0},
        {"id": 2, "author_id": 2, "token_hash": "b" * 64, "label": "ci", "created_at": T0,
         "expires_at": T0 + timedelta(days=9), "revoked_at": T0, "last_used_at": None},
    ])  # fmt: skip
    c.execute(tables["bot_owners"].insert(), [{"bot_id": 1, "author_id": 1}])
    c.execute(tables["audit_log"].insert(), [
        {"id": n, "at": T0 + timedelta(seconds=n), "author_id": 1, "token_id": 1,
         "action": action, "outcome": "ok", "target": "random", "detail": "", "remote": "::1"}
        for n, action in ((1, "login"), (2, "upload"), (3, "retire"))
    ])  # fmt: skip
    c.execute(tables["submission_checks"].insert(), [
        {"submission_id": 1, "author_id": 1, "status": "passed", "message": "2 games",
         "games": [1, 2], "created_at": T0, "finished_at": T0 + timedelta(seconds=9)},
    ])  # fmt: skip
    c.execute(tables["ladder_series"].insert(), [
        {"series_id": series_id, "claimed_by": None, "lease_until": None, "created_at": T0}
    ])  # fmt: skip
    c.execute(tables["game_logs"].insert(), [
        {"id": 1, "game_id": 1, "seat": 0, "submission_id": 1, "text": "hello\n",
         "truncated": False},
        {"id": 2, "game_id": 1, "seat": 1, "submission_id": 2, "text": "x" * 100,
         "truncated": True},
    ])  # fmt: skip
    c.execute(tables["invites"].insert(), [
        {"id": 1, "code_hash": "c" * 64, "label": "ann", "created_at": T0,
         "expires_at": T0 + timedelta(days=7), "used_at": T0, "author_id": 1},
        {"id": 2, "code_hash": "d" * 64, "label": "open", "created_at": T0,
         "expires_at": T0 + timedelta(days=7), "used_at": None, "author_id": None},
    ])  # fmt: skip


@dataclass(frozen=True)
class Source:
    path: Path
    views: dict[str, Any]


@dataclass(frozen=True)
class Sources:
    two_seats: Source
    """What revisions before 0005 can hold: no classic table."""
    full: Source


def _views(cwd: Path, url: str) -> dict[str, Any]:
    """What a user reads from a database: the reading commands' output."""
    views: dict[str, Any] = {}
    listed = kryt(cwd, "games", "list", "-d", url)
    assert listed.code == 0, listed
    views["games list"] = listed.out
    leaderboard = kryt(cwd, "leaderboard", "--json", "-d", url)
    assert leaderboard.code == 0, leaderboard
    views["leaderboard"] = json.loads(leaderboard.out)
    status = kryt(cwd, "tournament", "status", "-d", url)
    assert status.code == 0, status
    views["status"] = status.out
    export = cwd / f"export-{len(list(cwd.glob('export-*')))}.json"
    exported = kryt(cwd, "games", "export", str(export), "-d", url)
    assert exported.code == 0, exported
    views["export"] = json.loads(export.read_text())
    ids = [int(line.split()[0]) for line in listed.out.splitlines() if line.strip()[:1].isdigit()]
    assert ids, listed.out
    views["ids"] = sorted(ids)
    for game_id in sorted(ids):
        shown = kryt(cwd, "replay", str(game_id), "-d", url)
        assert shown.code == 0, shown
        views[f"replay {game_id}"] = shown.out
    return views


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Sources:
    where = tmp_path_factory.mktemp("upgrade-source")
    two = where / "two-seats.db"
    run = kryt_process(
        where, "tournament", "run", *BOTS, "--games", "4", "--backend", "process",
        "--turn-limit", "400", "--name", "cup", "-d", str(two),
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    _synthetic_games(f"sqlite:///{two}", cup_id=1)
    full = where / "full.db"
    shutil.copyfile(two, full)
    table = kryt_process(
        where, "tournament", "run", *BOTS, "builtin:mc", "--ruleset", "classic",
        "--table-size", "3", "--games", "1", "--backend", "process", "--turn-limit", "300",
        "--time", "mc=0.1+10",  # mc thinks for a share of its move limit: keep it short
        "--name", "table", "-d", str(full),
    )  # fmt: skip
    assert table.returncode == 0, table.stdout + table.stderr
    return Sources(
        Source(two, _views(where, f"sqlite:///{two}")),
        Source(full, _views(where, f"sqlite:///{full}")),
    )


# --- a database at revision R -------------------------------------------------------------


def _old_game(row: dict[str, Any], revision: str) -> dict[str, Any]:
    """A head games row in revision ``revision``'s shape (what that revision's code wrote)."""
    row = dict(row)
    if revision < "0007":
        played = unpack(bytes(row["packed"]), _table_of(row))
        row["deck"] = list(played.deck)
        row["actions"] = [
            {"seat": m.seat, "action": m.action, "seconds": m.seconds}
            | ({} if m.cpu_seconds is None else {"cpu": m.cpu_seconds})
            for m in played.moves
        ]
    if revision < "0002":
        # 0001: the reason in forfeit_reason, the detail glued to the input, the automatic
        # final cover as a fake move marked auto; no CPU times yet.
        moves = [{k: m[k] for k in ("seat", "action", "seconds")} | {"auto": False}
                 for m in row["actions"]]  # fmt: skip
        if row["final_cover"]:
            last = moves[-1]["seat"] if moves else 0
            moves.append({"seat": 1 - last, "action": f"cover {row['final_cover']}",
                          "seconds": 0.0, "auto": True})  # fmt: skip
        row["actions"] = moves
        offending, detail = row["forfeit_input"], row["forfeit_detail"]
        if detail:
            row["forfeit_input"] = f"{offending}\n-- {detail}" if offending else f"-- {detail}"
        if row["forfeit_seat"] is not None:
            row["forfeit_reason"] = row["end_reason"].replace(" ", "_")
            row["end_reason"] = "forfeit"
    return row


def _table_of(row: dict[str, Any]) -> Table:
    return Table(row["dealer"], row["turn_limit"], row["ruleset"], row["players"])


def _pk(table: sa.Table) -> list[sa.Column[Any]]:
    return list(table.primary_key.columns)


def make_old_database(source: Path, url: str, revision: str) -> None:
    """A database at ``revision`` (the migration scripts, then SQL against its tables) holding
    what ``revision`` can hold of the source."""
    db = open_database(url, check_schema=False)
    try:
        with db.engine.begin() as c:
            command.upgrade(alembic_config(c), revision)
        engine = create_engine(f"sqlite:///{source}")
        try:
            with engine.connect() as s, db.engine.begin() as t:
                present = set(inspect(t).get_table_names())
                for table in metadata.sorted_tables:
                    if table.name not in present:
                        continue
                    columns = [col["name"] for col in inspect(t).get_columns(table.name)]
                    rows = [
                        dict(r) for r in s.execute(table.select().order_by(*_pk(table))).mappings()
                    ]
                    if table.name == "games":
                        rows = [_old_game(r, revision) for r in rows]
                    types = {col.name: col.type for col in table.columns} | OLD_ONLY_TYPES
                    shaped = sa.table(table.name, *(sa.column(n, types[n]) for n in columns))
                    if rows:
                        t.execute(shaped.insert(), [{n: r.get(n) for n in columns} for r in rows])
                if t.dialect.name == "postgresql":
                    for table in metadata.sorted_tables:
                        if table.name in present and "id" in table.c and len(_pk(table)) == 1:
                            t.exec_driver_sql(
                                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'),"
                                f" (SELECT coalesce(max(id), 0) + 1 FROM {table.name}), false)"
                            )
        finally:
            engine.dispose()
        with db.engine.connect() as c:
            assert current_revision(c) == revision
    finally:
        db.close()
    if url.startswith("sqlite"):
        # A database the older release used: in WAL mode, as every release opened it.
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            conn.execute("PRAGMA journal_mode=WAL")


def revision_of(url: str) -> str | None:
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return current_revision(c)
    finally:
        engine.dispose()


def dump(url: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table of the models, typed, games with their deal and moves."""
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            present = set(inspect(c).get_table_names())
            out: dict[str, list[dict[str, Any]]] = {}
            for table in metadata.sorted_tables:
                if table.name not in present:
                    out[table.name] = []
                    continue
                rows = [dict(r) for r in c.execute(table.select().order_by(*_pk(table))).mappings()]
                if table.name == "games":
                    for r in rows:
                        played = unpack(bytes(r.pop("packed")), _table_of(r))
                        r["deal"] = played.deck
                        r["moves"] = played.moves
                for r in rows:
                    for k, v in r.items():
                        if isinstance(v, float):
                            r[k] = round(v, 9)
                out[table.name] = rows
            return out
    finally:
        engine.dispose()


def expected_dump(source: Path, revision: str) -> dict[str, list[dict[str, Any]]]:
    """The source as it must come out of an upgrade from ``revision``: what ``revision``
    could not hold is absent (its tables empty, time controls null, and before 0002 the turn
    limit from the tournament's config and no CPU times)."""
    expected = dump(f"sqlite:///{source}")
    engine = create_engine(f"sqlite:///{source}")
    with engine.connect() as c:
        limits = {
            int(sid): json.loads(config).get("turn_limit", 1000)
            for sid, config in c.exec_driver_sql(
                "SELECT s.id, t.config FROM series s JOIN tournaments t ON t.id = s.tournament_id"
            )
        }
    engine.dispose()
    shape = f"sqlite:///{source.parent}/shape-{revision}.db"
    scratch = open_database(shape, check_schema=False)
    try:
        with scratch.engine.begin() as c:
            command.upgrade(alembic_config(c), revision)
            at_revision = set(inspect(c).get_table_names())
    finally:
        scratch.close()
    for name in expected:
        if name not in at_revision and name not in DERIVED:
            expected[name] = []
    for game in expected["games"]:
        if revision < "0009":
            game["time_controls"] = None
        if revision < "0002":
            game["turn_limit"] = limits[game["series_id"]]
            game["moves"] = tuple(Move(m.seat, m.action, m.seconds) for m in game["moves"])
    return expected


def normalized(views: dict[str, Any], revision: str) -> dict[str, Any]:
    """The views without what ``revision`` could not hold (per-game time controls before
    0009: the export then names the tournament's; CPU times before 0002)."""
    out = dict(views)
    games = []
    for entry in views["export"]:
        entry = dict(entry)
        if revision < "0009":
            entry = {k: v for k, v in entry.items() if not k.endswith("Time")}
        if revision < "0002":
            entry["Moves"] = [{k: v for k, v in m.items() if k != "cpu"} for m in entry["Moves"]]
        games.append(entry)
    out["export"] = games
    for key in list(out):
        if key.startswith("replay ") and revision < "0009":
            out[key] = "\n".join(x for x in out[key].splitlines() if "time" not in x.lower())
        if key.startswith("replay ") and revision < "0002":
            out[key] = "cpu-less"  # compared through the rows above
    return out


@pytest.fixture
def target(backend: str, tmp_path: Path) -> Iterator[str]:
    """A new SQLite file, or a new PostgreSQL database (its connections cut before it is
    dropped: the in-process commands leave pooled ones open)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path}/old.db"
        return
    with scratch_postgres_database() as url:
        yield url
        gc.collect()
        admin_url = postgres_admin_url()
        assert admin_url is not None
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        try:
            terminate_connections(admin, str(make_url(url).database))
        finally:
            admin.dispose()


def _revision_param(backend: Any, revision: str) -> Any:
    # SQLite's 0004-0006 with captured logs (game_logs rows) failed here: 0005 and 0007
    # rebuild `games` (copy, drop, rename) and the drop broke the logs' foreign key.
    return pytest.param(
        backend.values[0], revision, id=f"{backend.id}-{revision}", marks=list(backend.marks)
    )


RESUMED = ("0001", "0003", "0008", "0010")


@pytest.mark.parametrize(
    ("backend", "revision"), [_revision_param(b, r) for b in BACKENDS for r in REVISIONS]
)
def test_an_arena_of_every_earlier_revision_opens_with_nothing_lost(
    sources: Sources, target: str, backend: str, revision: str, tmp_path: Path
) -> None:
    source = sources.two_seats if revision < "0005" else sources.full
    make_old_database(source.path, target, revision)
    # The first command a user runs after upgrading migrates the database...
    listed = kryt(tmp_path, "games", "list", "-d", target)
    assert listed.code == 0, listed
    assert revision_of(target) == head_revision()
    # ...and every row is there with its values, every game with its deal and moves.
    after = dump(target)
    expected = expected_dump(source.path, revision)
    assert list(after) == list(expected)
    for name in expected:
        assert after[name] == expected[name], name
    # What the user reads is what the source shows.
    views = _views(tmp_path, target)
    assert normalized(views, revision) == normalized(source.views, revision)
    if revision in RESUMED:
        # The cup, open again (its third game voided), resumes on the upgraded database and
        # plays exactly that game again, as attempt 2 with the same deal.
        resumed = kryt_process(tmp_path, "tournament", "resume", "1", "-d", target)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        engine = create_engine(target)
        try:
            with engine.connect() as c:
                rows = c.execute(
                    text("SELECT g.number, g.attempt, g.voided FROM games g JOIN series s"
                         " ON s.id = g.series_id WHERE s.tournament_id = 1 ORDER BY 1, 2")
                ).all()  # fmt: skip
                status = c.execute(text("SELECT status FROM tournaments WHERE id = 1")).scalar()
        finally:
            engine.dispose()
        assert [tuple(r) for r in rows] == [
            (1, 1, False), (2, 1, False), (3, 1, True), (3, 2, False), (4, 1, False)
        ]  # fmt: skip
        assert status == "finished"


# --- a database this code must not touch --------------------------------------------------


def fingerprint(url: str) -> Any:
    """A SQLite file's bytes (and which side files exist); a PostgreSQL database's tables,
    revision and row counts."""
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        sides = [p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "-")]
        return path.read_bytes(), sorted(sides)
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            tables = sorted(inspect(c).get_table_names())
            counts = {t: c.exec_driver_sql(f'SELECT count(*) FROM "{t}"').scalar() for t in tables}
            version = (
                c.exec_driver_sql("SELECT version_num FROM alembic_version").all()
                if "alembic_version" in tables
                else None
            )
            return tables, counts, version
    finally:
        engine.dispose()


def _refused_by_everything(cwd: Path, url: str, source: Source, needle: str) -> None:
    """Every command, reading or writing, refuses ``url`` in one line with exit 3, and the
    database comes out as it went in."""
    before = fingerprint(url)
    export = cwd / "out.json"
    games_file = cwd / "in.json"
    cup = [e for e in source.views["export"] if e["Tournament"] == "cup" and e["Ending"] == "out"]
    games_file.write_text(json.dumps(cup[:2]))
    commands = [
        ("games", "list"),
        ("leaderboard", "--json"),
        ("tournament", "status"),
        ("replay", "1"),
        ("games", "export", str(export)),
        ("games", "import", str(games_file)),
        ("tournament", "resume", "1"),
        ("tournament", "run", *BOTS, "--games", "1", "--backend", "process"),
    ]
    for args in commands:
        done = kryt(cwd, *args, "-d", url)
        assert done.code == ExitCode.UNAVAILABLE, (args, done)
        errors = [line for line in done.err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and needle in errors[0], (args, done.err)
        assert "Traceback" not in done.err, done.err
        assert fingerprint(url) == before, args
    assert not export.exists()
    upgrade = subprocess.run(
        [sys.executable, "-m", "arena.db.migrate", "upgrade", url],
        cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert upgrade.returncode == 1 and needle in upgrade.stderr, upgrade.stderr
    assert fingerprint(url) == before


def test_a_database_of_a_newer_release_is_refused_by_every_command_untouched(
    sources: Sources, target: str, tmp_path: Path
) -> None:
    """A newer release added a table and stamped revision 0012: nothing may migrate, create
    or write anything, and the newer data stays."""
    make_old_database(sources.full.path, target, head_revision())
    engine = create_engine(target)
    try:
        with engine.begin() as c:
            c.exec_driver_sql("CREATE TABLE game_comments (id INTEGER PRIMARY KEY, body TEXT)")
            c.exec_driver_sql("INSERT INTO game_comments VALUES (1, 'well played')")
            c.exec_driver_sql("UPDATE alembic_version SET version_num = '0012'")
    finally:
        engine.dispose()
    _refused_by_everything(tmp_path, target, sources.full, "0012")


def test_another_applications_database_is_refused_by_every_command_untouched(
    sources: Sources, target: str, tmp_path: Path
) -> None:
    engine = create_engine(target)
    try:
        with engine.begin() as c:
            c.exec_driver_sql("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT)")
            c.exec_driver_sql("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
            c.exec_driver_sql("INSERT INTO invoices VALUES (1, '12.50')")
    finally:
        engine.dispose()
    _refused_by_everything(tmp_path, target, sources.full, "customers")


# --- an upgrade that stops midway, and two at once ----------------------------------------

BIG = 2500
"""Games of the big database: migration 0007 replays each (2-3 ms): seconds to upgrade."""


def big_old_database(source: Path, url: str) -> int:
    """The two-seat source at revision 0003 with BIG more games (copies of the cup's first
    game in a tournament of their own); returns how many games it holds."""
    make_old_database(source, url, "0003")
    engine = create_engine(url)
    try:
        with engine.begin() as c:
            columns = [
                col["name"] for col in inspect(c).get_columns("games") if col["name"] != "id"
            ]
            c.exec_driver_sql(
                "INSERT INTO tournaments (id, name, config, seed, status, created_at)"
                " SELECT 90, 'big', config, seed, 'finished', created_at FROM tournaments"
                " WHERE id = 1"
            )
            c.exec_driver_sql(
                "INSERT INTO series (id, tournament_id, position, submission_a_id,"
                " submission_b_id, format, games_planned, seed, status) VALUES"
                f" (90, 90, 0, 1, 2, 'standard', {BIG}, 5, 'finished')"
            )
            picked = [
                "90" if n == "series_id" else "k.n" if n == "number" else f"g.{n}" for n in columns
            ]
            c.exec_driver_sql(
                f"WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < {BIG})"
                f" INSERT INTO games ({', '.join(columns)}) SELECT {', '.join(picked)}"
                " FROM games g, k WHERE g.id = 1"
            )
            if c.dialect.name == "postgresql":
                c.exec_driver_sql(
                    "SELECT setval(pg_get_serial_sequence('games', 'id'),"
                    " (SELECT max(id) + 1 FROM games), false)"
                )
            return int(c.exec_driver_sql("SELECT count(*) FROM games").scalar_one())
    finally:
        engine.dispose()


def _state(url: str) -> tuple[str | None, int, set[str], list[Any]]:
    """Revision, number of games, the games table's columns and the big series' last game
    as stored (its moves unpacked at head)."""
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            if c.dialect.name == "sqlite":
                assert c.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            columns = {col["name"] for col in inspect(c).get_columns("games")}
            count = int(c.exec_driver_sql("SELECT count(*) FROM games").scalar_one())
            row = dict(c.execute(
                text(f"SELECT * FROM games WHERE series_id = 90 AND number = {BIG}")
            ).mappings().one())  # fmt: skip
            if "packed" in row:
                moves = [
                    (m.seat, m.action) for m in unpack(bytes(row["packed"]), _table_of(row)).moves
                ]
            else:
                actions = row["actions"]
                actions = json.loads(actions) if isinstance(actions, str) else actions
                moves = [(m["seat"], m["action"]) for m in actions]
            return current_revision(c), count, columns, moves
    finally:
        engine.dispose()


def _migrating(url: str, process: subprocess.Popen[str]) -> bool:
    """Whether ``process`` is inside the migration's write transaction."""
    if url.startswith("sqlite"):
        wal = Path(url.removeprefix("sqlite:///") + "-wal")
        return wal.exists() and wal.stat().st_size > 512 * 1024
    admin_url = postgres_admin_url()
    assert admin_url is not None
    admin = create_engine(admin_url)
    try:
        with admin.connect() as c:
            held = c.execute(
                text("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
                     " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = :n"),
                {"n": make_url(url).database},
            ).scalar_one()  # fmt: skip
            return bool(held)
    finally:
        admin.dispose()


def _start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], cwd=cwd, env=ENV, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)


def test_an_upgrade_killed_midway_leaves_the_old_revision_whole_and_the_next_run_works(
    sources: Sources, target: str, tmp_path: Path
) -> None:
    games = big_old_database(sources.two_seats.path, target)
    revision, count, columns, moves = _state(target)
    assert (revision, count) == ("0003", games) and "deck" in columns
    upgrade = _start(tmp_path, "-m", "arena.db.migrate", "upgrade", target)
    try:
        deadline = time.monotonic() + 120
        while not _migrating(target, upgrade):
            assert upgrade.poll() is None, upgrade.communicate()
            assert time.monotonic() < deadline, "the upgrade never started writing"
            time.sleep(0.05)
        time.sleep(0.5)
        assert upgrade.poll() is None, "the upgrade ended before it could be killed"
    finally:
        _kill(upgrade)
    assert upgrade.returncode == -signal.SIGKILL
    # The old revision, whole: every game, in the old shape.
    assert _state(target) == (revision, count, columns, moves)
    # The next run upgrades it.
    listed = kryt(tmp_path, "games", "list", "--limit", "3", "-d", target)
    assert listed.code == 0, listed
    after = _state(target)
    assert after[:2] == (head_revision(), games) and "packed" in after[2]
    assert after[3] == moves


def test_two_processes_opening_an_old_database_at_once(
    sources: Sources, target: str, tmp_path: Path
) -> None:
    """Both start while the database is at 0003: one migrates, the other waits for it, and
    both read the same upgraded database."""
    games = big_old_database(sources.two_seats.path, target)
    _, _, _, moves = _state(target)
    args = ("-m", "kryt", "games", "list", "--tournament", "1", "-d", target)
    first, second = _start(tmp_path, *args), _start(tmp_path, *args)
    try:
        outputs = [p.communicate(timeout=300) for p in (first, second)]
    finally:
        _kill(first)
        _kill(second)
    for process, (_out, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err
        assert "Traceback" not in err, err
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].count("│") > 0
    revision, count, _columns, after = _state(target)
    assert (revision, count, after) == (head_revision(), games, moves)


def test_a_failed_upgrade_leaves_the_old_revision_whole(sources: Sources, tmp_path: Path) -> None:
    """A migration that fails rolls the whole upgrade back: the database is at its old
    revision with every row, in one piece. Here: a captured log whose game is gone (written
    with SQLite's foreign keys off, as any other tool may), which the check of every foreign
    key after the migrations finds (they are off while the migrations rebuild tables)."""
    url = f"sqlite:///{tmp_path}/old.db"
    make_old_database(sources.full.path, url, "0006")
    with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn, conn:
        conn.execute(
            "UPDATE game_logs SET game_id = 999999 WHERE rowid = (SELECT min(rowid) FROM game_logs)"
        )
    before = dump_old(url)
    done = kryt(tmp_path, "games", "list", "-d", url)
    assert done.code != 0, done.out
    assert "Traceback" not in done.err and done.err.count("error:") == 1, done.err
    assert "game_logs" in done.err and "nothing was changed" in done.err, done.err
    assert revision_of(url) == "0006"
    assert dump_old(url) == before
    with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (0,)  # a fresh connection's


def dump_old(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, as stored (any revision)."""
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return {
                t: [tuple(r) for r in c.exec_driver_sql(f'SELECT * FROM "{t}" ORDER BY 1')]
                for t in sorted(inspect(c).get_table_names())
            }
    finally:
        engine.dispose()
