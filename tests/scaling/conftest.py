"""Fixtures: a real Dask cluster on loopback (a scheduler and two worker processes) and a
PostgreSQL database of the test's own.

The cluster is made of the ``dask scheduler`` / ``dask worker`` console scripts of this
virtualenv, started as subprocesses in their own sessions so a test can SIGKILL one worker
(with its nanny and its bots) the way a machine is lost.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import distributed
import pytest

from tests.db.conftest import POSTGRES_ENV, _fresh_postgres_database, postgres_admin_url
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
START_TIMEOUT = 60.0


@dataclass
class LoopbackCluster:
    """A running scheduler and workers; ``workers`` maps a worker's name to its process."""

    address: str
    scheduler: subprocess.Popen[bytes]
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: Path = Path()

    def kill_worker(self, name: str) -> None:
        """SIGKILL the worker's whole process group: nanny, worker process and its bots."""
        process = self.workers[name]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def freeze_worker(self, name: str) -> None:
        """SIGSTOP the worker's process group: it commits nothing more until thawed or
        killed (a test reads the database in between without a race)."""
        os.killpg(self.workers[name].pid, signal.SIGSTOP)

    def thaw_worker(self, name: str) -> None:
        """SIGCONT a worker stopped by :meth:`freeze_worker`."""
        os.killpg(self.workers[name].pid, signal.SIGCONT)

    def log_text(self) -> str:
        """Everything the scheduler and workers printed (for failure messages)."""
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.logs.glob("*.log"))
        )


def _script(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: install the arena extra (dask[distributed])")
    return path


def _spawn(args: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    # Workers unpickle functions from the test modules too (client.run helpers).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    with log.open("wb") as out:
        return subprocess.Popen(
            args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    # The whole group, even when its leader is gone: the nanny's worker and bots too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def start_cluster(home: Path, names: tuple[str, ...] = ("w0", "w1")) -> LoopbackCluster:
    """A ``dask scheduler`` and one ``dask worker`` (one thread) per name on 127.0.0.1, their
    logs and directories in ``home`` (made here); stop it with :func:`stop_cluster`."""
    client_class: Any = distributed.Client  # distributed's Client is not annotated
    dask = _script("dask")
    home.mkdir(parents=True)
    scheduler_file = home / "scheduler.json"
    scheduler = _spawn(
        [
            str(dask),
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
        ],
        home / "scheduler.log",
        home,
    )
    cluster = LoopbackCluster(address="", scheduler=scheduler, logs=home)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not scheduler_file.exists():
            assert scheduler.poll() is None, cluster.log_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
        for name in names:
            cluster.workers[name] = _spawn(
                [
                    str(dask),
                    "worker",
                    "--scheduler-file",
                    str(scheduler_file),
                    "--host",
                    "127.0.0.1",
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--name",
                    name,
                    "--local-directory",
                    str(home / name),
                ],
                home / f"{name}.log",
                home,
            )
        with client_class(scheduler_file=str(scheduler_file), timeout=START_TIMEOUT) as client:
            if names:
                client.wait_for_workers(len(names), timeout=START_TIMEOUT)
            cluster.address = str(client.scheduler.address)
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: LoopbackCluster) -> None:
    """SIGKILL every process of ``cluster`` (each whole session: nannies' workers, bots)."""
    for process in [*cluster.workers.values(), cluster.scheduler]:
        _stop(process)


@pytest.fixture
def loopback_cluster(tmp_path: Path) -> Iterator[LoopbackCluster]:
    """``dask scheduler`` and two ``dask worker`` processes (one thread each) on 127.0.0.1."""
    cluster = start_cluster(tmp_path / "cluster")
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new, empty PostgreSQL database of this test's own (dropped afterwards)."""
    admin_url = postgres_admin_url()
    require(
        admin_url is not None,
        "PostgreSQL",
        f"set {POSTGRES_ENV} (source .ci/provision/20-postgres.sh to start a local server)",
    )
    assert admin_url is not None
    yield from _fresh_postgres_database(admin_url)
