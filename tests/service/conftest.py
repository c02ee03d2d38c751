"""A real arena server on loopback (``kryt arena serve`` in a subprocess, port 0) over a
fresh SQLite database, with authors created through the CLI."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

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
    process: subprocess.Popen[str] | None = None
    url: str = ""
    log: list[Path] = field(default_factory=list)

    def start(self) -> None:
        port_file = self.workdir / "port"
        port_file.unlink(missing_ok=True)
        out = self.workdir / f"server-{len(self.log)}.log"
        self.log.append(out)
        handle = out.open("w")
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
                "--games-per-series",
                "4",
                "--concurrency",
                "1",
            ],
            cwd=self.workdir,
            env={**os.environ, "PYTHONPATH": str(ROOT), **self.env},
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
        """kill -9 the server (its bots are its children's children: the reaper's job)."""
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


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """A server with authors alice, bob and carol (one token each)."""
    workdir = tmp_path_factory.mktemp("arena")
    database = f"sqlite:///{workdir / 'arena.db'}"
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
    }
    server = Arena(workdir, database, tokens, env)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir / "store", ignore_errors=True)
