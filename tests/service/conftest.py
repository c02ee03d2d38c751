"""A real arena server on loopback (``kryt arena serve`` in a subprocess, port 0) over a
fresh database, with authors created through the CLI.

``arena`` runs on SQLite and on PostgreSQL (a database of its own on the server named by
``KRYT_TEST_POSTGRES_URL``; skipped locally without it, failed under CI); ``sqlite_arena``
only on SQLite (the browser tests). The server's sandbox runtime directory is private to it,
so a test can see exactly what its bots leave on the host.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from arena.service.server import Client
from tests.db.conftest import _fresh_postgres_database, postgres_admin_url
from tests.services import require

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "sdk" / "examples"
STARTUP_S = 60.0

CHATTY_BOT = """
import random
import sys

from referee.rules import Action, View
from sdk import Bot, serve


class Chatty(Bot):
    def __init__(self) -> None:
        self.rng = random.Random(7)
        self.moves = 0

    def act(self, view: View) -> Action:
        self.moves += 1
        print(f"chatty thinking, move {self.moves}", file=sys.stderr, flush=True)
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(Chatty())
"""

FLAKY_BOT = """
import random
import sys

from referee.rules import Action, View
from sdk import Bot, serve


class Flaky(Bot):
    \"\"\"Plays the first two games of a series (validation), then answers nonsense.\"\"\"

    def __init__(self) -> None:
        self.rng = random.Random(11)
        self.number = 0

    def on_game_start(self, game) -> None:
        self.number = game.game_number

    def act(self, view: View) -> Action | str:
        if self.number >= 3:
            print(f"flaky gives up in game {self.number}", file=sys.stderr, flush=True)
            return "nonsense"
        return self.rng.choice(view.legal_actions)


if __name__ == "__main__":
    serve(Flaky())
"""

CRASHING_BOT = """
import sys

print("crashing on purpose", file=sys.stderr, flush=True)
sys.exit(3)
"""


def make_bot(folder: Path, name: str, version: str = "1.0.0", code: str | None = None) -> Path:
    """A bot folder: the random example under another name, or ``code`` as its bot.py."""
    folder.mkdir(parents=True)
    source = (EXAMPLES / "random" / "bot.py").read_text() if code is None else code
    (folder / "bot.py").write_text(source)
    (folder / "bot.toml").write_text(
        f'name = "{name}"\nversion = "{version}"\nlanguage = "python"\nentry = "bot.py"\n'
    )
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def kryt(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the ``kryt`` command line in a subprocess from the repository."""
    return subprocess.run(
        [sys.executable, "-m", "kryt", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclass
class Arena:
    """A running server and what the tests need to talk to it."""

    workdir: Path
    database: str
    tokens: dict[str, str]
    env: dict[str, str]
    runtime: Path
    process: subprocess.Popen[str] | None = None
    url: str = ""
    log: list[Path] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return "sqlite" if self.database.startswith("sqlite") else "postgresql"

    def serve_options(self) -> list[str]:
        """The options of ``kryt arena serve`` after its database, port and store."""
        return ["--games-per-series", "4", "--concurrency", "1"]

    def start(self) -> None:
        port_file = self.workdir / "port"
        port_file.unlink(missing_ok=True)
        out = self.workdir / f"server-{len(self.log)}.log"
        self.log.append(out)
        with out.open("w") as handle:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kryt",
                    "arena",
                    "serve",
                    "--database",
                    self.database,
                    "--port",
                    "0",
                    "--port-file",
                    str(port_file),
                    "--store",
                    str(self.workdir / "store"),
                    *self.serve_options(),
                ],
                cwd=self.workdir,
                env={
                    **os.environ,
                    "PYTHONPATH": str(ROOT),
                    "KRYT_SANDBOX_RUNTIME_DIR": str(self.runtime),
                    **self.env,
                },
                stdout=handle,
                stderr=subprocess.STDOUT,
                text=True,
            )
        deadline = time.monotonic() + STARTUP_S
        while not port_file.exists() or not port_file.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {out.read_text()}")
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{port_file.read_text()}"
        while True:
            try:
                if httpx.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not healthy: {out.read_text()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """kill -9 the server (its bots die with it by their parent-death signal; what they
        leave on the host is swept when a server starts again)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)

    def auth(self, author: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[author]}"}

    def query(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        """Rows of one SQL query on the server's database (a connection of its own)."""
        engine = create_engine(self.database, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                return [tuple(row) for row in conn.execute(text(sql), params)]
        finally:
            engine.dispose()


def _serve(
    workdir: Path, database: str, extra_env: dict[str, str] | None = None
) -> Iterator[Arena]:
    """A server with authors alice, bob and carol (one token each) over ``database``."""
    tokens = {}
    for author in ("alice", "bob", "carol"):
        done = kryt("arena", "author", "add", author, "--database", database)
        assert done.returncode == 0, done.stderr
        tokens[author] = done.stdout.strip().splitlines()[-1]
        assert tokens[author].startswith("kryt_")
    env = {
        "KRYT_ARENA_SANDBOX_BACKEND": "process",
        "KRYT_ARENA_SANDBOX_ALLOW_UNSAFE": "1",
        "KRYT_ARENA_LADDER_LEASE_SECONDS": "3",
        "KRYT_ARENA_LADDER_POLL_SECONDS": "0.2",
        "KRYT_ARENA_WRITES_PER_MINUTE": "8",
        "KRYT_ARENA_MAX_UPLOAD_BYTES": str(256 * 1024),
        "KRYT_ARENA_AUTH_FAILURES_PER_MINUTE": "1000",
        **(extra_env or {}),
    }
    # Short: bot socket paths below it must fit in a unix socket address.
    runtime = Path(tempfile.mkdtemp(prefix="krt-"))
    server = Arena(workdir, database, tokens, env, runtime)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir / "store", ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def arena(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Arena]:
    """A server over a fresh database, on SQLite and on PostgreSQL."""
    workdir = tmp_path_factory.mktemp("arena")
    if request.param == "sqlite":
        yield from _serve(workdir, f"sqlite:///{workdir / 'arena.db'}")
        return
    admin_url = postgres_admin_url()
    require(admin_url is not None, "PostgreSQL", "set KRYT_TEST_POSTGRES_URL")
    assert admin_url is not None
    for url in _fresh_postgres_database(admin_url):
        yield from _serve(workdir, url)


@pytest.fixture(scope="module")
def sqlite_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """A server over a fresh SQLite database."""
    workdir = tmp_path_factory.mktemp("arena")
    yield from _serve(workdir, f"sqlite:///{workdir / 'arena.db'}")


def submit(arena: Arena, author: str, folder: Path, *, timeout: float = 600) -> dict[str, Any]:
    """Upload a bot folder as ``author`` and wait for its validation; the final JSON. A
    validation still pending after ``timeout`` (generous: a busy machine is slow, a stuck one
    is a bug) fails with the server's log, to tell the two apart."""
    from arena.service.server import archive_of

    data, name = archive_of(folder)
    client = Client(arena.url, arena.tokens[author])
    stored = client.upload(data, name)
    started = time.monotonic()
    final = client.wait(int(stored["submission_id"]), timeout=timeout)
    check = final.get("check")
    if check is not None and check.get("status") == "pending":
        logs = "\n".join(path.read_text(errors="replace")[-4000:] for path in arena.log)
        raise AssertionError(
            f"{name}: validation still pending after {time.monotonic() - started:.0f} s;"
            f" server log:\n{logs}"
        )
    return final
