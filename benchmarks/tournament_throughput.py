#!/usr/bin/env python3
"""Tournament throughput: games/s of a real round robin, and its fraction of the ideal.

    python benchmarks/tournament_throughput.py [--bots 4] [--games 10] [--concurrency 2]

Copies of the fast example bot ``random`` (so every pair plays the same cheap bot) play a
round robin through the whole stack: SQLite database, process sandbox, gRPC over Unix sockets,
the referee's series loop, every game committed. The ideal is what the machine could do if a
game cost nothing but its round trips: ``cores / (actions per game × bare round trip)``, with
the bare round trip measured in the same run (the faster of ``grpc_pingpong``'s threaded and
asyncio floors). Target: a fraction >= 0.6.

It also prints the CPU spent per decision by the referee processes and the bots together
(start-ups included) and the ceiling they imply when the machine is CPU-bound: ``cores /
(actions per game × CPU per decision)``; the fraction cannot exceed that ceiling over the
ideal. And the scaling: the same round robin at concurrency 1 (one process) and at
``--concurrency`` (referee processes, one per core, each playing its share on its loop), best
of ``--repeat`` runs each, games/s in ratio (issue 15: >= 1.8 at 2 on 2 cores) and per
referee process.

Two floors for that ratio, measured in the same run: ``machine scaling`` (CPU-bound Python
processes sharing nothing, one against ``--concurrency`` at once) and ``transport scaling``:
the transport alone in the shape of a series, a client process asking two echo servers in
turn (gRPC asyncio over Unix sockets, each server its own process, as a referee asks its two
bots), one such group against ``--concurrency`` groups at once. A referee that scaled as
well as its transport would reach the second.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grpc_pingpong import _spawn, bare_round_trip, bare_round_trip_aio  # noqa: E402
from referee_overhead import ECHO_SERVICE  # noqa: E402

from arena.db import games_of_series, open_database, series_of_tournament  # noqa: E402
from arena.tournament.config import load_config  # noqa: E402
from arena.tournament.executors import LocalExecutor  # noqa: E402
from arena.tournament.runner import create, tasks_for  # noqa: E402
from sandbox.cgroups import BotCgroup, cgroup_layout  # noqa: E402
from sandbox.errors import SandboxInfrastructureError  # noqa: E402
from sandbox.local import UnsafeSandboxWarning  # noqa: E402


def bot_copies(folder: Path, count: int) -> list[str]:
    """``count`` copies of the random example bot with distinct names."""
    paths = []
    for i in range(count):
        dest = folder / f"random{i}"
        shutil.copytree(ROOT / "sdk" / "examples" / "random", dest)
        manifest = (dest / "bot.toml").read_text().replace('name = "random"', f'name = "r{i}"')
        (dest / "bot.toml").write_text(manifest)
        paths.append(str(dest))
    return paths


class TreeClock:
    """CPU seconds of this process and everything it starts.

    The process backend starts each bot under a supervisor (a child subreaper) and stops
    both with SIGKILL, so the bot is never reaped by a process of ours and its CPU never
    reaches ``RUSAGE_CHILDREN``: counted that way, the bots' CPU is lost and the CPU-bound
    ceiling comes out too high. Where this process may make a cgroup (root, cgroup v1 with
    cpuacct or v2), it moves itself into a cgroup of its own, whose CPU counter holds every
    descendant, orphaned or not; elsewhere it falls back on rusage and says so."""

    def __init__(self) -> None:
        self.group: BotCgroup | None = None
        self.how = "rusage of this process and its reaped children: bots' CPU undercounted"
        layout = cgroup_layout()
        if isinstance(layout, str) or os.geteuid() != 0:
            return
        try:
            group = BotCgroup.create(
                layout, f"kryt-bench-{os.getpid()}", memory_bytes=1 << 40, pids=1_000_000
            )
        except SandboxInfrastructureError:
            return
        try:
            group.join(os.getpid())
        except SandboxInfrastructureError:
            group.remove()
            return
        if group.cpu_seconds() is None:
            self._leave(group)
            return
        self.group = group
        self.how = "a cgroup of its own: every process of the run, orphans included"

    def seconds(self) -> float:
        """CPU seconds so far."""
        if self.group is not None:
            spent = self.group.cpu_seconds()
            assert spent is not None
            return spent
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def close(self) -> None:
        """Leave the cgroup and remove it."""
        if self.group is not None:
            self._leave(self.group)
            self.group = None

    @staticmethod
    def _leave(group: BotCgroup) -> None:
        for _, parent in group.layout.parents:
            (parent / "cgroup.procs").write_text(str(os.getpid()))
        group.remove()


CLOCK: TreeClock | None = None


def _spin(rounds: int) -> float:
    """Seconds of wall time for ``rounds`` iterations of plain Python arithmetic."""
    start, total = time.perf_counter(), 0
    for i in range(rounds):
        total += i * i % 7
    return time.perf_counter() - start


def machine_scaling(processes: int, rounds: int = 10_000_000) -> float:
    """How much faster ``processes`` CPU-bound Python processes get through their work than
    one does, the machine's own bound on scaling for work that shares nothing (``processes``
    when the cores are really separate): a floor for the concurrency ratio below."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        pool.map(_spin, [1000] * processes)  # started and warm
        alone = min(pool.apply(_spin, (rounds,)) for _ in range(2))
        together = min(max(pool.map(_spin, [rounds] * processes)) for _ in range(2))
    return processes * alone / together


ECHO_PAYLOAD = b"x" * 256
"""About a decision request's size."""


def _echo_group(
    addresses: list[str],
    rounds: int,
    ready: multiprocessing.queues.Queue[None],
    go: threading.Event,
    done: multiprocessing.queues.Queue[tuple[float, float]],
) -> None:
    """A series' transport and nothing else: ask the two echo servers in turn, ``rounds``
    round trips once ``go`` is set; report when they started and ended (the monotonic clock
    is the machine's, so comparable between processes)."""
    import grpc

    async def run() -> None:
        channels = [grpc.aio.insecure_channel(a) for a in addresses]
        calls = []
        for channel in channels:
            await channel.channel_ready()
            calls.append(channel.stream_stream(f"/{ECHO_SERVICE}/Play", None, None)(None))
        for i in range(200):  # warm-up
            await calls[i % 2].write(ECHO_PAYLOAD)
            await calls[i % 2].read()
        ready.put(None)
        await asyncio.to_thread(go.wait)
        start = time.perf_counter()
        for i in range(rounds):
            await calls[i % 2].write(ECHO_PAYLOAD)
            await calls[i % 2].read()
        done.put((start, time.perf_counter()))
        for call in calls:
            call.cancel()
        for channel in channels:
            await channel.close(None)

    asyncio.run(run())


@dataclass(frozen=True)
class EchoRun:
    """Groups of echo clients at once: round trips/s of them all, CPU of everything."""

    rate: float
    cpu_per_trip: float
    busy: float


def _echo_run(groups: int, addresses: list[str], rounds: int) -> EchoRun:
    context = multiprocessing.get_context("spawn")
    ready: multiprocessing.queues.Queue[None] = context.Queue()
    done: multiprocessing.queues.Queue[tuple[float, float]] = context.Queue()
    go = context.Event()
    clients = [
        context.Process(
            target=_echo_group, args=(addresses[2 * g : 2 * g + 2], rounds, ready, go, done)
        )
        for g in range(groups)
    ]
    for client in clients:
        client.start()
    try:
        for _ in clients:
            ready.get(timeout=120)
        assert CLOCK is not None
        cpu = CLOCK.seconds()
        go.set()
        spans = [done.get(timeout=600) for _ in clients]
        spent = CLOCK.seconds() - cpu
    finally:
        for client in clients:
            client.join(30)
            if client.is_alive():
                client.kill()
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    trips = groups * rounds
    return EchoRun(trips / wall, spent / trips, spent / wall)


def transport_scaling(work: Path, groups: int, rounds: int, repeat: int) -> tuple[EchoRun, EchoRun]:
    """The transport's own bound on the concurrency ratio, in the shape of a series: one
    client asking two echo servers in turn, against ``groups`` such clients at once (each
    with its own two servers), best of ``repeat`` each."""
    addresses = [f"unix://{work / f'scaling-echo{i}.sock'}" for i in range(2 * groups)]
    here = str(ROOT / "benchmarks" / "referee_overhead.py")
    servers = [_spawn([here, "--serve-echo", address]) for address in addresses]
    try:
        deadline = time.monotonic() + 60
        for address in addresses:
            while not Path(address.removeprefix("unix://")).exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"echo server did not listen on {address}")
                time.sleep(0.05)
        alone = max((_echo_run(1, addresses, rounds) for _ in range(repeat)), key=_rate)
        together = max((_echo_run(groups, addresses, rounds) for _ in range(repeat)), key=_rate)
    finally:
        for server in servers:
            server.terminate()
            server.wait(5)
    return alone, together


def _rate(run: EchoRun) -> float:
    return run.rate


@dataclass(frozen=True)
class Run:
    """One round robin: games/s, games, actions, CPU seconds of everything it ran."""

    rate: float
    games: int
    actions: int
    cpu: float


def measure(work: Path, opts: argparse.Namespace, concurrency: int, run: int) -> Run:
    """Play the round robin once at ``concurrency`` (0: ``--concurrency``) in a fresh database."""
    concurrency = concurrency or opts.concurrency
    folder = work / f"c{concurrency}-{run}"
    folder.mkdir()
    db = open_database(f"sqlite:///{folder / 'kryt.db'}")
    config = load_config(
        None,
        name="throughput",
        bots=bot_copies(folder, opts.bots),
        games_per_pair=opts.games,
        concurrency=concurrency,
        backend="process",
        allow_unsafe=True,
    )
    tournament_id = create(config, db=db, store=folder / "store")
    tasks = tasks_for(tournament_id, db=db, store=folder / "store")
    assert CLOCK is not None
    start, cpu = time.perf_counter(), CLOCK.seconds()
    outcomes = LocalExecutor(concurrency).run(tasks, stop=threading.Event())
    elapsed = time.perf_counter() - start
    spent = CLOCK.seconds() - cpu
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    games = actions = 0
    with db.read_session() as session:
        for series in series_of_tournament(tournament_id, session=session):
            assert series.id is not None
            for game in games_of_series(series.id, session=session):
                games += 1
                actions += len(game.actions)
    db.engine.dispose()
    return Run(games / elapsed, games, actions, spent)


PACKAGES = ("referee", "sdk", "sandbox", "arena", "leaderboard", "kryt", "kryt_proto")


def _bytecode_caches(*, keep_unset: bool) -> str:
    """Measure as on a user's machine, where every process reads the project's bytecode
    caches (written by its first run): a machine that sets ``PYTHONDONTWRITEBYTECODE`` (these
    do) makes each referee worker compile the referee and database layers again at its start
    (~0.1 s of CPU each), which a user's run never pays. The caches are written beforehand
    (``__pycache__``, ignored by git), and the variable is unset for the processes of the
    run; bots keep it (the sandbox sets it) and read the caches, as a user's do."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return "written and read as usual (PYTHONDONTWRITEBYTECODE unset)"
    if keep_unset:
        return "none: PYTHONDONTWRITEBYTECODE is set (--no-bytecode), every start compiles"
    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    return (
        "written before the runs and read by every process (this machine sets"
        " PYTHONDONTWRITEBYTECODE; a user's does not: --no-bytecode to keep it)"
    )


def main() -> int:
    # The copies are renamed, so not recognised as the bundled bots: run them unsandboxed,
    # knowingly (they are the example code), without a warning per start.
    warnings.filterwarnings("ignore", category=UnsafeSandboxWarning)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=4)
    parser.add_argument("--games", type=int, default=10, help="games per pair")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=2000, help="bare ping-pong round trips")
    parser.add_argument(
        "--scaling-rounds",
        type=int,
        default=20_000,
        help="round trips of each echo client for the transport scaling",
    )
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs at each concurrency (best kept)"
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as set (every process compiles the project's modules"
        " from source at each start)",
    )
    opts = parser.parse_args()
    print(f"bytecode caches            {_bytecode_caches(keep_unset=opts.no_bytecode)}")
    global CLOCK
    CLOCK = TreeClock()
    print(f"CPU counted by             {CLOCK.how}")
    work = Path(tempfile.mkdtemp(prefix="kryt-throughput-"))
    try:
        echo = f"unix://{work / 'echo.sock'}"
        server = _spawn([str(ROOT / "benchmarks" / "grpc_pingpong.py"), "--serve-echo", echo])
        try:
            bare = min(
                bare_round_trip([echo], opts.rounds, b"x" * 32, [server.pid])[0],
                bare_round_trip_aio([echo], opts.rounds, b"x" * 32, [server.pid])[0],
            )
        finally:
            server.terminate()
            server.wait(5)
        runs = {c: [measure(work, opts, c, run) for run in range(opts.repeat)] for c in (1, 0)}
        best = {c: max(results, key=lambda r: r.rate) for c, results in runs.items()}
        main_run = best[0]
        cores = os.cpu_count() or 1
        per_game = main_run.actions / main_run.games
        ideal = cores / (per_game * bare)
        print(f"bare round trip            {bare * 1e6:8.0f} µs (UDS floor, measured in this run)")
        print(f"actions per game           {per_game:8.1f}")
        print(f"ideal ({cores} cores)           {ideal:8.1f} games/s")
        print(
            f"measured                   {main_run.rate:8.1f} games/s ({main_run.games} games,"
            f" concurrency {opts.concurrency}, bot start-up included, best of {opts.repeat})"
        )
        print(f"fraction of ideal          {main_run.rate / ideal:8.2f}  (target >= 0.6)")
        per_decision = main_run.cpu / main_run.actions
        ceiling = cores / (per_game * per_decision)
        print(
            f"CPU per decision           {per_decision * 1e6:8.0f} µs (referee processes and"
            " bots, start-ups included)"
        )
        print(
            f"CPU-bound ceiling          {ceiling:8.1f} games/s = {ceiling / ideal:.2f} of ideal"
            f" (measured is {main_run.rate / ceiling:.2f} of it; target >= 0.8)"
        )
        scaling = main_run.rate / best[1].rate
        print(
            f"concurrency {opts.concurrency} / 1          {scaling:8.2f}x"
            f" ({best[1].rate:.1f} games/s at 1; target >= 1.8 at 2 on 2 cores);"
            f" {main_run.rate / opts.concurrency:.1f} games/s per referee process"
        )
        # The ratio is (cores busy at N / cores busy at 1) x (CPU per game at 1 / at N): one
        # series already runs its referee and two bots at once, and CPU per game rises when
        # more series share the cores.
        busy = {c: r.cpu * r.rate / r.games for c, r in best.items()}
        bound = min(opts.concurrency, cores) / busy[1]
        print(
            f"cores busy (CPU / wall)    {busy[1]:8.2f} at concurrency 1, {busy[0]:.2f} at"
            f" {opts.concurrency}: at most {bound:.2f}x on {cores} cores at the same CPU per game"
        )
        print(
            f"CPU per decision           {best[1].cpu / best[1].actions * 1e6:8.0f} µs at"
            f" concurrency 1, {per_decision * 1e6:.0f} at {opts.concurrency}"
        )
        spread = min(opts.concurrency, cores)
        print(
            f"machine scaling            {machine_scaling(spread):8.2f}x ({spread} CPU-bound"
            " Python processes sharing nothing / one: the cores' own bound)"
        )
        alone, together = transport_scaling(work, spread, opts.scaling_rounds, max(opts.repeat, 2))
        transport = together.rate / alone.rate
        print(
            f"transport scaling          {transport:8.2f}x ({spread} clients each asking two"
            " echo servers in turn / one: a series' transport and nothing else)"
        )
        print(
            f"  its cores busy           {alone.busy:8.2f} with one, {together.busy:.2f} with"
            f" {spread}; CPU per round trip {alone.cpu_per_trip * 1e6:.0f} µs, then"
            f" {together.cpu_per_trip * 1e6:.0f}"
        )
        print(f"concurrency ratio          {scaling / transport:8.2f} of the transport's scaling")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        CLOCK.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
