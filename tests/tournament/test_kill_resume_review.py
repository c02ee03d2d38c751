"""Review from the outside: a tournament killed with ``kill -9`` at any moment, then resumed,
loses nothing and duplicates nothing.

The promise (README "Run a tournament": "Each game is committed as it ends: an interrupted
run loses nothing and ``resume`` plays exactly the missing games"; docs/configuration.md
"Managing a tournament" and "What a fixed seed reproduces"; docs/architecture.md: "A series
deals game *n* from ``(seed, n)``, lets the loser deal, keeps the dealer after a draw"):

- the runner's whole process group is SIGKILLed at several moments (as soon as the
  tournament is stored, in the middle of a series, during the last games, once the
  tournament is marked finished while the ratings are refitted), then ``kryt tournament
  resume`` finishes it;
- everything is checked with readers of our own (SQL on the database, read only) and the
  public ``kryt games export`` / ``kryt leaderboard --json``: the games per pair, one counted
  game per (series, number), the loser-deals order across the kill, no bot left running,
  the standings against a recount;
- the bots of the main tournament are deterministic (``builtin:greedy`` and two helper bots
  whose action is a CRC of their view, ``kill_resume_bots/``), so a resumed tournament with a
  fixed seed must be the very tournament an uninterrupted run with that seed plays in a
  fresh database: same deals, same dealers, same moves, same results, same ratings.

Every run is a real ``kryt`` subprocess in a session of its own (``--backend process``), on
SQLite and once on PostgreSQL. The machine is busy: nothing assumes which of two events
comes first, every wait polls with a generous deadline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, suppress
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.db.conftest import scratch_postgres_database
from tests.kryt_subprocess import clean_env, run_kryt, start_kryt
from tests.scaling.helpers import wait_no_processes_in

ROOT = Path(__file__).resolve().parents[2]
HELPERS = Path(__file__).resolve().parent / "kill_resume_bots"
KRYT = [sys.executable, "-m", "kryt"]
DEADLINE = 240.0  # generous: a loaded two-core machine
ENV = clean_env()
GAMES = 4
SEED = "4242"
#: Deterministic bots: the same deal and dealer always give the same game.


def deterministic(folder: Path) -> list[str]:
    """greedy and two hash bots: ``hash_a`` and a copy of it named ``hash_b`` (made in
    ``folder``), which plays otherwise since the bot salts its hash with its name."""
    second = folder / "hash_b"
    if not second.exists():
        shutil.copytree(HELPERS / "hash_a", second)
        manifest = second / "bot.toml"
        manifest.write_text(manifest.read_text().replace('name = "hash_a"', 'name = "hash_b"'))
    return ["builtin:greedy", str(HELPERS / "hash_a"), str(second)]


#: Time controls no healthy bot can miss on a loaded machine (a forfeit would change a game).
SETTINGS = ["--backend", "process", "--unsafe", "--move-seconds", "5", "--bank-seconds", "60"]
PAIRS = 3  # three bots: a round robin of three pairs

pytestmark = pytest.mark.timeout(900)


# --- running kryt ---------------------------------------------------------------------


def kryt(cwd: Path, *args: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess[str]:
    return run_kryt(cwd, *args, env=ENV, timeout=timeout)


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """``kryt ARGS`` leading a session and process group of its own."""
    return start_kryt(cwd, *args, env=ENV)


def kill_group(process: subprocess.Popen[str]) -> str:
    """SIGKILL the process group of ``process``; its standard error so far."""
    with suppress(ProcessLookupError):  # every process of the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    _, err = process.communicate(timeout=DEADLINE)
    return err


def flat(value: str) -> str:
    return re.sub(r"\s+", " ", value)


@dataclass
class Place:
    """Where a tournament lives: a scratch folder, its database and its bot store."""

    folder: Path
    url: str  # a SQLite path or a PostgreSQL URL, as given to --db

    @property
    def where(self) -> list[str]:
        return ["--db", self.url, "--store", str(self.store)]

    @property
    def store(self) -> Path:
        return self.folder / "store"

    def run_args(self, bots: list[str], *extra: str) -> list[str]:
        return ["tournament", "run", *bots, "-n", str(GAMES), *SETTINGS, *extra, *self.where]


# --- reading the database (read only) -------------------------------------------------


@dataclass(frozen=True)
class Game:
    game_id: int
    series: int
    position: int
    number: int
    attempt: int
    dealer: int
    result: str | None
    voided: bool
    seat0: int
    seat1: int
    end_reason: str


class Reader:
    """A read-only look at a tournament's database, SQLite or PostgreSQL."""

    def __init__(self, url: str) -> None:
        if "://" in url:
            self.engine = create_engine(url, poolclass=NullPool)
        else:
            self.engine = create_engine(
                f"sqlite:///file:{url}?mode=ro&uri=true", poolclass=NullPool
            )
        self.path = None if "://" in url else Path(url)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        if self.path is not None and not self.path.exists():
            return []  # not created yet (a read-only open would fail anyway)
        try:
            with self.engine.connect() as connection:
                return [tuple(row) for row in connection.execute(text(sql))]
        except Exception:  # the schema is not there yet, or a write lock for a moment
            return []

    def counted(self) -> list[tuple[int, int]]:
        return sorted(
            (int(s), int(n))
            for s, n in self.rows("select series_id, number from games where not voided")
        )

    def tournament_status(self) -> str | None:
        found = self.rows("select status from tournaments where id = 1")
        return str(found[0][0]) if found else None

    def series(self) -> dict[int, tuple[int, int, int, int, str]]:
        """``id: (position, submission a, submission b, games planned, status)``."""
        return {
            int(r[0]): (int(r[1]), int(r[2]), int(r[3]), int(r[4]), str(r[5]))
            for r in self.rows(
                "select id, position, submission_a_id, submission_b_id, games_planned, status"
                " from series where tournament_id = 1"
            )
        }

    def games(self) -> list[Game]:
        return [
            Game(
                game_id=int(r[10]),
                series=int(r[0]),
                position=int(r[1]),
                number=int(r[2]),
                attempt=int(r[3]),
                dealer=int(r[4]),
                result=_text(r[5]),
                voided=bool(r[6]),
                seat0=int(r[7]),
                seat1=int(r[8]),
                end_reason=str(r[9]),
            )
            for r in self.rows(
                "select g.series_id, s.position, g.number, g.attempt, g.dealer, g.result,"
                " g.voided, g.seat0_submission_id, g.seat1_submission_id, g.end_reason, g.id"
                " from games g join series s on s.id = g.series_id"
                " where s.tournament_id = 1 order by g.series_id, g.number, g.attempt"
            )
        ]

    def names(self) -> dict[int, str]:
        found: dict[int, str] = {}
        for sid, manifest in self.rows("select id, manifest from submissions"):
            data = json.loads(manifest) if isinstance(manifest, str) else manifest
            found[int(sid)] = str(data["name"])
        return found

    def close(self) -> None:
        self.engine.dispose()


def _text(value: object) -> str | None:
    return None if value is None else str(value)


@pytest.fixture
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """A fresh database: a SQLite file not created yet, or (``postgres``) an empty
    PostgreSQL database of the test's own."""
    backend = getattr(request, "param", "sqlite")
    if backend == "sqlite":
        yield Place(tmp_path, str(tmp_path / "kryt.db"))
        return
    with scratch_postgres_database() as url:
        yield Place(tmp_path, url)


def wait_until(
    what: str, ready: Callable[[], bool], process: subprocess.Popen[str] | None = None
) -> bool:
    """Poll ``ready`` until true (True), or until ``process`` ended (False)."""
    deadline = time.monotonic() + DEADLINE
    while not ready():
        if process is not None and process.poll() is not None:
            return False
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    return True


# --- independent checks ---------------------------------------------------------------


def expected_dealer(previous_dealer: int, previous_result: str | None) -> int:
    """rules.md "Series": the loser deals the next game; after a draw the same dealer."""
    if previous_result == "draw":
        return previous_dealer
    assert previous_result in ("seat0", "seat1"), previous_result
    winner = 0 if previous_result == "seat0" else 1
    return 1 - winner


def check_complete(reader: Reader, *, duplicate: bool = False) -> list[Game]:
    """The tournament as configured, each game exactly once, the loser-deals order in every
    series (``duplicate``: each deal's second game dealt by the other seat); returns the
    counted games."""
    series = reader.series()
    assert len(series) == PAIRS, series
    pairs = Counter(frozenset((a, b)) for _, a, b, _, _ in series.values())
    assert len(pairs) == PAIRS and set(pairs.values()) == {1}, "a pair has two series"
    games = reader.games()
    counted = [g for g in games if not g.voided]
    for sid, (_, a, b, planned, status) in series.items():
        assert planned == GAMES and status == "finished", (sid, planned, status)
        numbers = [g.number for g in counted if g.series == sid]
        assert sorted(numbers) == list(range(1, GAMES + 1)), (sid, sorted(numbers))
        mine = sorted((g for g in counted if g.series == sid), key=lambda g: g.number)
        for game in mine:
            # Seats are fixed for the series: its first bot at seat 0.
            assert (game.seat0, game.seat1) == (a, b), game
            assert game.result in ("seat0", "seat1", "draw"), game
        if duplicate:
            for first, second in zip(mine[::2], mine[1::2], strict=True):
                assert second.dealer == 1 - first.dealer, (sid, first, second)
            continue
        for before, after in pairwise(mine):
            assert after.dealer == expected_dealer(before.dealer, before.result), (
                f"series {sid}: game {after.number} dealt by seat {after.dealer} after"
                f" game {before.number} dealt by {before.dealer} ended {before.result}"
            )
    # Every attempt number at most once per (series, number), one counted game each.
    attempts = Counter((g.series, g.number, g.attempt) for g in games)
    assert max(attempts.values()) == 1, attempts
    # Healthy bots under generous clocks never forfeit: the kill is not charged to a bot.
    forfeits = [g for g in counted if g.end_reason not in ("out", "draw by final answer")]
    assert [g for g in forfeits if g.end_reason != "turn limit"] == [], forfeits
    return counted


def exported(place: Place) -> dict[tuple[int, int], dict[str, Any]]:
    """The counted games of ``kryt games export`` (JSON), keyed by (series position, game)."""
    target = place.folder / f"export-{time.monotonic_ns()}.json"
    done = kryt(place.folder, "games", "export", str(target), "--db", place.url)
    assert done.returncode == 0, done.stderr
    records = json.loads(target.read_text())
    games: dict[tuple[int, int], dict[str, Any]] = {}
    for record in records:
        if record["Result"] == "*":
            continue
        key = (int(record["SeriesPosition"]), int(record["Game"]))
        assert key not in games, f"game {key} exported twice as counted"
        games[key] = record
    return games


def played(record: dict[str, Any]) -> tuple[Any, ...]:
    """What a game was: its seats, seeds, deal, dealer, moves and ending (not its ids, times
    or attempt number)."""
    return (
        record["Seat0"], record["Seat1"], record["SeriesSeed"], record["Deck"],
        record["Dealer"], record["Result"], record["Ending"],
        tuple(m["action"] for m in record["Moves"]),
    )  # fmt: skip


def board(place: Place) -> dict[str, dict[str, Any]]:
    done = kryt(place.folder, "leaderboard", "--json", "--db", place.url)
    assert done.returncode == 0, done.stderr
    return {row["bot"]: row for row in json.loads(done.stdout)["rows"]}


def recount(counted: list[Game], names: dict[int, str]) -> dict[str, tuple[int, int, int, int]]:
    """``bot: (games, wins, draws, losses)`` from the stored results."""
    tally: dict[str, list[int]] = {}
    for game in counted:
        for seat, sid in enumerate((game.seat0, game.seat1)):
            row = tally.setdefault(names[sid], [0, 0, 0, 0])
            row[0] += 1
            if game.result == "draw":
                row[2] += 1
            elif game.result == f"seat{seat}":
                row[1] += 1
            else:
                row[3] += 1
    return {bot: (r[0], r[1], r[2], r[3]) for bot, r in tally.items()}


def live_elo(counted: list[Game], names: dict[int, str]) -> dict[str, float]:
    """docs/ratings.md "Live Elo": from 1500, after each game in the order the games were
    recorded (their ids), each side moves by K (S - E), K = 32 in its first 30 games, else 16."""
    rating: dict[int, float] = {}
    played_: Counter[int] = Counter()
    for game in sorted(counted, key=lambda g: g.game_id):
        a, b = game.seat0, game.seat1
        ra, rb = rating.get(a, 1500.0), rating.get(b, 1500.0)
        expected = 1 / (1 + 10 ** ((rb - ra) / 400))
        score = {"seat0": 1.0, "seat1": 0.0, "draw": 0.5}[str(game.result)]
        ka = 32.0 if played_[a] < 30 else 16.0
        kb = 32.0 if played_[b] < 30 else 16.0
        rating[a] = ra + ka * (score - expected)
        rating[b] = rb + kb * ((1 - score) - (1 - expected))
        played_.update((a, b))
    return {names[sid]: value for sid, value in rating.items()}


def check_board(place: Place, counted: list[Game], names: dict[int, str]) -> None:
    """``kryt leaderboard --json`` against a recount of the stored games: games, W/D/L and
    the live Elo."""
    shown = board(place)
    mine = recount(counted, names)
    assert {
        bot: (r["games"], r["wins"], r["draws"], r["losses"]) for bot, r in shown.items()
    } == mine
    elo = live_elo(counted, names)
    assert {bot: r["elo"] for bot, r in shown.items()} == pytest.approx(elo, abs=1e-6)


def no_bot_left(place: Place) -> None:
    left = wait_no_processes_in(place.store, seconds=90)
    assert left == [], f"bot processes left running: {_cmdlines(left)}"


def _cmdlines(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        with suppress(OSError):
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return found


def resume_to_the_end(place: Place) -> subprocess.CompletedProcess[str]:
    """One ``kryt tournament resume 1``: it must finish the tournament at once (the killed
    holder ran on this host, so its lease is free at once: no orphan lock)."""
    done = kryt(place.folder, "tournament", "resume", "1", *place.where)
    assert done.returncode == 0, (done.returncode, done.stdout[-3000:], done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert "is being run by" not in done.stderr, done.stderr
    return done


# --- the reference: one uninterrupted run ---------------------------------------------


@dataclass(frozen=True)
class Reference:
    games: dict[tuple[int, int], tuple[Any, ...]]
    ratings: dict[str, float]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The deterministic tournament played once without a stop, in a fresh database."""
    folder = tmp_path_factory.mktemp("reference")
    place = Place(folder, str(folder / "kryt.db"))
    done = kryt(folder, *place.run_args(deterministic(folder), "--seed", SEED, "-j", "1"))
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr)
    reader = Reader(place.url)
    try:
        check_complete(reader)
    finally:
        reader.close()
    games = {key: played(record) for key, record in exported(place).items()}
    assert len(games) == PAIRS * GAMES
    ratings = {bot: float(row["rating"]) for bot, row in board(place).items()}
    return Reference(games, ratings)


def check_same_as_reference(place: Place, reference: Reference) -> None:
    """The resumed tournament is the uninterrupted one: deals, dealers, moves, results, and
    the ratings ``kryt leaderboard`` shows."""
    games = {key: played(record) for key, record in exported(place).items()}
    assert games.keys() == reference.games.keys()
    differ = sorted(key for key in games if games[key] != reference.games[key])
    assert differ == [], (
        f"games that differ from the uninterrupted run (series position, game): {differ};"
        f" first: {games[differ[0]][:5]} vs {reference.games[differ[0]][:5]}"
    )
    ratings = {bot: float(row["rating"]) for bot, row in board(place).items()}
    assert ratings.keys() == reference.ratings.keys()
    for bot, rating in ratings.items():
        assert rating == pytest.approx(reference.ratings[bot], abs=1e-6), (bot, ratings)


# --- kill -9 at several moments ---------------------------------------------------------


def _series_counts(reader: Reader) -> Counter[int]:
    return Counter(series for series, _ in reader.counted())


MOMENTS: dict[str, Callable[[Reader], bool]] = {
    # The tournament and its series are stored; nothing or almost nothing is played.
    "stored": lambda r: r.tournament_status() is not None,
    # A series with a game or more and at least three still to play (a game of the helper
    # bots takes at least a few tenths of a second: the kill lands mid-series).
    "mid_series": lambda r: any(1 <= c <= GAMES - 3 for c in _series_counts(r).values()),
    # The last two games of the tournament.
    "last_games": lambda r: len(r.counted()) >= PAIRS * GAMES - 2,
    # Every game recorded and the tournament marked finished: the run refits the ratings
    # (twice) and prints its report now.
    "refit": lambda r: r.tournament_status() == "finished",
}


def killed_at(
    place: Place,
    moment: str,
    jobs: str,
    *extra: str,
    group: bool = True,
    when: Callable[[Reader], bool] | None = None,
) -> tuple[list[tuple[int, int]], bool]:
    """Start the deterministic tournament, SIGKILL its process group (``group``, else the
    runner alone) at ``moment`` (or once ``when``); the counted games then, and whether the
    kill found the run alive."""
    reader = Reader(place.url)
    args = place.run_args(deterministic(place.folder), "--seed", SEED, "-j", jobs, *extra)
    run = start(place.folder, *args)
    ready = when or MOMENTS[moment]
    try:
        alive = wait_until(moment, lambda: ready(reader), run)
        if group:
            err = kill_group(run)
        else:
            run.kill()
            _, err = run.communicate(timeout=DEADLINE)
        if not alive or run.returncode != -signal.SIGKILL:
            # The run ended on its own before the kill: only possible at the very end.
            assert moment in ("refit", "last_games"), (run.returncode, err)
            assert run.returncode == 0, err
        return reader.counted(), run.returncode == -signal.SIGKILL
    finally:
        if run.poll() is None:
            kill_group(run)
        reader.close()


@pytest.mark.parametrize(
    ("moment", "jobs", "place"),
    [
        ("stored", "1", "sqlite"),
        ("mid_series", "1", "sqlite"),
        ("mid_series", "2", "sqlite"),
        ("last_games", "2", "sqlite"),
        pytest.param("mid_series", "2", "postgres", marks=pytest.mark.postgres),
    ],
    indirect=["place"],
)
def test_kill_9_then_resume_is_the_uninterrupted_tournament(
    place: Place, reference: Reference, moment: str, jobs: str
) -> None:
    """SIGKILL of the runner's whole process group at ``moment``, then one ``resume``: no
    bot left running, the tournament complete with each game once, the dealer order kept
    across the kill, and every game the one an uninterrupted run plays."""
    before, killed = killed_at(place, moment, jobs)
    no_bot_left(place)
    reader = Reader(place.url)
    try:
        if moment == "mid_series":
            by_series = Counter(series for series, _ in before)
            assert any(0 < c < GAMES for c in by_series.values()), by_series
        if moment != "refit" or not killed:
            assert len(before) < PAIRS * GAMES or moment in ("last_games", "refit")
        status = kryt(place.folder, "tournament", "status", "1", "--db", place.url)
        assert status.returncode == 0, status.stderr
        shown = flat(status.stdout)
        if reader.tournament_status() == "finished":
            assert "status: finished" in shown, shown
        elif "status: pending" in shown:
            # Killed before its run took the tournament over: no run has started it.
            assert before == [] and "runner: -" in shown, shown
        else:
            # The killed holder is known dead on this host: shown stopped, with the command.
            assert "status: stopped" in shown and "holder dead" in shown, shown
            assert "resume with: kryt tournament resume 1" in shown, shown
        done = resume_to_the_end(place)
        if reader.tournament_status() == "finished" and len(before) == PAIRS * GAMES:
            assert "already finished" in done.stderr or "Leaderboard" in done.stdout
        no_bot_left(place)
        counted = check_complete(reader)
        assert set(before) <= {(g.series, g.number) for g in counted}
        check_board(place, counted, reader.names())
        check_same_as_reference(place, reference)
        status = kryt(place.folder, "tournament", "status", "1", "--db", place.url)
        assert "status: finished" in flat(status.stdout), status.stdout
    finally:
        reader.close()


def test_kill_9_twice_in_a_row(tmp_path: Path, reference: Reference) -> None:
    """The run killed mid-series, its resume killed after a few more games, a second resume
    finishes: the same tournament as an uninterrupted run."""
    place = Place(tmp_path, str(tmp_path / "kryt.db"))
    first, _ = killed_at(place, "mid_series", "1")
    no_bot_left(place)
    reader = Reader(place.url)
    try:
        resumed = start(place.folder, "tournament", "resume", "1", *place.where)
        try:
            grew = wait_until(
                "two more games", lambda: len(reader.counted()) >= len(first) + 2, resumed
            )
            assert grew, resumed.communicate()
            kill_group(resumed)
            assert resumed.returncode == -signal.SIGKILL
        finally:
            if resumed.poll() is None:
                kill_group(resumed)
        second = reader.counted()
        assert set(first) <= set(second) and len(second) < PAIRS * GAMES
        assert len(second) == len(set(second))
        no_bot_left(place)
        resume_to_the_end(place)
        no_bot_left(place)
        counted = check_complete(reader)
        assert set(second) <= {(g.series, g.number) for g in counted}
        check_board(place, counted, reader.names())
        check_same_as_reference(place, reference)
    finally:
        reader.close()


def test_after_a_kill_during_the_refit_nothing_is_locked(
    tmp_path: Path, reference: Reference
) -> None:
    """Killed once the tournament is marked finished (its report and refit under way): the
    dead run's lease locks nothing: ``resume`` says it is finished, ``extend`` adds its
    games at once, and the leaderboard counts them."""
    place = Place(tmp_path, str(tmp_path / "kryt.db"))
    killed_at(place, "refit", "1")
    no_bot_left(place)
    reader = Reader(place.url)
    try:
        done = kryt(place.folder, "tournament", "resume", "1", *place.where)
        assert done.returncode == 0, done.stderr
        assert "tournament 1 is already finished" in flat(done.stderr), done.stderr
        check_same_as_reference(place, reference)
        extended = kryt(place.folder, "tournament", "extend", "1", "--games", "1", *place.where)
        assert extended.returncode == 0, (extended.stdout[-2000:], extended.stderr)
        assert len(reader.counted()) == PAIRS * GAMES + PAIRS
        counted = [g for g in reader.games() if not g.voided]
        check_board(place, counted, reader.names())
    finally:
        reader.close()


def session_members(session: int) -> list[int]:
    """Live processes of the session ``session`` (zombies left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] not in ("Z", "X") and int(fields[3]) == session:
                found.append(int(entry.name))
    return found


def test_runner_alone_killed_at_j2_and_resumed_at_once(
    tmp_path: Path, reference: Reference
) -> None:
    """``kill -9`` of the runner process alone (an OOM kill) while its referee worker plays,
    and ``resume`` at once, racing the orphaned worker: the dead run's lease is free at once
    on this host, the orphan records nothing the new run plays again, no process of the dead
    run is left, and the tournament is the uninterrupted one."""
    place = Place(tmp_path, str(tmp_path / "kryt.db"))
    reader = Reader(place.url)
    first = start(
        place.folder, *place.run_args(deterministic(place.folder), "--seed", SEED, "-j", "2")
    )
    try:
        mid = MOMENTS["mid_series"]
        assert wait_until("mid-series", lambda: mid(reader), first), first.communicate()
        first.kill()
        first.communicate(timeout=DEADLINE)
        done = resume_to_the_end(place)
        assert "Leaderboard" in done.stdout, done.stdout[-2000:]
        deadline = time.monotonic() + 90
        while session_members(first.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = session_members(first.pid)
        assert left == [], f"left by the killed runner: {_cmdlines(left)}"
        no_bot_left(place)
        counted = check_complete(reader)
        check_board(place, counted, reader.names())
        check_same_as_reference(place, reference)
    finally:
        reader.close()
        for pid in session_members(first.pid):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if first.poll() is None:
            kill_group(first)


def test_duplicate_format_killed_between_the_two_games_of_a_deal(tmp_path: Path) -> None:
    """Duplicate format (each deal twice, dealer swapped): killed once a series has played
    the first game of a deal, resumed: each deal's two games share the deck and swap the
    dealer across the kill, and the tournament is the one an uninterrupted run plays."""
    whole = Place(tmp_path / "whole", str(tmp_path / "whole" / "kryt.db"))
    whole.folder.mkdir()
    done = kryt(
        whole.folder,
        *whole.run_args(deterministic(whole.folder), "--seed", SEED, "--format", "duplicate"),
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr)
    place = Place(tmp_path / "cut", str(tmp_path / "cut" / "kryt.db"))
    place.folder.mkdir()

    def odd(reader: Reader) -> bool:
        return any(count % 2 for count in _series_counts(reader).values())

    before, _ = killed_at(place, "mid-deal", "1", "--format", "duplicate", when=odd)
    no_bot_left(place)
    resume_to_the_end(place)
    no_bot_left(place)
    reader = Reader(place.url)
    try:
        counted = check_complete(reader, duplicate=True)
        assert set(before) <= {(g.series, g.number) for g in counted}
        check_board(place, counted, reader.names())
    finally:
        reader.close()
    games = exported(place)
    for (position, number), record in games.items():
        if number % 2 == 0:
            first = games[(position, number - 1)]
            assert record["Deck"] == first["Deck"], (position, number)
            assert record["Dealer"] != first["Dealer"], (position, number)
    reference = {key: played(record) for key, record in exported(whole).items()}
    assert {key: played(record) for key, record in games.items()} == reference


# --- SIGTERM once every game is recorded ------------------------------------------------


@dataclass(frozen=True)
class Stopped:
    place: Place
    code: int
    err: str


@pytest.fixture(scope="module")
def sigterm_after_the_last_game(tmp_path_factory: pytest.TempPathFactory) -> Stopped:
    """The deterministic tournament stopped by SIGTERM (``kill PID``, systemd) once it is
    marked finished: the run is refitting the ratings and printing its report."""
    folder = tmp_path_factory.mktemp("sigterm")
    place = Place(folder, str(folder / "kryt.db"))
    reader = Reader(place.url)
    run = start(folder, *place.run_args(deterministic(folder), "--seed", SEED, "-j", "1"))
    try:
        alive = wait_until("finished", lambda: reader.tournament_status() == "finished", run)
        if alive:
            run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=DEADLINE)
    finally:
        if run.poll() is None:
            kill_group(run)
        reader.close()
    if run.returncode == 0:
        pytest.skip("the run had ended before the signal came: nothing to check")
    return Stopped(place, run.returncode, err)


def test_sigterm_after_the_last_game_keeps_a_finished_tournament(
    sigterm_after_the_last_game: Stopped,
) -> None:
    """Exit 130 with one ``interrupted by SIGTERM`` line, no traceback; the tournament stays
    finished and complete, ``resume`` finds nothing to play, the leaderboard is right."""
    stopped = sigterm_after_the_last_game
    assert stopped.code == 130, stopped.err
    assert "Traceback" not in stopped.err, stopped.err
    lines = [line for line in stopped.err.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and lines[0].startswith("interrupted by SIGTERM"), stopped.err
    place = stopped.place
    no_bot_left(place)
    done = kryt(place.folder, "tournament", "resume", "1", *place.where)
    assert done.returncode == 0 and "already finished" in done.stderr, done.stderr
    reader = Reader(place.url)
    try:
        counted = check_complete(reader)
        check_board(place, counted, reader.names())
    finally:
        reader.close()


def test_sigterm_after_the_last_game_does_not_ask_to_resume_a_finished_tournament(
    sigterm_after_the_last_game: Stopped,
) -> None:
    """The one line says the tournament is finished, not to resume it."""
    stopped = sigterm_after_the_last_game
    assert stopped.code == 130, stopped.err
    (line,) = [line for line in stopped.err.splitlines() if "interrupted" in line]
    assert "resume with" not in line and "finished" in line, line


# --- refusals ---------------------------------------------------------------------------


def test_resume_while_the_runner_plays_is_refused_and_plays_nothing_twice(
    tmp_path: Path,
) -> None:
    """A ``resume`` of a tournament a live run plays: refused in one line naming the run
    (exit 3), the run undisturbed; at the end every pair has its games exactly once. With
    the bundled ``random`` and ``greedy`` and a slow helper bot."""
    place = Place(tmp_path, str(tmp_path / "kryt.db"))
    bots = ["builtin:random", "builtin:greedy", str(HELPERS / "hash_a")]
    reader = Reader(place.url)
    run = start(place.folder, *place.run_args(bots, "-j", "1"))
    try:
        assert wait_until("a game", lambda: len(reader.counted()) >= 1, run), run.communicate()
        second = kryt(place.folder, "tournament", "resume", "1", *place.where)
        assert second.returncode == 3, (second.stdout, second.stderr)
        errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and f"pid {run.pid}" in errors[0], second.stderr
        assert "Traceback" not in second.stderr
        out, err = run.communicate(timeout=DEADLINE)
        assert run.returncode == 0, (out[-2000:], err)
    finally:
        if run.poll() is None:
            kill_group(run)
    try:
        counted = check_complete(reader)
        check_board(place, counted, reader.names())
        no_bot_left(place)
    finally:
        reader.close()


def test_resume_of_a_finished_tournament_and_of_an_unknown_one(tmp_path: Path) -> None:
    """``resume`` of a finished tournament says so and plays nothing (exit 0); of an id the
    database does not know, one ``error:`` line (exit 2) and nothing is created."""
    place = Place(tmp_path, str(tmp_path / "kryt.db"))
    done = kryt(place.folder, *place.run_args(["builtin:random", "builtin:greedy"], "-j", "1"))
    assert done.returncode == 0, done.stderr
    with closing(sqlite3.connect(place.url)) as connection:
        before = connection.execute("select count(*) from games").fetchone()
    again = kryt(place.folder, "tournament", "resume", "1", *place.where)
    assert again.returncode == 0, again.stderr
    assert flat(again.stderr).strip() == "tournament 1 is already finished", again.stderr
    unknown = kryt(place.folder, "tournament", "resume", "7", *place.where)
    assert unknown.returncode == 2, (unknown.stdout, unknown.stderr)
    assert unknown.stderr.strip() == "error: no tournament with id 7", unknown.stderr
    with closing(sqlite3.connect(place.url)) as connection:
        assert connection.execute("select count(*) from games").fetchone() == before
        assert connection.execute("select count(*) from tournaments").fetchone() == (1,)
