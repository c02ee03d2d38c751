"""An outside review of the ladder on a Dask cluster (``kryt arena serve --executor dask``,
docs/arena.md "On a Dask cluster" and "Restarts").

Each scenario starts a real cluster on loopback (``dask scheduler`` and ``dask worker``
processes in sessions of their own, so a worker or the scheduler can be SIGKILLed like a
lost machine) and real servers (``kryt arena serve`` subprocesses over one SQLite file),
then checks the games table, read directly, against what happened and what the server
reports:

* a worker SIGKILLed mid-series: the series is finished on the other worker, every game
  exactly once; a version uploaded during the round joins the ladder;
* the leaderboard (JSON and HTML) and each author's logs agree with a recount of the games;
* SIGTERM / SIGINT mid-round and a restart: the series resume, nothing lost or doubled, no
  bot process left behind;
* the scheduler SIGKILLed mid-series: the server keeps answering, stops cleanly, and the
  series is resumed later; and it must not keep holding a series it can no longer play.

Every wait has a generous deadline and fails with the servers' and the cluster's logs.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.scaling.conftest import (
    START_TIMEOUT,
    LoopbackCluster,
    _stop,
    start_cluster,
    stop_cluster,
)
from tests.service.conftest import Arena, kryt, make_bot, submit

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

T = TypeVar("T")

WAIT_S = 240.0
"""Deadline of every wait for the ladder to make progress (a busy 2-core machine)."""

STOP_S = 120.0
"""Deadline for a server to exit after SIGINT/SIGTERM."""

GAMES = 6
"""Games per ladder series."""

CLEAN_EXITS = (0, -signal.SIGTERM, 128 + signal.SIGINT)
"""Exit codes of a server stopped by a signal after its shutdown ran."""

SLOW_BOT = """
import random
import sys
import time

from referee.rules import Action, View
from sdk import Bot, serve


class Slow(Bot):
    def __init__(self) -> None:
        self.rng = random.Random()
        self.moves = 0

    def act(self, view: View) -> Action:
        self.moves += 1
        print(f"slow move {self.moves}", file=sys.stderr, flush=True)
        time.sleep(0.01)
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(Slow())
"""


# ---------------------------------------------------------------------------- cluster


def kill_scheduler(cluster: LoopbackCluster) -> None:
    """SIGKILL the scheduler (its whole session), as a lost machine."""
    _stop(cluster.scheduler)


def processing(cluster: LoopbackCluster) -> dict[str, list[str]]:
    """Worker name -> keys of the tasks it is running now."""
    import distributed

    client_class: Any = distributed.Client
    with client_class(cluster.address, timeout=START_TIMEOUT) as client:
        names = {
            address: str(info.get("name"))
            for address, info in client.scheduler_info()["workers"].items()
        }
        return {names.get(a, a): [str(k) for k in keys] for a, keys in client.processing().items()}


# ---------------------------------------------------------------------------- servers


@dataclass
class DaskArena(Arena):
    """A ``kryt arena serve --executor dask`` on a scheduler, with options of the test's."""

    scheduler: str = ""
    options: list[str] = field(default_factory=list)

    def serve_options(self) -> list[str]:
        return [
            "--games-per-series",
            str(GAMES),
            "--executor",
            "dask",
            "--scheduler",
            self.scheduler,
            *self.options,
        ]

    def signal_stop(self, signum: int) -> int:
        """Send ``signum`` and wait (``STOP_S``) for the exit; its code (uvicorn re-raises
        the signal once it has shut down: -SIGTERM, or 130 for SIGINT's KeyboardInterrupt)."""
        assert self.process is not None
        self.process.send_signal(signum)
        try:
            return self.process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
            raise AssertionError(
                f"the server did not exit within {STOP_S:g} s of signal {signum}:\n"
                + self.log_text()
            ) from None

    def log_text(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-6000:]}" for p in self.log)


def make_arena(
    workdir: Path,
    database: str,
    scheduler: str,
    *options: str,
    tokens: dict[str, str] | None = None,
) -> DaskArena:
    """A server (not started) over ``database``; without ``tokens``, authors alice, bob and
    carol are created first."""
    if tokens is None:
        tokens = {}
        for author in ("alice", "bob", "carol"):
            done = kryt("arena", "author", "add", author, "--database", database)
            assert done.returncode == 0, done.stderr
            tokens[author] = done.stdout.strip().splitlines()[-1]
    env = {
        "KRYT_ARENA_SANDBOX_BACKEND": "process",
        "KRYT_ARENA_SANDBOX_ALLOW_UNSAFE": "1",
        "KRYT_ARENA_LADDER_LEASE_SECONDS": "3",
        "KRYT_ARENA_LADDER_POLL_SECONDS": "0.2",
        "KRYT_ARENA_WRITES_PER_MINUTE": "100",
        "KRYT_ARENA_MAX_UPLOAD_BYTES": str(256 * 1024),
        "KRYT_ARENA_AUTH_FAILURES_PER_MINUTE": "1000",
    }
    runtime = Path(tempfile.mkdtemp(prefix="krt-"))
    return DaskArena(
        workdir, database, tokens, env, runtime, scheduler=scheduler, options=list(options)
    )


def finish(*arenas: DaskArena) -> None:
    for arena in arenas:
        if arena.process is not None and arena.process.poll() is None:
            arena.process.kill()
            arena.process.wait(30)
        shutil.rmtree(arena.runtime, ignore_errors=True)


# ---------------------------------------------------------------------------- checks


def until(what: str, check: Callable[[], T | None], diagnose: Callable[[], str]) -> T:
    """``check()`` once it is truthy; after ``WAIT_S`` a failure with ``diagnose()``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out ({WAIT_S:g} s) waiting for {what}\n{diagnose()}")
        time.sleep(0.5)


def diagnosis(arenas: list[DaskArena], clusters: list[LoopbackCluster]) -> Callable[[], str]:
    def text() -> str:
        rows = ""
        if arenas:
            rows = repr(
                arenas[0].query(
                    "select s.id, s.status, s.games_planned, l.claimed_by, l.lease_until, "
                    "(select count(*) from games g where g.series_id = s.id and not g.voided) "
                    "from series s join ladder_series l on l.series_id = s.id"
                )
            )
        return "\n".join(
            [
                f"ladder series (id, status, planned, claimed_by, lease, counted): {rows}",
                *(a.log_text() for a in arenas),
                *(c.log_text() for c in clusters),
            ]
        )

    return text


def running_series_with_games_to_play(arena: DaskArena, *, to_play: int) -> int | None:
    """A running ladder series with at least one game recorded and ``to_play`` to go."""
    rows = arena.query(
        "select s.id, s.games_planned, count(g.id) from ladder_series l "
        "join series s on s.id = l.series_id "
        "left join games g on g.series_id = s.id and not g.voided "
        "where s.status = 'running' group by s.id, s.games_planned order by s.id"
    )
    for series_id, planned, played in rows:
        if 1 <= played <= planned - to_play:
            return int(series_id)
    return None


def counted_numbers(arena: Arena, series_id: int) -> list[int]:
    return [
        int(n)
        for (n,) in arena.query(
            "select number from games where series_id = :id and not voided order by number",
            id=series_id,
        )
    ]


def assert_every_game_once(arena: Arena) -> None:
    """No (series, number) counted twice, every finished ladder series complete (1..N), and
    exactly one log per seat of every recorded game."""
    doubled = arena.query(
        "select series_id, number, count(*) from games where not voided "
        "group by series_id, number having count(*) > 1"
    )
    assert doubled == [], f"games counted twice: {doubled}"
    for series_id, planned in arena.query(
        "select s.id, s.games_planned from series s join ladder_series l "
        "on l.series_id = s.id where s.status = 'finished'"
    ):
        assert counted_numbers(arena, series_id) == list(range(1, planned + 1)), series_id
    logs = arena.query(
        "select g.id, count(l.id), count(distinct l.seat) from games g "
        "left join game_logs l on l.game_id = g.id group by g.id"
    )
    bad = [row for row in logs if row[1] != 2 or row[2] != 2]
    assert bad == [], f"games without exactly one log per seat: {bad}"


def bot_processes(arena: Arena) -> list[str]:
    """Command lines of live processes running a bot from this server's store."""
    store = str(arena.workdir / "store")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if store in cmdline and state not in ("Z", "X"):
            found.append(f"{entry.name}: {cmdline}")
    return found


def unfinished_leases(arena: Arena) -> list[tuple[Any, ...]]:
    return arena.query(
        "select s.id, l.claimed_by from ladder_series l join series s on s.id = l.series_id "
        "where s.status in ('pending', 'running') and l.claimed_by is not null"
    )


def upload_slow(arena: Arena, author: str, tmp: Path, name: str) -> int:
    checked = submit(arena, author, make_bot(tmp / name, name, code=SLOW_BOT))
    assert checked["status"] == "active", checked
    return int(checked["submission_id"])


# ---------------------------------------------------------------------------- a worker lost


@dataclass
class Played:
    arena: DaskArena
    cut: int
    killed: str
    gamma: int
    budget: int


@pytest.fixture(scope="module")
def worker_lost(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    """alpha and beta on the ladder; mid-series the worker playing it is SIGKILLed (its
    nanny and bots with it) and, during the same round, carol uploads gamma; the ladder then
    plays on to its budget on the remaining worker."""
    tmp = tmp_path_factory.mktemp("worker-lost")
    cluster = start_cluster(tmp / "cluster")
    budget = 4 * GAMES
    arena = make_arena(
        tmp,
        f"sqlite:///{tmp / 'arena.db'}",
        cluster.address,
        "--concurrency",
        "1",
        "--budget",
        str(budget),
    )
    why = diagnosis([arena], [cluster])
    try:
        arena.start()
        upload_slow(arena, "alice", tmp, "alpha")
        upload_slow(arena, "bob", tmp, "beta")
        cut = until(
            "a ladder series with games to play",
            lambda: running_series_with_games_to_play(arena, to_play=3),
            why,
        )
        running = processing(cluster)
        killed = next((w for w, keys in running.items() if keys), "")
        assert killed, f"no worker runs a task while series {cut} plays: {running}\n{why()}"
        assert any(f"ladder-series-{cut}-" in k for k in running[killed]), running
        before = len(counted_numbers(arena, cut))
        cluster.kill_worker(killed)
        assert len(counted_numbers(arena, cut)) < GAMES, "the series ended before the kill"
        print(f"\nkilled worker {killed} with series {cut} at {before} game(s)")
        gamma = upload_slow(arena, "carol", tmp, "gamma")

        def quiet() -> bool:
            done = arena.query(
                "select count(*) from games g join ladder_series l on l.series_id = g.series_id"
                " where not g.voided"
            )[0][0]
            gamma_done = arena.query(
                "select count(*) from series s join ladder_series l on l.series_id = s.id "
                "where s.status = 'finished' and :g in (s.submission_a_id, s.submission_b_id)",
                g=gamma,
            )[0][0]
            status = arena.query("select status from series where id = :id", id=cut)[0][0]
            unfinished = httpx.get(arena.url + "/api/ladder", timeout=30).json()
            return (
                status == "finished"
                and gamma_done > 0
                and done >= budget
                and not unfinished["unfinished_series"]
            )

        until("the ladder to finish its budget after the worker loss", quiet, why)
        yield Played(arena, cut, killed, gamma, budget)
    finally:
        try:
            arena.stop()
        finally:
            finish(arena)
            stop_cluster(cluster)


def test_the_series_of_a_killed_worker_finishes_with_every_game_once(
    worker_lost: Played,
) -> None:
    """docs/arena.md: "A worker lost mid-series: the scheduler retries the task and the
    series resumes from the database" (and the unique keys: no game recorded twice)."""
    arena = worker_lost.arena
    assert counted_numbers(arena, worker_lost.cut) == list(range(1, GAMES + 1))
    assert_every_game_once(arena)
    # The series was played to its end by the server holding it, which then released it.
    lease = arena.query(
        "select claimed_by from ladder_series where series_id = :id", id=worker_lost.cut
    )
    assert lease == [(None,)]


def test_a_version_uploaded_mid_round_joins_and_the_budget_holds(worker_lost: Played) -> None:
    arena = worker_lost.arena
    ladder = httpx.get(arena.url + "/api/ladder", timeout=30).json()
    assert worker_lost.gamma in ladder["entrants"]
    assert len(ladder["entrants"]) == 3
    counted = arena.query(
        "select count(*) from games g join ladder_series l on l.series_id = g.series_id "
        "where not g.voided"
    )[0][0]
    # docs: up to games_per_series x concurrency - 1 over the budget.
    assert worker_lost.budget <= counted <= worker_lost.budget + GAMES - 1
    pairs = arena.query(
        "select distinct s.submission_a_id, s.submission_b_id from series s "
        "join ladder_series l on l.series_id = s.id where s.status = 'finished'"
    )
    assert any(worker_lost.gamma in pair for pair in pairs), pairs


def _recount(arena: Arena) -> dict[int, tuple[int, int, int, int]]:
    """submission id -> (games, wins, draws, losses), from the games table directly."""
    tally: dict[int, list[int]] = {}
    for seat0, seat1, result in arena.query(
        "select seat0_submission_id, seat1_submission_id, result from games where not voided"
    ):
        for seat, sid in enumerate((seat0, seat1)):
            row = tally.setdefault(int(sid), [0, 0, 0, 0])
            row[0] += 1
            if result == "draw":
                row[2] += 1
            elif result == f"seat{seat}":
                row[1] += 1
            else:
                row[3] += 1
    return {sid: (g, w, d, lost) for sid, (g, w, d, lost) in tally.items()}


def test_the_leaderboard_json_and_html_match_a_recount(worker_lost: Played) -> None:
    arena = worker_lost.arena
    expected = _recount(arena)
    assert len(expected) == 3 and all(row[0] > 0 for row in expected.values())
    data = httpx.get(arena.url + "/api/leaderboard", timeout=30).json()
    shown = {
        int(r["submission_id"]): (r["games"], r["wins"], r["draws"], r["losses"])
        for r in data["rows"]
        if r["games"]
    }
    assert shown == expected
    assert data["board"]["games"] == sum(row[0] for row in expected.values()) // 2
    names = {
        int(sid): str(name)
        for sid, name in arena.query(
            "select s.id, b.name from submissions s join bots b on b.id = s.bot_id"
        )
    }
    page = httpx.get(arena.url + "/", timeout=30).text
    html = {
        m["bot"]: (int(m["g"]), int(m["w"]), int(m["d"]), int(m["l"]))
        for m in re.finditer(
            r'class="bot-link"[^>]*>(?P<bot>[^<]+)</a>.*?'
            r'<td class="num col-games">(?P<g>\d+)</td>\s*'
            r'<td class="num">(?P<w>\d+) / (?P<d>\d+) / (?P<l>\d+)</td>',
            page,
            re.S,
        )
    }
    assert html == {names[sid]: row for sid, row in expected.items()}


def test_each_authors_logs_match_the_games_table(worker_lost: Played) -> None:
    """Every game of the author's bot is in their logs (each seat once), nothing else."""
    arena = worker_lost.arena
    for author, bot in (("alice", "alpha"), ("bob", "beta"), ("carol", "gamma")):
        answer = httpx.get(
            f"{arena.url}/api/bots/{bot}/logs?limit=500", headers=arena.auth(author), timeout=30
        )
        assert answer.status_code == 200, answer.text
        shown = Counter((e["game_id"], e["seat"]) for e in answer.json()["logs"])
        stored = Counter(
            (int(g), int(seat))
            for g, seat in arena.query(
                "select g.id, case when s.id = g.seat0_submission_id then 0 else 1 end "
                "from games g join submissions s on s.id in "
                "(g.seat0_submission_id, g.seat1_submission_id) "
                "join bots b on b.id = s.bot_id where b.name = :bot",
                bot=bot,
            )
        )
        assert stored and shown == stored, (bot, shown - stored, stored - shown)
        assert all(n == 1 for n in shown.values())
        # Another author cannot read them.
        other = "bob" if author == "alice" else "alice"
        refused = httpx.get(
            f"{arena.url}/api/bots/{bot}/logs", headers=arena.auth(other), timeout=30
        )
        assert refused.status_code == 403


# ---------------------------------------------------------------------------- stop and restart


def test_sigterm_and_sigint_mid_round_then_restart_lose_and_double_nothing(
    tmp_path: Path,
) -> None:
    """docs/arena.md "Upgrade": stop the server (Ctrl-C or SIGTERM), start it again;
    unfinished ladder series resume. Stopped twice mid-series (SIGTERM, then SIGINT), each
    time: the server exits, no bot process is left on the workers, the leases are given up,
    and the series resumes where it stopped."""
    cluster = start_cluster(tmp_path / "cluster")
    budget = 4 * GAMES
    arena = make_arena(
        tmp_path,
        f"sqlite:///{tmp_path / 'arena.db'}",
        cluster.address,
        "--concurrency",
        "2",
        "--budget",
        str(budget),
    )
    why = diagnosis([arena], [cluster])
    try:
        arena.start()
        for author, name in (("alice", "alpha"), ("bob", "beta"), ("carol", "gamma")):
            upload_slow(arena, author, tmp_path, name)
        cut: list[int] = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            series = until(
                "a ladder series half played",
                lambda: running_series_with_games_to_play(arena, to_play=2),
                why,
            )
            cut.append(series)
            code = arena.signal_stop(signum)
            assert code in CLEAN_EXITS, f"exit {code} on signal {signum}\n{why()}"
            # A clean stop waits for every series' end to be recorded: none is reported as
            # failed (its outcome was lost when the client closed with a callback queued).
            assert "failed on the Dask cluster" not in arena.log_text(), why()
            until(
                "every bot process to end after the stop",
                lambda: not bot_processes(arena) or None,
                lambda: f"{bot_processes(arena)}\n{why()}",
            )
            assert unfinished_leases(arena) == [], why()
            assert_every_game_once(arena)
            arena.start()

        def done() -> bool:
            statuses = arena.query(
                "select count(*) from series s join ladder_series l on l.series_id = s.id "
                "where s.status in ('pending', 'running')"
            )[0][0]
            finished = arena.query(
                "select count(*) from series where status = 'finished' and id in "
                f"({', '.join(str(c) for c in cut)})"
            )[0][0]
            return bool(statuses == 0 and finished == len(set(cut)))

        until("the interrupted series to finish after the restarts", done, why)
        for series in cut:
            assert counted_numbers(arena, series) == list(range(1, GAMES + 1)), series
        assert_every_game_once(arena)
        code = arena.signal_stop(signal.SIGINT)
        assert code in CLEAN_EXITS, f"exit {code}\n{why()}"
        until("no bot process after the last stop", lambda: not bot_processes(arena) or None, why)
    finally:
        finish(arena)
        stop_cluster(cluster)


# ---------------------------------------------------------------------------- scheduler lost


def _scheduler_lost(tmp: Path) -> tuple[LoopbackCluster, DaskArena, int]:
    """A cluster and a server whose scheduler is SIGKILLed while a series has games to
    play; the cut series."""
    cluster = start_cluster(tmp / "cluster")
    arena = make_arena(
        tmp,
        f"sqlite:///{tmp / 'arena.db'}",
        cluster.address,
        "--concurrency",
        "1",
        "--budget",
        str(2 * GAMES),
    )
    why = diagnosis([arena], [cluster])
    try:
        arena.start()
        upload_slow(arena, "alice", tmp, "alpha")
        upload_slow(arena, "bob", tmp, "beta")
        cut = until(
            "a ladder series with games to play",
            lambda: running_series_with_games_to_play(arena, to_play=3),
            why,
        )
        kill_scheduler(cluster)
    except BaseException:
        finish(arena)
        stop_cluster(cluster)
        raise
    return cluster, arena, cut


def test_a_lost_scheduler_leaves_the_server_answering_and_stoppable(tmp_path: Path) -> None:
    """The scheduler SIGKILLed mid-series: the server keeps answering, logs the failure,
    stops on SIGINT without hanging, its bots end, and a server on a new cluster resumes
    the series with every game once."""
    cluster, arena, cut = _scheduler_lost(tmp_path)
    fresh: LoopbackCluster | None = None
    try:
        why = diagnosis([arena], [cluster])
        health = httpx.get(arena.url + "/health", timeout=30)
        assert health.status_code == 200, health.text
        until(
            "the server to log the series' failure on the cluster",
            lambda: "failed on the Dask cluster" in arena.log_text() or None,
            why,
        )
        code = arena.signal_stop(signal.SIGINT)
        assert code in CLEAN_EXITS, f"exit {code}\n{why()}"
        until(
            "the bots of the cut series to end",
            lambda: not bot_processes(arena) or None,
            lambda: f"{bot_processes(arena)}\n{why()}",
        )
        assert unfinished_leases(arena) == [], why()
        stop_cluster(cluster)
        fresh = start_cluster(tmp_path / "cluster-2")
        arena.scheduler = fresh.address
        arena.start()
        why = diagnosis([arena], [cluster, fresh])
        until(
            "the cut series to finish on the new cluster",
            lambda: (
                arena.query("select status from series where id = :id", id=cut)[0][0] == "finished"
            ),
            why,
        )
        assert counted_numbers(arena, cut) == list(range(1, GAMES + 1))
        assert_every_game_once(arena)
    finally:
        finish(arena)
        stop_cluster(cluster)
        if fresh is not None:
            stop_cluster(fresh)


def test_a_server_that_lost_its_scheduler_lets_another_server_play_on(tmp_path: Path) -> None:
    """docs/arena.md "Restarts": a running series holds a lease while it is played, and
    another server on the same database resumes what a server no longer plays. A server
    whose scheduler is gone (its client closed after distributed's 30 s of reconnecting)
    plays nothing: it must not keep a series from a server on a working cluster, so that
    one brings the ladder to its budget with no series left unfinished."""
    cluster, arena, cut = _scheduler_lost(tmp_path)
    fresh: LoopbackCluster | None = None
    second: DaskArena | None = None
    budget = 2 * GAMES
    try:
        why = diagnosis([arena], [cluster])
        until(
            "the first server's Dask client to give up reconnecting",
            lambda: "Failed to reconnect to scheduler" in arena.log_text() or None,
            why,
        )
        time.sleep(10)  # a few leases and polls of the first server's ladder
        assert arena.process is not None and arena.process.poll() is None
        fresh = start_cluster(tmp_path / "cluster-2")
        (tmp_path / "second").mkdir()
        second = make_arena(
            tmp_path / "second",
            arena.database,
            fresh.address,
            "--concurrency",
            "1",
            "--budget",
            str(budget),
            tokens=arena.tokens,
        )
        second.start()
        why = diagnosis([second, arena], [fresh, cluster])

        def ladder_done() -> bool:
            counted = arena.query(
                "select count(*) from games g join ladder_series l on l.series_id = g.series_id"
                " where not g.voided"
            )[0][0]
            unfinished = httpx.get(second.url + "/api/ladder", timeout=30).json()
            return bool(counted >= budget and not unfinished["unfinished_series"])

        deadline = time.monotonic() + 120
        while not ladder_done():
            if time.monotonic() > deadline:
                held = httpx.get(arena.url + "/health", timeout=30).json()["ladder"]
                raise AssertionError(
                    f"the ladder did not reach its budget on the second server; the first "
                    f"server (no scheduler) still plays {held}, leases held: "
                    f"{unfinished_leases(arena)}\n{why()}"
                )
            time.sleep(0.5)
        assert counted_numbers(arena, cut) == list(range(1, GAMES + 1))
        assert_every_game_once(arena)
    finally:
        finish(arena, *([second] if second else []))
        stop_cluster(cluster)
        if fresh is not None:
            stop_cluster(fresh)
