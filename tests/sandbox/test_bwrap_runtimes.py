"""Every runtime under bwrap: bots run in their runtime image's file system (issue 14).

A round robin of the Python, JavaScript, Java, C++ and Go example bots under the bwrap
backend, as a real tournament (the Docker one is tests/referee/test_polyglot_tournament.py);
what a non-Python bot sees of the host; the clear errors when a runtime's file system cannot
be made or a submission does not build.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from arena.db import games_of_series, open_database, series_of_tournament, stored_record
from arena.tournament.config import load_config
from arena.tournament.executors import LocalExecutor
from arena.tournament.runner import create, label_prefix, tasks_for
from referee.replay import verify
from sandbox.backend import Backend, runtime_dir, safe_label
from sandbox.errors import SandboxInfrastructureError
from sandbox.limits import SandboxLimits
from sandbox.runtimes import REGISTRY, Runtime, RuntimeBuildError, get_runtime
from sandbox.runtimes.rootfs import artifact_dir
from sandbox.submission import load_submission
from tests.referee.test_polyglot_tournament import PYTHON, STARTERS
from tests.sandbox.conftest import roomy
from tests.services import require

LANGUAGES = {"node": "js", "java": "java", "cpp": "cpp", "go": "go"}


def rootfs_or_skip(name: str) -> Path:
    """The bwrap file system of runtime ``name`` (exported from its image on first use);
    skip, or fail under CI, when it cannot be made (no engine, image not built)."""
    from sandbox.runtimes.rootfs import RootfsError, runtime_rootfs

    try:
        return runtime_rootfs(get_runtime(name))
    except RootfsError as exc:
        require(False, f"the {name} runtime's file system", str(exc))
        raise


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_round_robin_of_five_languages_under_bwrap(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    for name in LANGUAGES:
        rootfs_or_skip(name)
    url = f"sqlite:///{tmp_path / 'k.db'}"
    db = open_database(url)
    bots = [PYTHON / "greedy", *(STARTERS / folder for folder in LANGUAGES.values())]
    config = load_config(
        None,
        bots=[str(b) for b in bots],
        games_per_pair=1,
        backend="bwrap",
        startup_seconds=120.0,  # a compiled bot's first start includes its build
        # Roomy clocks: a JVM's first moves on a busy machine must not be forfeits here.
        move_seconds=10.0,
        bank_seconds=120.0,
    )
    store = tmp_path / "store"
    tournament_id = create(config, db=db, store=store)
    outcomes = LocalExecutor(2).run(
        tasks_for(tournament_id, db=db, store=store), stop=threading.Event()
    )
    assert {o.status for o in outcomes} == {"finished"}, outcomes
    with db.read_session() as session:
        series = series_of_tournament(tournament_id, session=session)
        assert len(series) == 10
        for one in series:
            assert one.id is not None
            (game,) = games_of_series(one.id, session=session)
            assert game.forfeit_seat is None, (game.end_reason, game.forfeit_detail)
            check = verify(stored_record(game))
            assert check.ok, check.problems
    # The compiled bots were built by the bwrap backend (the Docker one stores no artifact).
    for name in ("java", "cpp", "go"):
        sha = load_submission(STARTERS / LANGUAGES[name]).sha256
        assert (artifact_dir(get_runtime(name), sha) / "").is_dir(), name
    prefix = safe_label(label_prefix(url, tournament_id))
    assert [p.name for p in runtime_dir().iterdir() if p.name.startswith(prefix)] == []


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_node_bot_sees_no_host_path_of_ours(bwrap_backend: Backend, tmp_path: Path) -> None:
    """Like the Python mountspy (issue 13.10): the JavaScript starter, wrapped to print its
    mount table first, finds no runtime directory, work directory, label, runner token,
    submission folder or source tree in it; its root is the read-only image copy."""
    from sandbox.runner import current_runner

    rootfs = rootfs_or_skip("node")
    folder = tmp_path / "spy"
    shutil.copytree(STARTERS / "js", folder)
    (folder / "spy.js").write_text(
        'process.stderr.write(require("fs").readFileSync("/proc/self/mountinfo", "utf8"));\n'
        'require("./bot.js");\n'
    )
    manifest = (folder / "bot.toml").read_text()
    (folder / "bot.toml").write_text(manifest.replace('"bot.js"', '"spy.js"'))
    bot = bwrap_backend.start(folder, roomy(), "t14-nodespy")
    try:
        seen = bot.logs()
        assert " /artifact " not in seen  # a starter without package.json is not built
        lines = {line.split(" ")[4]: line for line in seen.splitlines() if line.count(" ") > 8}
        assert {"/", "/bot", "/run/kryt", "/tmp", "/proc"} <= set(lines), seen
        secrets = [
            str(runtime_dir()),
            bot.work_dir.name,
            "t14-nodespy",
            current_runner().token,
            str(folder),
            str(Path(__file__).resolve().parents[2]),
        ]
        assert [s for s in secrets if s in seen] == [], seen
        root = lines["/"].split(" ")
        # The one host path shown: the image copy's place in the cache (no secret of ours).
        assert root[3].endswith(f"/{rootfs.name}") and root[5].split(",")[0] == "ro", lines["/"]
        for point in ("/bot", "/run/kryt"):
            fields = lines[point].split(" ")
            assert fields[3] == "/" and " - tmpfs " in lines[point], lines[point]
        assert lines["/bot"].split(" ")[5].split(",")[0] == "ro"
    finally:
        bot.stop()
    assert not bot.work_dir.exists()


@pytest.mark.timeout(120)
def test_a_runtime_without_its_file_system_is_a_clear_infrastructure_error(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """A runtime whose image was never built: the bot is not blamed, and the error names the
    runtime and the command that builds its image."""
    ghost = Runtime(
        name="ghost",
        language="nothing",
        debs=("kryt-no-such-package",),
        run="exec /bin/false",
        entry_example="bot",
    )
    folder = tmp_path / "ghost"
    folder.mkdir()
    (folder / "bot").write_text("")
    (folder / "bot.toml").write_text(
        'name = "ghost"\nversion = "1"\nruntime = "ghost"\nentry = "bot"\n'
    )
    REGISTRY["ghost"] = ghost
    try:
        with pytest.raises(SandboxInfrastructureError, match="ghost") as caught:
            bwrap_backend.start(folder, SandboxLimits(), "t14-ghost")
    finally:
        del REGISTRY["ghost"]
    message = str(caught.value)
    assert "python -m sandbox.runtimes build ghost" in message or "docker" in message, message
    assert [p for p in runtime_dir().iterdir() if p.name.startswith("t14-ghost")] == []


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_cpp_bot_that_does_not_compile_is_the_bots_fault(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """The build runs under bwrap in the runtime's file system; a compiler error is one
    RuntimeBuildError for the author, ending with the compiler's own words."""
    from sandbox.runner import current_runner

    rootfs_or_skip("cpp")
    folder = tmp_path / "broken"
    shutil.copytree(STARTERS / "cpp", folder)
    (folder / "bot.cc").write_text("int main() { return undeclared_name; }\n")
    with pytest.raises(RuntimeBuildError) as caught:
        bwrap_backend.start(folder, SandboxLimits(), "t14-broken")
    message = str(caught.value)
    assert "did not build" in message and "undeclared_name" in message, message
    ours = f"build-cpp.{current_runner().token}."
    assert [p for p in runtime_dir().iterdir() if p.name.startswith(ours)] == []


def test_python_keeps_the_host_interpreter_path() -> None:
    """The python runtime never uses an image copy under bwrap (its staged runtime stays)."""
    from sandbox.runtimes.rootfs import runtime_rootfs

    with pytest.raises(ValueError, match="host"):
        runtime_rootfs(REGISTRY["python"])


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_the_jvm_memory_floor_holds_under_bwrap(bwrap_backend: Backend) -> None:
    """A tournament's 256 MiB is raised to the JVM's 512 MiB floor for a Java bot, in its
    memory cgroup too, and its address-space rlimit leaves room for the class space."""
    from sandbox.limits import MiB
    from sandbox.local import LocalBot

    rootfs_or_skip("java")
    bot = bwrap_backend.start(STARTERS / "java", roomy(), "t14-jvm")
    try:
        assert isinstance(bot, LocalBot) and bot.cgroup is not None
        assert bot.limits.memory_bytes == 512 * MiB and bot.limits.pids == 128
        memory = dict(bot.cgroup.dirs).get("memory") or dict(bot.cgroup.dirs)["unified"]
        limit_file = memory / "memory.limit_in_bytes"
        if not limit_file.exists():
            limit_file = memory / "memory.max"
        assert int(limit_file.read_text()) == 512 * MiB
        assert bot.alive()
    finally:
        bot.stop()


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_node_bot_over_its_memory_is_killed_by_its_cgroup(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """Memory outside the JavaScript heap (Buffers) is bounded by the bot's cgroup, not by
    node's own heap flag: the bot dies as OOM, and nothing of it stays behind."""
    from sandbox.death import DeathCause
    from sandbox.errors import BotCrashedError

    rootfs_or_skip("node")
    folder = tmp_path / "hog"
    folder.mkdir()
    (folder / "bot.toml").write_text(
        'name = "hog"\nversion = "1"\nruntime = "node"\nentry = "hog.js"\n'
    )
    (folder / "hog.js").write_text(
        "const held = [];\nfor (;;) held.push(Buffer.alloc(16 << 20, 1));\n"
    )
    # Near its limit the kernel may reclaim the bot's own code pages (node's text) over and
    # over before it gives up and kills (7–38 s in one run of six here): the start-up
    # deadline is not what is under test here, so it is generous.
    with pytest.raises(BotCrashedError) as caught:
        bwrap_backend.start(folder, SandboxLimits(startup_timeout=240), "t14-hog")
    assert caught.value.death is not None
    assert caught.value.death.cause is DeathCause.OOM, caught.value.death
    assert [p for p in runtime_dir().iterdir() if p.name.startswith("t14-hog")] == []


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_node_bot_with_a_vendored_package_builds_and_starts_under_bwrap(
    bwrap_backend: Backend, tmp_path: Path
) -> None:
    """``npm ci`` of the bot's lock file runs under bwrap, offline; the bot requires the
    installed package through /bot/node_modules (it cannot start without it)."""
    from sandbox.local import BwrapBackend
    from tests.sandbox.test_runtime_npm import PACKAGE, make_npm_bot

    assert isinstance(bwrap_backend, BwrapBackend)
    rootfs_or_skip("node")
    submission = load_submission(make_npm_bot(tmp_path / "bot", name="npm-bwrap"))
    artifact = bwrap_backend.artifact_for(submission)
    assert (artifact / "node_modules" / PACKAGE / "index.js").is_file()
    bot = bwrap_backend.start(submission, roomy(), "t14-npm")
    try:
        assert bot.alive()
    finally:
        bot.stop()
