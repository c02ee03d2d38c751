"""A Dask scheduler address that refuses connections fails a run within seconds, in one line
naming the address, with nothing stored and the tournament resumable; a scheduler that
accepts the connection but is slow to answer still gets the whole connect timeout.

distributed retries a refused connection until its connect timeout (``Client(timeout=...)``)
runs out: the run used to wait those 15 s before saying anything."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import distributed as _distributed
import pytest

from arena.db import open_database, void_game
from arena.service.dask_ladder import DaskLadder
from arena.service.settings import LadderSettings, ServiceSettings
from arena.tournament import dask_executor
from arena.tournament.dask_executor import (
    REFUSED_SECONDS,
    DaskExecutor,
    SchedulerUnavailableError,
)
from arena.tournament.runner import SeriesTask
from kryt.cli import main
from kryt.errors import ExitCode

pytestmark = pytest.mark.timeout(300)

# distributed is untyped; one Any name keeps mypy --strict quiet, as in the executor.
distributed: Any = _distributed

CONNECT = 120.0
"""The connect timeout of these runs: far longer than any of them may take, so that a run
that waited it out instead of failing fast is caught."""
FAST = 30.0
"""Seconds a run against a refusing address may take on a busy machine (it tries for
:data:`REFUSED_SECONDS`; it used to take the whole connect timeout)."""


@contextmanager
def refusing_address() -> Iterator[tuple[str, socket.socket]]:
    """A ``tcp://`` address of this host whose port is bound but not listening: connecting is
    refused, and no other program takes the port meanwhile."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"tcp://127.0.0.1:{sock.getsockname()[1]}", sock


def task(url: str) -> SeriesTask:
    return SeriesTask(database_url=url, tournament_id=1, series_id=1, config={}, store="/tmp/s")


def test_a_refused_scheduler_fails_a_run_within_seconds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kryt.db'}"
    open_database(url).close()
    with refusing_address() as (address, _):
        executor = DaskExecutor(address, connect_timeout=CONNECT)
        started = time.monotonic()
        with pytest.raises(SchedulerUnavailableError) as caught:
            executor.run([task(url)], stop=threading.Event())
        took = time.monotonic() - started
    assert took < FAST
    assert str(caught.value) == (
        f"no Dask scheduler listens at {address}: Connection refused"
        f" (tried for {REFUSED_SECONDS:g} s)"
    )
    assert executor._client is None


def test_the_ladder_on_a_refused_scheduler_fails_to_start_within_seconds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    with refusing_address() as (address, _):
        ladder = LadderSettings(executor="dask", scheduler=address)
        dask = DaskLadder(ServiceSettings(ladder=ladder), database_url=url, label_prefix="t")
        started = time.monotonic()
        with pytest.raises(SchedulerUnavailableError, match=f"listens at {address}: Connection"):
            dask.prepare()
        assert time.monotonic() - started < FAST
        dask.stop(1.0)


def test_a_scheduler_that_starts_listening_a_moment_later_is_connected_to() -> None:
    with refusing_address() as (address, sock):
        later = threading.Timer(0.5, sock.listen)
        later.start()
        try:
            assert dask_executor._refused(address, CONNECT) is None
        finally:
            later.join()


@pytest.mark.parametrize(
    "address", ["inproc://10.0.0.1/1/2", "tcp://no-port-here", "ucx://127.0.0.1:1"]
)
def test_addresses_that_are_no_tcp_port_are_left_to_distributed(address: str) -> None:
    assert dask_executor._refused(address, 0.1) is None


@contextmanager
def slow_proxy(target: str, delay: float) -> Iterator[str]:
    """A ``tcp://`` address that accepts connections at once and relays them to ``target``
    only ``delay`` seconds after it opened: a scheduler alive but slow to answer."""
    host, port = distributed.comm.parse_host_port(distributed.comm.parse_address(target)[1])
    opens = time.monotonic() + delay
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()
    threads: list[threading.Thread] = []

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with suppress(OSError):  # the other direction may have shut it already
                    end.shutdown(socket.SHUT_RDWR)

    def relay(client: socket.socket) -> None:
        time.sleep(max(0.0, opens - time.monotonic()))
        upstream = socket.create_connection((host, port))
        for ends in ((client, upstream), (upstream, client)):
            thread = threading.Thread(target=pipe, args=ends, daemon=True)
            thread.start()
            threads.append(thread)

    def accept() -> None:
        while not done.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=relay, args=(client,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        acceptor.join(10)
        listener.close()


@pytest.mark.slow
def test_a_scheduler_slow_to_answer_gets_the_connect_timeout() -> None:
    delay = REFUSED_SECONDS + 3
    # A scheduler in this process, on loopback TCP (processes=False alone would be inproc).
    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
        dashboard_address=None,
    ) as cluster, slow_proxy(cluster.scheduler_address, delay) as address:  # fmt: skip
        executor = DaskExecutor(address, connect_timeout=CONNECT)
        started = time.monotonic()
        try:
            client = executor.client
            took = time.monotonic() - started
            assert client.status == "running"
            assert took >= delay - 0.5  # it waited for the answer, past the refusal window
        finally:
            executor.close()


def tournaments(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("select id, status from tournaments order by id"))


def counted(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select series_id, number from games where not voided")
        return sorted(rows)


@pytest.mark.slow
def test_run_and_resume_on_a_refused_scheduler_store_nothing_and_resume_later(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db, store = tmp_path / "kryt.db", tmp_path / "store"
    common = ["-d", str(db), "--store", str(store)]
    bots = ["builtin:random", "builtin:greedy", "--games", "2", "--backend", "process"]
    with refusing_address() as (address, _):
        dask = ["--executor", "dask", "--scheduler", address]
        started = time.monotonic()
        code = main(["tournament", "run", *bots, *common, *dask])
        took = time.monotonic() - started
        err = capsys.readouterr().err
        assert code == ExitCode.UNAVAILABLE and took < FAST, (took, err)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert errors == [
            f"error: no Dask scheduler listens at {address}: Connection refused"
            f" (tried for {REFUSED_SECONDS:g} s)"
        ], err
        assert "Traceback" not in err
        assert not db.exists() or tournaments(db) == []
        # A tournament left unfinished (a game voided after the fact must be played again).
        assert main(["tournament", "run", *bots, *common]) == 0
        database = open_database(f"sqlite:///{db}", create=False)
        with database.session() as session:
            void_game(1, "found wrong later", session=session)
        database.close()
        before = (tournaments(db), counted(db))
        assert before[0] == [(1, "running")]
        capsys.readouterr()
        started = time.monotonic()
        code = main(["tournament", "resume", "1", *common, *dask])
        took = time.monotonic() - started
        err = capsys.readouterr().err
        assert code == ExitCode.UNAVAILABLE and took < FAST, (took, err)
        assert f"error: no Dask scheduler listens at {address}" in err
        assert (tournaments(db), counted(db)) == before  # nothing recorded, nothing lost
    # Resumed where a scheduler (here: this machine) can run it, it finishes.
    assert main(["tournament", "resume", "1", *common]) == 0
    assert tournaments(db) == [(1, "finished")]
    assert counted(db) == sorted([*before[1], (1, 1)])
