"""Mutation review of the reaper (:mod:`sandbox.reaper`), the start-up sweep and the backend
chooser (:mod:`sandbox.chooser`).

What these tests pin down, in order of importance:

1. The reaper and the sweep never touch what is not a dead runner's: another runner's
   directories, dial links, cgroups and containers (a token equal but for its pid start
   time, boot or pid namespace included), labels outside the sweep's prefix, the uid lock
   files and staged runtimes, nothing without a token but the old-style directories.
2. Nothing of a dead runner is left: labels with dots, dial links, tmpfs mounts, every
   cgroup hierarchy, containers; every item is attempted whatever failed before, and each
   failure is reported (``reap``'s errors, the reaper's exit status and stderr, the sweep's
   log) rather than swallowed.
3. Untrusted bots never fall back to the unsandboxed process backend: ``auto`` without
   Docker and bubblewrap gives a process backend that refuses them (and says so loudly),
   an explicit ``bwrap`` or ``docker`` that cannot run is an error, never a fallback.

The tests run in-process on things made under ``tmp_path`` with made-up runner tokens: a
private runtime directory, a fake cgroup layout and a fake Docker client, so that no
mutant of the code under test can reach another runner's real sandboxes on a shared
machine. One subprocess test covers the reaper's launch, restart, fork and ``kill -9``
path, with Docker and cgroups out of its reach.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sandbox.backend import safe_label, sweep_runtime, sweep_socket_dirs
from sandbox.cgroups import CgroupLayout
from sandbox.errors import (
    BackendUnavailableError,
    CleanupError,
    EngineUnavailableError,
)
from sandbox.hostfs import mount_tmpfs, mounts_under
from sandbox.runner import RunnerId, RunnerState, current_runner

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]
RUNNER_KEY = "org.kryt.runner"
LABEL_KEY = "org.kryt.sandbox.label"
MARK_KEY = "org.kryt.sandbox"


# --- tokens -----------------------------------------------------------------------------


def dead_token() -> str:
    """The token of a runner that has certainly exited (a finished child process)."""
    me = current_runner()
    token = RunnerId(pid=_finished_pid(), start=1, boot=me.boot, pidns=me.pidns)
    assert token.state() is RunnerState.DEAD
    return token.token


def _finished_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _other(text: str) -> str:
    """A hex string of ``text``'s length that differs from it."""
    return ("0" if text[0] != "0" else "1") + text[1:]


def variants(token: str) -> dict[str, str]:
    """Tokens that share all but one part with ``token``: none of them is ``token``'s."""
    runner = RunnerId.parse(token)
    assert runner is not None
    return {
        "start": RunnerId(runner.pid, runner.start + 1, runner.boot, runner.pidns).token,
        "pid": RunnerId(runner.pid + 1, runner.start, runner.boot, runner.pidns).token,
        "boot": RunnerId(runner.pid, runner.start, _other(runner.boot), runner.pidns).token,
        "pidns": RunnerId(runner.pid, runner.start, runner.boot, _other(runner.pidns)).token,
    }


def unknown_token() -> str:
    """A live-looking runner of another pid namespace on this boot (never ours to judge)."""
    me = current_runner()
    token = RunnerId(me.pid, me.start, me.boot, _other(me.pidns))
    assert token.state() is RunnerState.UNKNOWN
    return token.token


# --- fixtures: a private runtime directory, a fake cgroup layout, a fake engine ---------


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private runtime directory; any tmpfs left mounted in it is detached at the end."""
    base = tmp_path / "runtime"
    monkeypatch.setenv("KRYT_SANDBOX_RUNTIME_DIR", str(base))
    yield base
    if os.geteuid() == 0:
        for mount in reversed(mounts_under(tmp_path)):
            subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def cgroups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CgroupLayout:
    """A cgroup v1 layout of plain directories (two hierarchies) in place of the host's."""
    import sandbox.cgroups

    parents = (("memory", tmp_path / "cg-memory"), ("pids", tmp_path / "cg-pids"))
    for _, parent in parents:
        parent.mkdir()
    layout = CgroupLayout(1, parents)
    monkeypatch.setattr(sandbox.cgroups, "cgroup_layout", lambda: layout)
    return layout


@dataclass
class FakeContainer:
    """A sandbox container as the engine lists it (sparse: labels only)."""

    id: str
    labels: dict[str, str]
    engine: FakeEngine
    fail: bool = False

    @property
    def attrs(self) -> dict[str, Any]:
        return {"Labels": dict(self.labels)}

    def remove(self, force: bool = False, v: bool = False) -> None:
        from docker.errors import APIError

        assert force
        if self.fail:
            raise APIError(f"removal of {self.id} refused (test)")
        self.engine.containers_by_id.pop(self.id)


@dataclass
class FakeEngine:
    """The part of ``docker.DockerClient`` the reaper and the sweep use."""

    containers_by_id: dict[str, FakeContainer] = field(default_factory=dict)

    @property
    def containers(self) -> FakeEngine:
        return self

    def add(self, name: str, labels: dict[str, str], *, fail: bool = False) -> str:
        self.containers_by_id[name] = FakeContainer(name, {MARK_KEY: "bot", **labels}, self, fail)
        return name

    def list(self, *, all: bool, sparse: bool, filters: dict[str, str]) -> list[FakeContainer]:
        assert all and sparse
        key, has_value, value = filters["label"].partition("=")
        return [
            c
            for c in self.containers_by_id.values()
            if key in c.labels and (not has_value or c.labels[key] == value)
        ]

    def names(self) -> set[str]:
        return set(self.containers_by_id)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    """A fake Docker engine in place of the real one (whose containers are not ours)."""
    import sandbox.docker_backend

    fake = FakeEngine()
    monkeypatch.setattr(sandbox.docker_backend, "docker_client", lambda timeout=30.0: fake)
    return fake


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Docker engine answers."""
    import sandbox.docker_backend

    def refuse(timeout: float = 30.0) -> Any:
        raise EngineUnavailableError("no Docker engine answers: (test)")

    monkeypatch.setattr(sandbox.docker_backend, "docker_client", refuse)


def make_dir(runtime: Path, label: str, token: str | None, *, tmpfs: bool = False) -> Path:
    """A work directory as the backends name it, with a file and maybe a mounted tmpfs."""
    runtime.mkdir(mode=0o711, exist_ok=True)
    name = f"{safe_label(label)}.{token}.q1w2e3" if token else safe_label(label)
    path = runtime / name
    (path / "sock").mkdir(parents=True)
    (path / "bot.log").write_text("log")
    if tmpfs and os.geteuid() == 0:
        mount_tmpfs(path / "sock", size_bytes=65536, inodes=16, uid=0, gid=0)
        (path / "sock" / "bot.sock").write_text("x")
        assert mounts_under(path) == [path / "sock"]
    return path


def make_link(runtime: Path, work_dir_name: str) -> Path:
    """A dial link named like its bot's work directory."""
    dial = runtime / "dial"
    dial.mkdir(mode=0o700, parents=True, exist_ok=True)
    link = dial / work_dir_name
    link.symlink_to(runtime / work_dir_name / "sock" / "bot.sock")
    return link


def make_cgroup(layout: CgroupLayout, name: str) -> list[Path]:
    """A bot cgroup in every hierarchy of ``layout``."""
    dirs = [parent / name for _, parent in layout.parents]
    for directory in dirs:
        directory.mkdir()
    return dirs


def exists(path: Path) -> bool:
    return os.path.lexists(path)


# --- the reaper: reap(token) ------------------------------------------------------------


def test_reap_removes_exactly_its_runners_things(
    runtime: Path, cgroups: CgroupLayout, engine: FakeEngine
) -> None:
    token = dead_token()
    live = current_runner().token
    mine = [
        make_dir(runtime, "match-7", token, tmpfs=True),
        make_dir(runtime, "series.3.game.1", token),  # dots in the label
    ]
    links = [make_link(runtime, mine[0].name)]
    my_cgroups = make_cgroup(cgroups, mine[0].name) + make_cgroup(cgroups, mine[1].name)
    my_containers = {engine.add("c-mine", {LABEL_KEY: "match-7", RUNNER_KEY: token})}
    others: list[Path] = []
    other_containers: set[str] = set()
    for what, other in [("live", live), *variants(token).items()]:
        others.append(make_dir(runtime, f"other-{what}", other))
        others.append(make_link(runtime, others[-1].name))
        others += make_cgroup(cgroups, others[-2].name)
        other_containers.add(engine.add(f"c-{what}", {LABEL_KEY: "x", RUNNER_KEY: other}))
    others.append(make_dir(runtime, f"after-{token}", live))  # its token only in the label
    others.append(make_dir(runtime, "old-style", None))
    others += make_cgroup(cgroups, "not-a-bot")
    (runtime / "uids").mkdir()
    others.append(runtime / "uids")

    from sandbox.reaper import reap

    removed, errors = reap(token)
    assert errors == []
    gone = mine + links + my_cgroups
    assert [p for p in gone if exists(p)] == []
    assert mounts_under(runtime) == []
    assert [p for p in others if not exists(p)] == []
    assert engine.names() == other_containers
    # One per container, directory, link and cgroup (both hierarchies count once).
    assert removed == len(my_containers) + len(mine) + len(links) + 2


def test_reap_without_an_engine_still_removes_directories_and_cgroups(
    runtime: Path, cgroups: CgroupLayout, no_engine: None
) -> None:
    token = dead_token()
    work = make_dir(runtime, "match-1", token)
    group = make_cgroup(cgroups, work.name)
    from sandbox.reaper import reap

    assert reap(token) == (2, [])
    assert not work.exists() and not any(p.exists() for p in group)


def test_reap_attempts_every_item_and_reports_each_failure(
    runtime: Path, cgroups: CgroupLayout, engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sandbox.cgroups
    import sandbox.hostfs

    token = dead_token()
    stuck = make_dir(runtime, "a-stuck", token)
    work = [make_dir(runtime, f"b-{n}", token) for n in range(3)]
    stuck_group = make_cgroup(cgroups, stuck.name)
    groups = [make_cgroup(cgroups, w.name) for w in work]
    engine.add("c-stuck", {RUNNER_KEY: token}, fail=True)
    engine.add("c-fine", {RUNNER_KEY: token})
    real_remove_tree = sandbox.hostfs.remove_tree
    real_cgroup_remove = sandbox.cgroups.BotCgroup.remove

    def remove_tree(path: Path) -> None:
        if path == stuck:
            raise CleanupError(f"could not remove {str(path)!r}: busy (test)")
        real_remove_tree(path)

    def cgroup_remove(self: sandbox.cgroups.BotCgroup, timeout: float = 10.0) -> None:
        if self.name == stuck.name:
            raise CleanupError(f"processes of cgroup {self.name!r} survived SIGKILL (test)")
        real_cgroup_remove(self, timeout)

    monkeypatch.setattr(sandbox.hostfs, "remove_tree", remove_tree)
    monkeypatch.setattr(sandbox.cgroups.BotCgroup, "remove", cgroup_remove)
    from sandbox.reaper import reap

    removed, errors = reap(token)
    assert removed == 1 + 3 + 3  # the fine container, directories and cgroups
    assert len(errors) == 3, errors
    assert any("c-stuck" in e for e in errors)
    assert any(str(stuck) in e and "busy (test)" in e for e in errors)
    assert any(stuck.name in e and "survived SIGKILL" in e for e in errors)
    assert not any(w.exists() for w in work)
    assert not any(p.exists() for g in groups for p in g)
    assert stuck.exists() and all(p.exists() for p in stuck_group)
    assert engine.names() == {"c-stuck"}


def test_reap_reports_an_unusable_runtime_directory_and_still_removes_cgroups(
    tmp_path: Path, cgroups: CgroupLayout, no_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = dead_token()
    not_a_dir = tmp_path / "runtime-file"
    not_a_dir.write_text("")
    monkeypatch.setenv("KRYT_SANDBOX_RUNTIME_DIR", str(not_a_dir))
    group = make_cgroup(cgroups, f"match.{token}.abc")
    from sandbox.reaper import reap

    removed, errors = reap(token)
    assert removed == 1 and not any(p.exists() for p in group)
    assert len(errors) == 1 and "cannot list the runtime directory" in errors[0]


def test_reap_without_the_docker_package_still_removes_directories(
    runtime: Path, cgroups: CgroupLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base install has no ``docker`` package: the reaper still removes the dead
    runner's directories (it once crashed importing ``docker.errors`` before asking for a
    client, which turns a missing package into "no engine")."""
    token = dead_token()
    work = make_dir(runtime, "match-1", token)
    monkeypatch.setitem(sys.modules, "docker", None)
    monkeypatch.setitem(sys.modules, "docker.errors", None)
    from sandbox.reaper import reap

    assert reap(token) == (1, [])
    assert not work.exists()


def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """``sandbox.reaper.main`` with an already closed stdin (its runner is gone).

    ``main`` ignores SIGINT for the rest of the reaper's life; here that must end with the
    call, or this test worker (and every process it starts later, since an ignored signal is
    inherited) would ignore Ctrl-C and the suite's Ctrl-C tests fail."""
    from sandbox.reaper import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"ignored\n")))
    before = signal.getsignal(signal.SIGINT)
    try:
        return main(argv)
    finally:
        signal.signal(signal.SIGINT, before)


def test_reaper_main_exit_status_and_messages(
    runtime: Path,
    cgroups: CgroupLayout,
    no_engine: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sandbox.hostfs

    token = dead_token()
    work = make_dir(runtime, "match-1", token)
    assert run_main(["reaper"], monkeypatch) == 2
    assert run_main(["reaper", token, "extra"], monkeypatch) == 2
    assert work.exists()  # a usage error reaps nothing
    assert "usage: python -m sandbox.reaper <runner token>" in capsys.readouterr().err
    assert run_main(["reaper", token], monkeypatch) == 0
    assert not work.exists() and capsys.readouterr().err == ""

    stuck = make_dir(runtime, "match-2", token)

    def refuse(path: Path) -> None:
        raise CleanupError(f"could not remove {str(path)!r}: busy (test)")

    monkeypatch.setattr(sandbox.hostfs, "remove_tree", refuse)
    assert run_main(["reaper", token], monkeypatch) == 1
    assert f"kryt sandbox reaper: could not remove {str(stuck)!r}: busy (test)" in (
        capsys.readouterr().err
    )


REAPED_RUNNER = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from sandbox.backend import make_work_dir
    from sandbox.reaper import reaper_pid, start_reaper

    def running(pid):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] not in "ZX"
        except OSError:
            return False

    first = start_reaper()
    again = start_reaper()
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while running(first) and time.monotonic() < deadline:
        time.sleep(0.02)
    third = start_reaper()
    work = make_work_dir("review.live")
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    print(json.dumps({"first": first, "again": again, "third": third,
                      "reported": reaper_pid(), "work": str(work), "child": child}), flush=True)
    time.sleep(600)
    """
)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (OSError, IndexError):
        return False


def _ignores_sigint(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def _wait(condition: Callable[[], bool], seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_reaper_restarts_ignores_sigint_outlives_forks_and_reaps_after_kill_9(
    runtime: Path, tmp_path: Path
) -> None:
    """A runner starts its reaper once, again once it died; a forked child does not keep
    the reaper waiting, Ctrl-C does not stop it, and ``kill -9`` of the runner removes the
    runner's directory but not another runner's."""
    runtime.mkdir(mode=0o711)
    bystander = make_dir(runtime, "review.other", current_runner().token)
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        KRYT_SANDBOX_RUNTIME_DIR=str(runtime),
        # Neither the host's containers nor its cgroups are the reaper's to see here.
        DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock",
        KRYT_SANDBOX_CGROUP=str(tmp_path / "no-cgroup"),
    )
    runner = subprocess.Popen(
        [sys.executable, "-c", REAPED_RUNNER],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    made: dict[str, Any] = {}
    try:
        assert runner.stdout is not None
        line = runner.stdout.readline()
        assert line, f"the runner failed (exit {runner.poll()})"
        made = json.loads(line)
        assert made["again"] == made["first"]  # started once
        assert made["third"] != made["first"]  # and again when it died
        assert made["reported"] == made["third"]
        reaper, work = made["third"], Path(made["work"])
        time.sleep(0.5)
        assert _running(reaper) and work.exists()  # the runner lives: nothing reaped
        # Ctrl-C of a terminal reaches the whole foreground group; the reaper ignores it.
        assert _wait(lambda: _ignores_sigint(reaper)), "the reaper does not ignore SIGINT"
        os.kill(reaper, signal.SIGINT)
        time.sleep(0.5)
        assert _running(reaper) and work.exists()
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=60)
        assert _wait(lambda: not work.exists()), "the reaper did not remove the work dir"
        assert _running(made["child"])  # the fork still runs; the reaper did not wait for it
        assert _wait(lambda: not _running(reaper)), "the reaper did not exit"
        assert bystander.exists()
        log = runtime / "reaper.log"
        assert not log.exists() or log.read_text() == ""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(runner.pid, signal.SIGKILL)  # the runner and its forked child
        runner.wait(timeout=60)
        for key in ("first", "third", "child"):
            if made.get(key) and _running(made[key]):
                os.kill(made[key], signal.SIGKILL)


# --- the sweep --------------------------------------------------------------------------


@dataclass
class Scene:
    """A runtime directory and cgroups holding dead and live runners' things."""

    dead: list[Path]
    kept: list[Path]


def sweep_scene(runtime: Path, cgroups: CgroupLayout, prefix: str) -> Scene:
    token, live, unknown = dead_token(), current_runner().token, unknown_token()
    dead = [
        make_dir(runtime, f"{prefix}a", token, tmpfs=True),
        make_dir(runtime, f"{prefix}b.with.dots", token),
        make_dir(runtime, f"{prefix}c", variants(live)["boot"]),  # a runner of an ended boot
        make_dir(runtime, f"{prefix}old-style", None),  # no token: swept by prefix
        runtime / ".probe-abc123",
    ]
    (runtime / ".probe-abc123").mkdir()
    dead.append(make_link(runtime, dead[0].name))
    dead += make_cgroup(cgroups, dead[0].name)
    dead += make_cgroup(cgroups, dead[1].name)  # dots in the label
    kept = [
        make_dir(runtime, f"{prefix}live", live),
        make_dir(runtime, f"{prefix}unknown", unknown),
        make_dir(runtime, "elsewhere-a", token),  # another prefix
        runtime / "uids",
        runtime / ".lib-0123456789abcdef",
        runtime / ".libfs-python",
    ]
    for path in kept[3:]:
        path.mkdir()
    dotted = make_dir(runtime, f"{prefix}live.with.dots", live)  # not an old-style one
    kept.append(dotted)
    kept.append(make_link(runtime, kept[0].name))
    kept.append(make_link(runtime, kept[1].name))
    kept += make_cgroup(cgroups, kept[0].name)
    kept += make_cgroup(cgroups, kept[1].name)
    kept += make_cgroup(cgroups, dotted.name)
    kept += make_cgroup(cgroups, "not-a-bot")
    return Scene(dead, kept)


def check(scene: Scene, runtime: Path) -> None:
    assert [p for p in scene.dead if exists(p)] == []
    assert [p for p in scene.kept if not exists(p)] == []
    assert mounts_under(runtime) == []


def test_sweep_removes_dead_runners_leftovers_only(runtime: Path, cgroups: CgroupLayout) -> None:
    scene = sweep_scene(runtime, cgroups, "rv-")
    removed, errors = sweep_runtime("rv-")
    assert errors == []
    check(scene, runtime)
    # Four directories, one dial link, two cgroups (the probe directory is not counted).
    assert removed == 7


def test_sweep_without_a_prefix_spares_live_links_uid_locks_and_runtimes(
    runtime: Path, cgroups: CgroupLayout
) -> None:
    scene = sweep_scene(runtime, cgroups, "")
    scene.dead.append(scene.kept.pop(2))  # "elsewhere-a" is a dead runner's: no prefix now
    removed, errors = sweep_runtime("")
    assert errors == []
    check(scene, runtime)
    assert (runtime / "dial").is_dir()
    assert removed == 8


def test_sweep_leaves_dead_runners_cgroups_under_another_prefix(
    runtime: Path, cgroups: CgroupLayout
) -> None:
    """A sweep is bounded by its prefix for cgroups as for directories: another arena's
    leftovers on the same host are that arena's to sweep."""
    token = dead_token()
    mine = make_cgroup(cgroups, f"rv-a.{token}.q1w2e3")
    other = make_cgroup(cgroups, f"elsewhere-a.{token}.q1w2e3")
    assert sweep_runtime("rv-") == (1, [])
    assert [p for p in mine if exists(p)] == []
    assert [p for p in other if not exists(p)] == []
    assert sweep_runtime("") == (1, [])
    assert [p for p in other if exists(p)] == []


def test_sweep_prefix_is_reduced_as_labels_are(runtime: Path, cgroups: CgroupLayout) -> None:
    token = dead_token()
    dead = make_dir(runtime, "my match/1", token)  # named "my-match-1.<token>.…"
    kept = make_dir(runtime, "other-match", token)
    assert sweep_runtime("my match/") == (1, [])
    assert not dead.exists() and kept.exists()


def test_a_failing_sweep_goes_on_and_logs_each_failure(
    runtime: Path,
    cgroups: CgroupLayout,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import sandbox.backend
    import sandbox.hostfs

    token = dead_token()
    stuck = make_dir(runtime, "rv-a", token)
    work = [make_dir(runtime, f"rv-b{n}", token) for n in range(3)]
    real_remove_tree = sandbox.hostfs.remove_tree

    def remove_tree(path: Path) -> None:
        if path == stuck:
            raise CleanupError(f"could not remove {str(path)!r}: busy (test)")
        real_remove_tree(path)

    monkeypatch.setattr(sandbox.backend, "remove_tree", remove_tree)
    removed, errors = sweep_runtime("rv-")
    assert removed == 3 and not any(w.exists() for w in work)
    assert len(errors) == 1 and "busy (test)" in errors[0] and str(stuck) in errors[0]
    with caplog.at_level(logging.WARNING, logger="sandbox"):
        assert sweep_socket_dirs("rv-") == 0
    assert any(
        "sandbox sweep:" in r.getMessage() and "busy (test)" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    )


def test_chooser_sweep_without_an_engine_sweeps_the_directories(
    runtime: Path, cgroups: CgroupLayout, no_engine: None
) -> None:
    from sandbox.chooser import sweep_leftovers

    scene = sweep_scene(runtime, cgroups, "rv-")
    assert sweep_leftovers("rv-") == 7
    check(scene, runtime)


def test_chooser_sweep_removes_dead_runners_containers_only(
    runtime: Path, cgroups: CgroupLayout, engine: FakeEngine
) -> None:
    from sandbox.chooser import sweep_leftovers

    token, live = dead_token(), current_runner().token
    engine.add("dead", {LABEL_KEY: "rv-1", RUNNER_KEY: token})
    engine.add("old-style", {LABEL_KEY: "rv-2"})  # no token: swept by prefix
    kept = {
        engine.add("live", {LABEL_KEY: "rv-3", RUNNER_KEY: live}),
        engine.add("unknown", {LABEL_KEY: "rv-4", RUNNER_KEY: unknown_token()}),
        engine.add("unreadable", {LABEL_KEY: "rv-5", RUNNER_KEY: "not-a-token"}),
        engine.add("elsewhere", {LABEL_KEY: "other-1", RUNNER_KEY: token}),
        engine.add("unlabelled", {RUNNER_KEY: token}),
    }
    scene = sweep_scene(runtime, cgroups, "rv-")
    assert sweep_leftovers("rv-") == 2 + 7
    assert engine.names() == kept
    check(scene, runtime)


# --- the chooser ------------------------------------------------------------------------


@pytest.fixture
def nothing_isolates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither a Docker engine nor ``bwrap``/``prlimit`` on PATH."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_auto_without_isolation_falls_back_to_a_process_backend_refusing_untrusted_bots(
    nothing_isolates: None, caplog: pytest.LogCaptureFixture
) -> None:
    from sandbox.chooser import choose_backend

    with caplog.at_level(logging.INFO, logger="sandbox"):
        backend = choose_backend("auto", allow_unsafe=False)
    assert backend.name == "process" and not backend.isolates
    assert backend.untrusted_problem() is not None
    assert "trusted bots only" in backend.reason
    assert "skipped docker: no Docker engine answers" in backend.reason
    assert "; bwrap: bwrap backend needs `bwrap` and `prlimit` on PATH" in backend.reason
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(m.startswith("sandbox backend process: ") for m in warnings), warnings


def test_explicit_bwrap_that_cannot_run_is_an_error_not_a_fallback(
    nothing_isolates: None,
) -> None:
    from sandbox.chooser import choose_backend

    with pytest.raises(BackendUnavailableError, match="bwrap backend needs `bwrap`"):
        choose_backend("bwrap", allow_unsafe=False)
    with pytest.raises(EngineUnavailableError, match="no Docker engine answers"):
        choose_backend("docker", allow_unsafe=True)


def test_a_backend_that_will_refuse_untrusted_bots_says_so_in_its_reason(
    engine: FakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandbox.chooser import choose_backend
    from sandbox.docker_backend import DockerBackend
    from sandbox.local import BwrapBackend

    monkeypatch.setattr(DockerBackend, "untrusted_problem", lambda self: "no tmpfs (test)")
    monkeypatch.setattr(BwrapBackend, "untrusted_problem", lambda self: "no cgroup (test)")
    docker = choose_backend("docker")
    assert docker.name == "docker"
    assert docker.reason.endswith("; UNTRUSTED BOTS REFUSED: no tmpfs (test)")
    try:
        bwrap = choose_backend("bwrap")
    except BackendUnavailableError as exc:
        from tests.services import require

        require(False, "bubblewrap", str(exc))
    assert bwrap.reason.endswith("; UNTRUSTED BOTS REFUSED: no cgroup (test)")


@pytest.mark.parametrize("preference", ["none", "Docker", "", "auto "])
def test_an_unknown_preference_names_the_choices(preference: str) -> None:
    from sandbox.chooser import check_preference, choose_backend

    message = re.escape(f"unknown sandbox backend {preference!r}; choose one of ")
    with pytest.raises(ValueError, match=message) as caught:
        choose_backend(preference)
    assert all(repr(name) in str(caught.value) for name in ("auto", "docker", "bwrap", "process"))
    with pytest.raises(ValueError, match=message):
        check_preference(preference)
