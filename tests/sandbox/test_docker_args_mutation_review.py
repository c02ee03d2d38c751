"""What the Docker backend asks the engine for, read from the keywords it creates a bot with.

A mutation review of ``sandbox/docker_backend.py`` found that the hostile-bot suites let
several loosened run options live (a pids, memory, swap or file-size limit above the bot's, a
CPU quota of twice its CPUs, a ``hard`` core limit, Docker's init, a shareable IPC namespace,
a gid of root, more log files, a ``/dev/pts`` that is writable): no hostile bot pushes just
past those. These tests start a bot through :meth:`DockerBackend.start` on a stand-in client
that records ``containers.run``'s keywords (no engine, no image) and check each against
``docs/sandbox.md`` (*Docker*: "Run options"), with limits whose every field differs from the
others, so a field in another's place, or a wrong unit, shows. The build's Engine API limits
(:func:`build_container_limits`) are checked the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import BOT_HOSTNAME, SANDBOX_ADDRESS, SANDBOX_SOCKET_DIR
from sandbox.limits import MiB
from sandbox.runtimes import get_runtime
from sandbox.seccomp import LAUNCHER, filter_problem
from sandbox.supervisor import TOKEN_ENV
from tests.sandbox.test_backend_args_mutation_review import LIMITS

docker_backend = pytest.importorskip("sandbox.docker_backend")
pytest.importorskip("docker")

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="a bot's uid is leased from the uid pool, which needs root"
)


class FakeImage:
    id = "sha256:" + "ab" * 32


class FakeImages:
    def get(self, tag: str) -> FakeImage:
        return FakeImage()


class FakeContainer:
    """A container that runs until it is killed."""

    id = "c0ffee" * 10
    name = "kryt-review"

    def __init__(self) -> None:
        self.attrs: dict[str, Any] = {"State": {"Running": True, "Status": "running"}}
        self.removed = False

    def reload(self) -> None:
        pass

    def kill(self) -> None:
        self.attrs["State"] = {"Running": False, "Status": "exited", "ExitCode": 137}

    def remove(self, **options: Any) -> None:
        self.removed = True

    def logs(self, **options: Any) -> bytes:
        return b""


class FakeContainers:
    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []
        self.made: list[FakeContainer] = []

    def run(self, image: str, **kwargs: Any) -> FakeContainer:
        self.runs.append((image, kwargs))
        self.made.append(FakeContainer())
        return self.made[-1]


class FakeClient:
    def __init__(self) -> None:
        self.images = FakeImages()
        self.containers = FakeContainers()


def bot_folder(root: Path, runtime: str, entry: str, source: str) -> Path:
    root.mkdir()
    (root / "bot.toml").write_text(
        f'name = "review"\nversion = "1.0.0"\nruntime = "{runtime}"\nentry = "{entry}"\n'
    )
    (root / entry).write_text(source)
    return root


def started(tmp_path: Path, runtime: str = "python") -> tuple[dict[str, Any], Any]:
    """The keywords a bot's container was created with, and the (stopped) bot."""
    folder = {
        "python": ("bot.py", "print('hi')\n"),
        "java": ("Main.java", "public class Main { public static void main(String[] a) {} }\n"),
    }[runtime]
    client = FakeClient()
    backend = docker_backend.DockerBackend(client=client, base_image="kryt-bot-base:review")
    bot = backend.start(
        bot_folder(tmp_path / runtime, runtime, *folder),
        LIMITS,
        "argsreview",
        trusted=True,
        connect=False,
    )
    try:
        ((_, kwargs),) = client.containers.runs
        return kwargs, bot
    finally:
        bot.stop()
        assert client.containers.made[0].removed


def options(text: str) -> set[str]:
    return set(text.split(","))


def test_a_bots_container_is_isolated_as_documented(tmp_path: Path) -> None:
    kwargs, bot = started(tmp_path)
    assert kwargs["network_mode"] == "none"
    assert kwargs["read_only"] is True
    assert kwargs["cap_drop"] == ["ALL"]
    assert kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["init"] is False
    assert kwargs["ipc_mode"] == "private"
    assert kwargs["hostname"] == BOT_HOSTNAME
    assert kwargs["auto_remove"] is False and kwargs["detach"] is True
    assert kwargs["working_dir"] == "/bot"
    # A uid and a gid of its own, never root's group.
    uid = bot.expected_uid
    assert uid != 0 and kwargs["user"] == f"{uid}:{uid}"
    assert kwargs["volumes"] == {str(bot.sock_dir): {"bind": SANDBOX_SOCKET_DIR, "mode": "rw"}}


def test_a_bots_container_has_its_limits_in_the_engines_units(tmp_path: Path) -> None:
    kwargs, _ = started(tmp_path)
    assert kwargs["pids_limit"] == 9
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == 96 * MiB  # no swap
    assert kwargs["nano_cpus"] == 500_000_000  # 0.5 CPU in billionths
    assert kwargs["shm_size"] == 2 * MiB
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in kwargs["ulimits"]}
    assert ulimits == {"nofile": (77, 77), "core": (0, 0), "fsize": (5 * MiB, 5 * MiB)}
    log_config = kwargs["log_config"]
    assert log_config["Type"] == "json-file"
    assert log_config["Config"] == {"max-size": str(300 * 1024), "max-file": "1"}


def test_the_writable_tmpfs_is_sized_and_dev_pts_is_an_empty_read_only_one(
    tmp_path: Path,
) -> None:
    kwargs, _ = started(tmp_path)
    assert set(kwargs["tmpfs"]) == {"/tmp", "/dev/pts"}
    assert options(kwargs["tmpfs"]["/tmp"]) == {
        "rw",
        "nosuid",
        "nodev",
        "noexec",
        f"size={3 * MiB}",
        "mode=1777",
    }
    assert options(kwargs["tmpfs"]["/dev/pts"]) == {
        "ro",
        "nosuid",
        "nodev",
        "noexec",
        "size=4k",
        "nr_inodes=1",
        "mode=0555",
    }


def test_a_bot_gets_its_own_environment_and_runs_under_the_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRYT_REVIEW_SECRET", "s3cret")
    kwargs, _ = started(tmp_path)
    environment = dict(kwargs["environment"])
    token = environment.pop(TOKEN_ENV)
    assert len(token) == 32 and int(token, 16) >= 0
    assert environment == {
        "KRYT_BOT_ADDRESS": SANDBOX_ADDRESS,
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/tmp",
    }
    if filter_problem() is None:
        assert kwargs["command"][:5] == ["python3", "-I", "-S", "-c", LAUNCHER]


def test_a_java_bot_gets_its_runtimes_floors(tmp_path: Path) -> None:
    """docs: a Java bot gets 512 MiB and 128 pids however low the tournament's limits."""
    java = get_runtime("java")
    kwargs, _ = started(tmp_path, "java")
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == java.min_memory_bytes == 512 * MiB
    assert kwargs["pids_limit"] == java.min_pids == 128


def test_a_builds_engine_limits_are_its_build_limits() -> None:
    """Memory without swap, a quarter of a bot's CPU weight and a quota of its CPUs, in
    microseconds a 100 ms period (``BuildLimits.cpus`` = 1: 100,000)."""
    runtime = get_runtime("cpp")
    build = runtime.build_limits
    assert docker_backend.build_container_limits(runtime) == {
        "memory": build.memory_bytes,
        "memswap": build.memory_bytes,
        "cpushares": 256,
        "cpuperiod": 100_000,
        "cpuquota": round(build.cpus * 100_000),
    }
