"""Review of the classic table (3 and 4 seats) as an organiser meets it through ``kryt``:
``tournament run`` with ``-j 1`` and ``--concurrency 2``, a stop by SIGINT and ``resume``,
``replay --verify``, ``games export``/``import``, ``leaderboard --json`` recounted from the
games table, bots that forfeit at a table, and bad table sizes.

Every expectation is computed here from rules-classic.md (and its rulings in docs/rules.md)
and from the stored rows read with ``sqlite3``. The bots of the seeded runs are deterministic
(the bundled greedy bot and three tiny folder bots), so two runs of the same seed in fresh
databases must store the very same games whatever the concurrency or an interruption.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import pytest

from arena.db import games_of_series, open_database, series_of_tournament, stored_record
from kryt.cli import main

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["--backend", "process", "--unsafe"]

TOML = 'name = "{name}"\nversion = "1.0.0"\nlanguage = "python"\nentry = "bot.py"\n'

BOT = """
import random
from typing import ClassVar

from sdk import Bot, serve


class Tiny(Bot):
    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view):
        return view.legal_actions[0]

    def act_table(self, view):
        {body}


if __name__ == "__main__":
    serve(Tiny())
"""

FIRST = "return view.legal_actions[0]"
LAST = "return view.legal_actions[-1]"
DICE = (
    "number = self.context.game_number if self.context is not None else 0\n"
    '        rng = random.Random(f"{number}/{len(view.history)}/{view.seat}")\n'
    "        return rng.choice(view.legal_actions)"
)

# Times out on every move it is asked for: it first starts a detached grandchild (its own
# session) that would sleep for minutes, and it ignores SIGTERM.
SLEEPER = """
import os
import signal
import subprocess
import sys
import time
from typing import ClassVar

from sdk import Bot, serve

PIDS = {pids!r}


class Sleeper(Bot):
    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view):
        return view.legal_actions[0]

    def act_table(self, view):
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
        )
        with open(PIDS, "a") as handle:
            handle.write(f"{{os.getpid()}} {{child.pid}}\\n")
        time.sleep(300)
        return view.legal_actions[0]


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    serve(Sleeper())
"""

# Leads a card it does not hold (an illegal action); answers legally.
CHEAT = """
from typing import ClassVar

from sdk import Bot, serve


class Cheat(Bot):
    rulesets: ClassVar[tuple[str, ...]] = ("default", "classic")

    def act(self, view):
        return view.legal_actions[0]

    def act_table(self, view):
        if view.led:
            return view.legal_actions[0]
        mine = {str(card) for card in view.hand}
        other = next(c for c in ("6C", "7C", "8C", "9C", "6D") if c not in mine)
        return "lead " + other


if __name__ == "__main__":
    serve(Cheat())
"""


def write_bot(folder: Path, name: str, source: str) -> Path:
    bot = folder / name
    bot.mkdir(parents=True, exist_ok=True)
    (bot / "bot.toml").write_text(TOML.format(name=name))
    (bot / "bot.py").write_text(source)
    return bot


def tiny_bots(folder: Path) -> list[str]:
    """The deterministic entrants: the bundled greedy bot and three folder bots."""
    bots = ["builtin:greedy"]
    for name, body in (("first", FIRST), ("last", LAST), ("dice", DICE)):
        bots.append(str(write_bot(folder, name, BOT.format(body=body))))
    return bots


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONDONTWRITEBYTECODE="1", COLUMNS="250", NO_COLOR="1", PYTHONPATH=str(ROOT))
    env.pop("KRYT_DATABASE_URL", None)
    return env


def kryt(*args: str, cwd: Path, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kryt", *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def rows(db: Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute(query, params))
    finally:
        conn.close()


def counted(db: Path) -> int:
    try:
        return int(rows(db, "select count(*) from games where voided = 0")[0][0])
    except sqlite3.Error:
        return 0


@dataclass(frozen=True)
class Run:
    db: Path
    folder: Path
    out: str
    size: int
    games: int


@dataclass(frozen=True)
class Stored:
    """One counted game as the games table holds it."""

    series: int
    number: int
    seats: tuple[int, ...]
    dealer: int
    first_mover: int
    result: str
    reason: str
    loser: int | None
    pairwise: tuple[tuple[int, int], ...]
    forfeit_seat: int | None
    forfeit_detail: str | None
    players: int


def stored_games(db: Path) -> list[Stored]:
    found = rows(
        db,
        "select series_id, number, seats, dealer, first_mover, result, end_reason, loser_seat,"
        " pairwise, forfeit_seat, forfeit_detail, players from games where voided = 0"
        " order by series_id, number",
    )
    games = []
    for row in found:
        series, number, seats, dealer, first, result, reason, loser, pairs, fseat, detail, n = row
        games.append(
            Stored(
                series,
                number,
                tuple(json.loads(seats)),
                dealer,
                first,
                result,
                reason,
                loser,
                tuple(tuple(p) for p in json.loads(pairs)),
                fseat,
                detail,
                n,
            )
        )
    return games


def by_series(db: Path) -> dict[int, list[Stored]]:
    found: dict[int, list[Stored]] = {}
    for game in stored_games(db):
        found.setdefault(game.series, []).append(game)
    return found


def names(db: Path) -> dict[int, str]:
    return {
        int(sid): str(name)
        for sid, name in rows(
            db, "select s.id, b.name from submissions s join bots b on b.id = s.bot_id"
        )
    }


def actions(db: Path) -> dict[tuple[tuple[int, ...], int], tuple[int, tuple[str, ...]]]:
    """Per (seating, game number): the dealer and the actions played, decoded from the stored
    deal and moves."""
    database = open_database(f"sqlite:///{db}", create=False)
    found: dict[tuple[tuple[int, ...], int], tuple[int, tuple[str, ...]]] = {}
    try:
        with database.read_session() as session:
            for series in series_of_tournament(1, session=session):
                assert series.id is not None
                for game in games_of_series(series.id, session=session):
                    record = stored_record(game)
                    key = (tuple(series.seat_ids), int(game.number))
                    found[key] = (record.dealer, tuple(str(m.action) for m in record.moves))
    finally:
        database.close()
    return found


def recount(db: Path) -> dict[str, tuple[int, int, int]]:
    """Each bot's (wins, draws, losses) of pairwise results, by rules.md: a listed pair is a
    win and a loss; two seats that both won a pair have no result between themselves; every
    other pair of seats draws."""
    label = names(db)
    tally: dict[str, list[int]] = {}
    for game in stored_games(db):
        winners = {a for a, _ in game.pairwise}
        for i, j in combinations(range(game.players), 2):
            a, b = label[game.seats[i]], label[game.seats[j]]
            tally.setdefault(a, [0, 0, 0])
            tally.setdefault(b, [0, 0, 0])
            if (i, j) in game.pairwise:
                tally[a][0] += 1
                tally[b][2] += 1
            elif (j, i) in game.pairwise:
                tally[b][0] += 1
                tally[a][2] += 1
            elif not (i in winners and j in winners):
                tally[a][1] += 1
                tally[b][1] += 1
    return {bot: (w, d, lost) for bot, (w, d, lost) in tally.items()}


def board(db: Path, size: int) -> dict[str, Any]:
    done = kryt(
        "leaderboard", "--json", "--ruleset", "classic", "--table-size", str(size),
        "-d", str(db), cwd=db.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def bot_cwds(store: Path) -> list[str]:
    """Live processes whose working directory lies in the run's submission store (every
    process-backend bot runs in its unpacked submission)."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if cwd.startswith(str(store.resolve())) and state not in ("Z", "X"):
            left.append(f"{entry.name} {cwd}")
    return left


def bots_left(store: Path, seconds: float = 30.0) -> list[str]:
    """:func:`bot_cwds` once none is left, or after ``seconds`` (a busy machine may take a
    moment to reap what the run killed as it ended)."""
    deadline = time.monotonic() + seconds
    while (left := bot_cwds(store)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def run_tournament(folder: Path, db: Path, size: int, games: int, *extra: str) -> Run:
    bots = tiny_bots(folder)
    done = kryt(
        "tournament", "run", *bots, "--ruleset", "classic", "--table-size", str(size),
        "-n", str(games), "--seed", "2", "-d", str(db), "--store", str(folder / "store"),
        *extra, *COMMON, cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return Run(db, folder, done.stdout + done.stderr, size, games)


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def three_j1(tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("three-j1")
    return run_tournament(folder, folder / "t.db", 3, 6, "-j", "1")


@pytest.fixture(scope="module")
def three_j2(tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("three-j2")
    return run_tournament(folder, folder / "t.db", 3, 6, "--concurrency", "2")


@pytest.fixture(scope="module")
def four_j1(tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("four-j1")
    return run_tournament(folder, folder / "t.db", 4, 20, "-j", "1")


@dataclass(frozen=True)
class Stopped:
    run: Run
    code: int
    out: str
    at_stop: int
    left_after_stop: list[str]
    resumed: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def four_stopped(tmp_path_factory: pytest.TempPathFactory) -> Stopped:
    """The same 4-seat tournament with --concurrency 2, stopped by SIGINT to its process
    group (a Ctrl-C) after a few games, then resumed."""
    folder = tmp_path_factory.mktemp("four-stop")
    db = folder / "t.db"
    bots = tiny_bots(folder)
    args = [
        "tournament", "run", *bots, "--ruleset", "classic", "--table-size", "4",
        "-n", "20", "--seed", "2", "--concurrency", "2", "-d", str(db),
        "--store", str(folder / "store"), *COMMON,
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "kryt", *args],
        cwd=folder,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and counted(db) < 6 and process.poll() is None:
            time.sleep(0.05)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        out, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    left = bots_left(folder / "store")
    at_stop = counted(db)
    resumed = kryt(
        "tournament", "resume", "1", "-d", str(db), "--store", str(folder / "store"),
        cwd=folder,
    )  # fmt: skip
    return Stopped(Run(db, folder, out, 4, 20), process.returncode, out, at_stop, left, resumed)


# --------------------------------------------------------------------- seatings and games


@pytest.mark.parametrize("which", ["three_j1", "three_j2", "four_j1"])
def test_every_set_plays_every_clockwise_order_once_and_each_game_is_recorded_once(
    which: str, request: pytest.FixtureRequest
) -> None:
    """rules-classic.md: "For a table size `n`, every set of `n` entrants plays, and each set
    plays one series for every distinct clockwise seating order (`(n-1)!` orders ...)"; a
    series is "a fixed number of games at one table with fixed seats"."""
    run: Run = request.getfixturevalue(which)
    series = rows(run.db, "select id, seats, games_planned, status from series")
    seatings = [tuple(json.loads(seats)) for _, seats, _, _ in series]
    ids = sorted(names(run.db))
    assert len(ids) == 4
    orders = 2 if run.size == 3 else 6
    sets = Counter(frozenset(s) for s in seatings)
    assert sets == {frozenset(c): orders for c in combinations(ids, run.size)}
    # distinct clockwise orders: no seating is a rotation of another
    canonical = set()
    for seats in seatings:
        start = seats.index(min(seats))
        canonical.add(seats[start:] + seats[:start])
    assert len(canonical) == len(seatings)
    assert all(planned == run.games and status == "finished" for _, _, planned, status in series)
    per_game = rows(
        run.db,
        "select series_id, number, count(*) from games where voided = 0 group by series_id, number",
    )
    assert sorted((s, n) for s, n, _ in per_game) == sorted(
        (s, n) for s, _, _, _ in series for n in range(1, run.games + 1)
    )
    assert all(c == 1 for _, _, c in per_game)
    table = dict(zip([s for s, _, _, _ in series], seatings, strict=True))
    for game in stored_games(run.db):
        assert game.players == run.size and game.seats == table[game.series]


@pytest.mark.parametrize("which", ["three_j1", "three_j2", "four_j1"])
def test_the_seat_after_the_dealer_leads_and_the_loser_deals_next(
    which: str, request: pytest.FixtureRequest
) -> None:
    """rules-classic.md: "The seat after the dealer leads first"; "afterwards the **loser
    deals**; after a draw the same dealer deals again"; rules.md: "A game ended by the turn
    limit has no loser: the same dealer deals again"."""
    run: Run = request.getfixturevalue(which)
    no_loser_followed = 0
    for games in by_series(run.db).values():
        for game in games:
            assert game.first_mover == (game.dealer + 1) % run.size
            assert 0 <= game.dealer < run.size
        for before, after in pairwise(games):
            assert after.dealer == (before.dealer if before.loser is None else before.loser)
            no_loser_followed += before.loser is None
    if which == "four_j1":  # seed 2 has turn-limit games at the table of four
        assert no_loser_followed >= 1


@pytest.mark.parametrize("which", ["three_j1", "four_j1"])
def test_results_and_pairwise_records_follow_the_endings(
    which: str, request: pytest.FixtureRequest
) -> None:
    """rules-classic.md: "Exactly one player holds cards: **he loses**; every other player
    wins"; "each winner beats the loser; winners have no result between themselves"; a draw
    gives no pairs; at the turn limit nobody is the loser."""
    run: Run = request.getfixturevalue(which)
    endings: Counter[str] = Counter()
    for game in stored_games(run.db):
        endings[game.reason] += 1
        if game.reason == "last holder":
            assert game.loser is not None
            assert sorted(game.pairwise) == [
                (s, game.loser) for s in range(run.size) if s != game.loser
            ]
            assert game.result == "table"
        elif game.reason == "turn limit":
            assert game.loser is None
            out = {a for a, _ in game.pairwise}
            holding = {b for _, b in game.pairwise}
            assert not out & holding
            assert sorted(game.pairwise) == sorted((a, b) for a in out for b in holding)
        else:
            assert game.reason == "all out" and game.loser is None and game.pairwise == ()
            assert game.result == "draw"
        assert game.forfeit_seat is None
    assert endings["last holder"] > 0


def test_one_and_two_series_at_a_time_store_the_same_games(three_j1: Run, three_j2: Run) -> None:
    """configuration.md: "the same `--seed` with the same bots in the same order gives the
    same deals ... **in the same database**" (fresh databases give the same submission ids
    here); the bots are deterministic, so ``-j 1`` and ``--concurrency 2`` must store the
    same games: deals, dealers and every action."""
    seeds_1 = rows(three_j1.db, "select seats, seed from series order by seats")
    seeds_2 = rows(three_j2.db, "select seats, seed from series order by seats")
    assert seeds_1 == seeds_2
    one, two = actions(three_j1.db), actions(three_j2.db)
    assert len(one) == 8 * 6
    assert one == two


# ----------------------------------------------------------------------- SIGINT and resume


def test_a_ctrl_c_stops_the_table_run_with_130_and_the_resume_command(
    four_stopped: Stopped,
) -> None:
    """configuration.md: exit 130 "interrupted by Ctrl-C ... one `interrupted` line; for
    `run`/`resume`/`extend` the line says what was kept, the games played so far are saved
    and the resume command is printed"."""
    assert four_stopped.code == 130, four_stopped.out
    lines = [line for line in four_stopped.out.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1, four_stopped.out
    assert "kryt tournament resume 1" in lines[0]
    assert "Traceback" not in four_stopped.out
    assert 6 <= four_stopped.at_stop < 120


def test_no_bot_outlives_the_ctrl_c(four_stopped: Stopped) -> None:
    assert four_stopped.left_after_stop == []


def test_resume_after_ctrl_c_plays_exactly_the_missing_games_as_an_unbroken_run(
    four_stopped: Stopped, four_j1: Run
) -> None:
    """README: "an interrupted run loses nothing and `resume` plays exactly the missing
    games"; rules-classic.md: the loser deals next, across the stop too. The interrupted and
    resumed run stores the very games of the run nobody stopped."""
    assert four_stopped.resumed.returncode == 0, (
        four_stopped.resumed.stdout + four_stopped.resumed.stderr
    )
    per_game = rows(
        four_stopped.run.db,
        "select series_id, number, count(*) from games where voided = 0 group by series_id, number",
    )
    assert len(per_game) == 120 and all(c == 1 for _, _, c in per_game)
    assert actions(four_stopped.run.db) == actions(four_j1.db)
    for games in by_series(four_stopped.run.db).values():
        for before, after in pairwise(games):
            assert after.dealer == (before.dealer if before.loser is None else before.loser)
    status = kryt(
        "tournament", "status", "-d", str(four_stopped.run.db), cwd=four_stopped.run.folder
    )
    assert "120/120" in status.stdout and "finished" in status.stdout, status.stdout


# ------------------------------------------------------------------------ replay, boards


def test_table_games_replay_and_verify_including_the_turn_limit_ones(four_j1: Run) -> None:
    """games-format.md: "`kryt replay ID --verify` replays table games too"."""
    limit = [i for (i,) in rows(four_j1.db, "select id from games where end_reason = 'turn limit'")]
    other = [i for (i,) in rows(four_j1.db, "select id from games where end_reason != 'turn limit'"
                                " order by id limit 3")]  # fmt: skip
    assert limit
    for game_id in [*limit[:3], *other]:
        done = kryt("replay", str(game_id), "--verify", "-d", str(four_j1.db), cwd=four_j1.folder)
        assert done.returncode == 0, done.stdout + done.stderr
        text = re.sub(r"\s+", " ", done.stdout)
        assert "verified: the rules engine reproduces the stored result" in text


@pytest.mark.parametrize("which", ["three_j1", "four_j1", "four_stopped"])
def test_the_table_board_is_the_recount_of_the_games_table(
    which: str, request: pytest.FixtureRequest
) -> None:
    """leaderboard.md: "On a classic table's board ... Games, W/D/L ... count **pairwise
    results**"; "a draw is half a point"; `board.games` counts the board's counted games."""
    fixture = request.getfixturevalue(which)
    run: Run = fixture.run if isinstance(fixture, Stopped) else fixture
    document = board(run.db, run.size)
    assert document["board"] == {
        "ruleset": "classic",
        "table_size": run.size,
        "games": counted(run.db),
    }
    expected = recount(run.db)
    got = {row["bot"]: (row["wins"], row["draws"], row["losses"]) for row in document["rows"]}
    assert got == expected
    for row in document["rows"]:
        w, d, lost = expected[row["bot"]]
        assert row["games"] == w + d + lost
        assert row["score"] == pytest.approx((w + d / 2) / (w + d + lost))
        assert row["forfeits"] == {}


def test_table_games_cannot_be_exported_and_say_so_in_one_line(three_j1: Run) -> None:
    """games-format.md: "`kryt games export` leaves classic-table games out and says how
    many ..., and refuses in one line when only table games were chosen"."""
    target = three_j1.folder / "out.kgn"
    done = kryt("games", "export", str(target), "-d", str(three_j1.db), cwd=three_j1.folder)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "48" in errors[0] and "classic" in errors[0], done.stderr
    assert not target.exists()


def test_export_then_import_keeps_the_two_player_board_beside_tables(
    three_j1: Run, tmp_path: Path
) -> None:
    """README: "The game file format carries the two-player game only: games of the classic
    table stay in their database"; games-format.md: export "leaves classic-table games out and
    says how many". The two-player board of a fresh database the file is imported into is the
    board of the database it came from."""
    mixed = tmp_path / "mixed.db"
    mixed.write_bytes(three_j1.db.read_bytes())
    bots = tiny_bots(tmp_path)
    done = kryt(
        "tournament", "run", bots[0], bots[1], bots[3], "-n", "2", "--seed", "4",
        "-d", str(mixed), "--store", str(tmp_path / "store"), *COMMON, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    target = tmp_path / "games.kgn"
    exported = kryt("games", "export", str(target), "-d", str(mixed), cwd=tmp_path)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "48" in exported.stdout + exported.stderr
    fresh = tmp_path / "fresh.db"
    imported = kryt("games", "import", str(target), "-d", str(fresh), cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr

    def two_player(db: Path) -> dict[str, tuple[int, int, int, int]]:
        out = kryt("leaderboard", "--json", "--ruleset", "default", "--table-size", "2",
                   "-d", str(db), cwd=tmp_path)  # fmt: skip
        assert out.returncode == 0, out.stderr
        return {
            r["bot"]: (r["games"], r["wins"], r["draws"], r["losses"])
            for r in json.loads(out.stdout)["rows"]
        }

    before = two_player(mixed)
    assert sum(g for g, _, _, _ in before.values()) == 2 * 3 * 2
    assert two_player(fresh) == before
    assert rows(fresh, "select count(*) from games where ruleset = 'classic'") == [(0,)]


# ------------------------------------------------------------------------------ forfeits


@dataclass(frozen=True)
class Hostile:
    run: Run
    pids: Path
    left: list[str]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    """A table of four: random, greedy, a bot that never answers (and leaves a detached
    grandchild, ignoring SIGTERM) and one that leads cards it does not hold."""
    folder = tmp_path_factory.mktemp("hostile")
    pids = folder / "pids.txt"
    sleeper = write_bot(folder, "sleeper", SLEEPER.format(pids=str(pids)))
    cheat = write_bot(folder, "cheat", CHEAT)
    db = folder / "h.db"
    done = kryt(
        "tournament", "run", "builtin:random", "builtin:greedy", str(sleeper), str(cheat),
        "--ruleset", "classic", "--table-size", "4", "-n", "2", "--seed", "3",
        "--concurrency", "2", "--move-seconds", "1", "--bank-seconds", "1",
        "-d", str(db), "--store", str(folder / "store"), *COMMON, cwd=folder,
    )  # fmt: skip
    left = bots_left(folder / "store")
    assert done.returncode == 0, done.stdout + done.stderr
    return Hostile(Run(db, folder, done.stdout + done.stderr, 4, 2), pids, left)


def test_a_forfeit_at_a_table_loses_to_every_other_seat_with_its_reason(hostile: Hostile) -> None:
    """rules-classic.md: "A forfeit makes the offender the loser (he deals next) and ends that
    game at once; the others win it." README: a forfeit is "recorded with the reason and its
    input"."""
    label = names(hostile.run.db)
    reason_of = {"sleeper": "timeout", "cheat": "illegal action"}
    games = stored_games(hostile.run.db)
    assert len(games) == 12
    seen: Counter[str] = Counter()
    for game in games:
        assert game.forfeit_seat is not None and game.loser == game.forfeit_seat
        offender = label[game.seats[game.forfeit_seat]]
        assert offender in reason_of and game.reason == reason_of[offender]
        seen[offender] += 1
        assert sorted(game.pairwise) == [(s, game.loser) for s in range(4) if s != game.loser]
        # the other hostile bot sat at the table too and wins the game
        other = next(s for s in range(4) if label[game.seats[s]] in reason_of and s != game.loser)
        assert (other, game.loser) in game.pairwise
        assert game.forfeit_detail
    assert set(seen) == {"sleeper", "cheat"}
    inputs = rows(
        hostile.run.db, "select forfeit_input from games where end_reason = 'illegal action'"
    )
    assert all(str(sent).startswith("lead ") for (sent,) in inputs)
    for series in by_series(hostile.run.db).values():
        for before, after in pairwise(series):
            assert after.dealer == before.forfeit_seat


def test_the_board_counts_table_forfeits_by_reason_and_pairwise(hostile: Hostile) -> None:
    """leaderboard.md: "Forfeits | games lost by forfeit, by reason"; W/D/L count pairwise
    results."""
    label = names(hostile.run.db)
    document = board(hostile.run.db, 4)
    table = {row["bot"]: row for row in document["rows"]}
    forfeits: dict[str, Counter[str]] = {bot: Counter() for bot in table}
    for game in stored_games(hostile.run.db):
        assert game.forfeit_seat is not None
        forfeits[label[game.seats[game.forfeit_seat]]][game.reason] += 1
    for bot, row in table.items():
        assert row["forfeits"] == dict(forfeits[bot])
    got = {bot: (row["wins"], row["draws"], row["losses"]) for bot, row in table.items()}
    assert got == recount(hostile.run.db)


def test_no_bot_process_or_detached_child_outlives_a_run_with_forfeits(hostile: Hostile) -> None:
    """sandbox.md / README: a bot that times out loses by forfeit; the run does not crash and
    leaves nothing running (the sleeper ignores SIGTERM and left a detached grandchild)."""
    assert hostile.left == []
    spawned = [line.split() for line in hostile.pids.read_text().splitlines()]
    assert len(spawned) >= 1
    pids = [pid for pair in spawned for pid in map(int, pair)]
    deadline = time.monotonic() + 30
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pid for pid in pids if alive(pid)] == []


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("KRYT_DATABASE_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    yield


def refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str]:
    db = tmp_path / "bad.db"
    code = main(
        ["tournament", "run", *args, "-d", str(db), "--store", str(tmp_path / "s"), *COMMON]
    )
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err + captured.out
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert not db.exists() or rows(db, "select count(*) from tournaments") == [(0,)]
    return code, lines[0]


@pytest.mark.parametrize("size", ["1", "5", "0", "-1", "x", "2x"])
def test_a_table_size_out_of_range_is_one_error_line_and_exit_2(
    size: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet_env: None
) -> None:
    """configuration.md: `table_size` 2–4 (classic); "A bad setting is one `error:` line
    (naming the setting and the value, then a hint line) and exit code 2; no tournament is
    created"."""
    code, line = refused(
        capsys, tmp_path, "builtin:random", "builtin:greedy", "builtin:mc",
        "--ruleset", "classic", f"--table-size={size}",
    )  # fmt: skip
    assert code == 2
    assert "table" in line.lower() and size in line, line


def test_a_table_size_of_three_with_the_two_player_game_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet_env: None
) -> None:
    """configuration.md: `table_size` "2 (default); 2–4 (classic)"."""
    code, line = refused(
        capsys, tmp_path, "builtin:random", "builtin:greedy", "builtin:mc", "--table-size", "3"
    )
    assert code == 2 and "3" in line and "default" in line, line


@pytest.mark.parametrize(("size", "bots"), [(3, 2), (4, 3)])
def test_fewer_bots_than_seats_is_refused(
    size: int, bots: int, capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet_env: None
) -> None:
    entrants = ["builtin:random", "builtin:greedy", "builtin:mc"][:bots]
    code, line = refused(
        capsys, tmp_path, *entrants, "--ruleset", "classic", "--table-size", str(size)
    )
    assert code == 2 and str(size) in line and str(bots) in line, line


@pytest.mark.parametrize("value", ["5", "true", '"3"', "3.0"])
def test_a_bad_table_size_in_the_config_file_is_refused(
    value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet_env: None
) -> None:
    """configuration.md: "its type (a bool is not a number ...)"."""
    config = tmp_path / "t.toml"
    config.write_text(
        'bots = ["builtin:random", "builtin:greedy", "builtin:mc"]\n'
        f'ruleset = "classic"\ntable_size = {value}\n'
    )
    code, line = refused(capsys, tmp_path, "--config", str(config))
    assert code == 2 and "table" in line.lower(), line


@pytest.mark.parametrize("size", ["5", "1"])
def test_the_leaderboard_refuses_a_size_the_classic_table_cannot_seat(
    size: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet_env: None, three_j1: Run
) -> None:
    """arena.md: "`kryt leaderboard --ruleset/--table-size` makes the same check (exit 2)"."""
    code = main(
        ["leaderboard", "--ruleset", "classic", "--table-size", size, "-d", str(three_j1.db)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err


def test_the_table_size_of_a_stored_tournament_cannot_be_set(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, quiet_env: None, three_j1: Run
) -> None:
    """configuration.md, `tournament set`: "`ruleset`, `table_size` ... made the series and
    cannot change"."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(three_j1.db.read_bytes())
    before = rows(copy, "select config from tournaments")
    code = main(["tournament", "set", "1", "table_size=4", "-d", str(copy)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    assert rows(copy, "select config from tournaments") == before


def test_extend_adds_one_series_per_seating_and_its_dealers_follow_the_losers(
    three_j1: Run, tmp_path: Path
) -> None:
    """configuration.md, `tournament extend ID --games N`: "adds N games per pair (per seating
    at tables) ...: one new series per pairing it already has"; the loser deals next in each
    new series; the board covers every game."""
    copy = tmp_path / "copy.db"
    copy.write_bytes(three_j1.db.read_bytes())
    before = rows(copy, "select seats from series order by position")
    done = kryt(
        "tournament", "extend", "1", "--games", "2", "-d", str(copy),
        "--store", str(three_j1.folder / "store"), cwd=three_j1.folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    added = rows(copy, "select id, seats, games_planned from series where id > 8 order by position")
    assert sorted(s for _, s, _ in added) == sorted(s for (s,) in before)
    assert all(planned == 2 for _, _, planned in added)
    series = by_series(copy)
    for series_id, _, _ in added:
        games = series[series_id]
        assert [g.number for g in games] == [1, 2]
        assert all(g.first_mover == (g.dealer + 1) % 3 for g in games)
        first, second = games
        assert second.dealer == (first.dealer if first.loser is None else first.loser)
    assert board(copy, 3)["board"]["games"] == 48 + 16
